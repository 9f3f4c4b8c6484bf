"""The cog each library needs, and the commands both serve, declared from
`tomori.commands.table` (a test fails if either registers anything else).

- `nextcord_cog.py`  the cog class for nextcord (imported only for nextcord bots)
- `discordpy_cog.py` the cog class for discord.py (imported only for discord.py bots)
- `discordpy_translator.py` discord.py's translator on the bot's tree: the commands'
                     localizations, the bot's own translator kept for its own commands
- `shared.py`        what both share: the cog's surface, the /kill and /scene replies within 3 s
- `listeners.py`     the gateway events both listen to, written once
- `admin.py`         /tomori: a subcommand's action built from its options, and answered
- `respond.py`       /respond: a manual turn queued, and said so at once
- `why.py`           "Why no answer?": a message's account, for its sender or a moderator
- `memory.py`        /memory: a member's own memories, answered ephemerally (export as a file)
"""

__all__: list[str] = []
