"""Full-text search of memories, in each engine's own words: SQLite's FTS5 table beside the
rows (`memories_fts`, its rowid the memory's id), PostgreSQL's generated `tsvector` column
with its GIN index. A query is the words of a message, any of which may match: never the
message's text as a query language (a member's `"` or `NEAR(` is a word like another).
"""

from __future__ import annotations

import re

MAX_TERMS = 24
WORD = re.compile(r"\w{3,}")
"""A word worth searching for: three letters or more (shorter ones match nearly anything)."""


def terms(text: str) -> tuple[str, ...]:
    """The distinct words of `text` a search looks for, in order, at most `MAX_TERMS`."""
    found: dict[str, None] = {}
    for word in WORD.findall(text.lower()):
        found.setdefault(word.replace("_", ""), None)
    return tuple(word for word in found if word)[:MAX_TERMS]


def matching(engine: str, words: tuple[str, ...], visible: str) -> tuple[str, tuple[str, ...]]:
    """A query for the ids of the memories `visible` (a condition on `memories m`) that match
    any of `words`, best first; and the parameters it takes before `visible`'s."""
    if engine == "postgres":
        query = " | ".join(words)
        return (
            "SELECT m.memory_id FROM memories m WHERE m.search @@ to_tsquery('simple', ?)"
            f" AND {visible} ORDER BY ts_rank(m.search, to_tsquery('simple', ?)) DESC,"
            " m.memory_id DESC LIMIT ?",
            (query,),
        )
    expression = " OR ".join(f'"{word}"' for word in words)
    return (
        "SELECT m.memory_id FROM memories_fts f JOIN memories m ON m.memory_id = f.rowid"
        f" WHERE memories_fts MATCH ? AND {visible} ORDER BY f.rank, m.memory_id DESC LIMIT ?",
        (expression,),
    )


def ranked_again(engine: str, words: tuple[str, ...]) -> tuple[str, ...]:
    """The parameters the ranking takes after `visible`'s (PostgreSQL ranks by the query)."""
    return (" | ".join(words),) if engine == "postgres" else ()
