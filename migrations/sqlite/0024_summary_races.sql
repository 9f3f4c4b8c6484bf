-- Channel summaries that race a forget (issue 37): a fold reads what fell out of a window,
-- asks a model, then writes; a delete or a member's /memory forget-all may land in between.
-- Its write (tomori.summary.store) keeps nothing when either did.

-- Each channel's deletes: a delete counts here in the transaction that drops the summaries
-- covering it, and a fold keeps its summary only if the count is what it was when it began.
CREATE TABLE summary_changes (
    channel_id  TEXT PRIMARY KEY,
    changes     INTEGER NOT NULL,
    changed_at  REAL NOT NULL   -- swept with the summaries (no fold runs that long)
);

-- The members who asked to be forgotten (/memory forget-all): no summary takes in a message of
-- theirs again, though Discord still holds it.
CREATE TABLE summary_forgotten (
    member_id  TEXT PRIMARY KEY,
    since      REAL NOT NULL
);
