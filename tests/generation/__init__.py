"""Tests of tomori.generation: a turn, its passes and its tool loop."""
