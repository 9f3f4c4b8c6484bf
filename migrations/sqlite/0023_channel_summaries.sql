-- Channel summaries (issue 37): what fell out of a channel's history window, folded by a model
-- into a short rolling summary the next turns are shown before the history
-- (tomori.summary). One per channel (a thread has its own), keyed by its server too, so no
-- read of one server's channel finds another's.
CREATE TABLE channel_summaries (
    guild_id    TEXT NOT NULL,   -- the server; '' for a direct message
    channel_id  TEXT NOT NULL,
    text        TEXT NOT NULL,
    through_id  TEXT NOT NULL,   -- the newest message folded in; the next fold reads after it
    updated_at  REAL NOT NULL,
    PRIMARY KEY (guild_id, channel_id)
);

-- The messages a summary covers, and who wrote each: a deleted message, or a member's
-- /memory forget-all, drops every summary that covered one of theirs (in the transaction
-- that forgets their memories); the next fold builds it again from what is left.
CREATE TABLE summary_sources (
    guild_id    TEXT NOT NULL,
    channel_id  TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    author_id   TEXT NOT NULL,
    PRIMARY KEY (guild_id, channel_id, message_id)
);
CREATE INDEX summary_sources_by_message ON summary_sources (message_id);
CREATE INDEX summary_sources_by_author ON summary_sources (author_id);
