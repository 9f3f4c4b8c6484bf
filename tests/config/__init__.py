"""Tests of tomori.config: the settings, the model chain, TOMORI_DB_URL."""
