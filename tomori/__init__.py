"""tomori-cog: an LLM chat for Discord bots that never hangs.

`tomori/` is the core and imports no Discord library; the cog in `cogs/` adapts nextcord or
discord.py to it.
"""
