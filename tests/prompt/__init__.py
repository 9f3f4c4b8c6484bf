"""Tests of tomori.prompt: what the model is sent, in what order."""
