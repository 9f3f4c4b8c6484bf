"""Tests of tomori.console: bot.py --console and --check, and the terminal's input."""
