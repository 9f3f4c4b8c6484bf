"""Channel summaries: what fell out of a channel's history window, folded into a short note.

- `store.py`   `SummaryStore`: a channel's summary and the messages it covers, and the drops
               a deleted message or a forgotten member makes
- `folding.py` the summarizing request: the summary so far and what fell out, to a model
- `model.py`   which model writes them (`TOMORI_SUMMARY_MODEL`, else the chain's first)

The background folds and the note a turn is shown are the turn's (`tomori.turns.summaries`).
Nothing here knows Discord: the cog and the console say what fell out (`Said`).
"""

from tomori.summary.store import Said, Summary, SummaryStore

__all__ = ["Said", "Summary", "SummaryStore"]
