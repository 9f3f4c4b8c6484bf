"""Tests of tomori.providers: the OpenAI-compatible and Gemini streams, on the real SDKs."""
