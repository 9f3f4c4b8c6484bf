-- "Why no answer?": the steps of each message's way (refused by a limit, queued, dropped for
-- age, each model tried and how it ended, what was delivered), kept a day so any process can
-- tell them (tomori.monitoring.why_book). Never a message's text, a prompt or a key.
CREATE TABLE message_fates (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id  TEXT NOT NULL,
    channel_id  TEXT NOT NULL,
    asker_id    TEXT,            -- whom the message counts as (a proxy's member)
    fate        TEXT NOT NULL,   -- tomori.monitoring.why.Fate
    subject     TEXT NOT NULL,   -- a model's label, or a limit
    outcome     TEXT NOT NULL,   -- how a model's part ended, who stopped it
    until_at    REAL,            -- when a limit lifts, seconds since the epoch
    count       INTEGER NOT NULL,
    recorded_at REAL NOT NULL    -- the database's clock, seconds since the epoch
);
CREATE INDEX message_fates_by_message ON message_fates (message_id);
CREATE INDEX message_fates_by_time ON message_fates (recorded_at);
