"""Tests of tomori.locks: the lock rules, the registry, and processes that leave."""
