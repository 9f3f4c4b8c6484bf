"""Tests of tomori.store: SQLite and PostgreSQL, their migrations, rights and faults."""
