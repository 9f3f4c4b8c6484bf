"""Channel summaries: what fell out of a channel's history window, folded into a short note.

- `store.py`   `SummaryStore`: a channel's summary and the messages it covers, and the drops
               a deleted message or a forgotten member makes
- `folding.py` the summarizing request: the summary so far and what fell out, to a model
- `writer.py`  `Summaries`: the background folds (one per channel at a time) and their owner,
               and the note a turn is shown

Nothing here knows Discord: the cog and the console say what fell out (`Said`).
"""

from tomori.summary.store import Said, Summary, SummaryStore
from tomori.summary.writer import Summaries

__all__ = ["Said", "Summaries", "Summary", "SummaryStore"]
