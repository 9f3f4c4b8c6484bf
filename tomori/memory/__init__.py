"""Memories: what the model chose to remember, kept in scopes the store's queries enforce.

- `scopes.py`  `Scope` and `Place`: where a turn is, and whose memory a save there makes
- `search.py`  the full-text search each engine does (SQLite's FTS5, PostgreSQL's tsvector)
- `store.py`   `MemoryStore`: save within bounds, recall for a place, list, export and forget
- `tools.py`   the `remember` and `forget` tools one turn's speaker is offered, bound to its place
- `note.py`    the request-only note a turn's model is shown its memories in

Nothing here knows Discord: the cog and the console give a `Place`.
"""

from tomori.memory.scopes import Place, Scope
from tomori.memory.store import Memory, MemoryRefused, MemoryStore

__all__ = ["Memory", "MemoryRefused", "MemoryStore", "Place", "Scope"]
