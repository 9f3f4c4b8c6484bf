"""Tests of tomori_cog: the extension in a bot of each Discord library, as users meet it."""
