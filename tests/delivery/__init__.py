"""Tests of tomori.delivery: what a channel shows of an answer, however it streams."""
