"""Whole processes: bot.py run as users run it, alone, as shards, or several on one database."""
