-- Regenerate and swipe (issue 36): the bot's (or a persona's) last answer in a channel keeps
-- its takes, so a press of its buttons works from any process and after a restart.
-- One row per answer that has takes: which messages show the take on display now, which take
-- that is, and whether its buttons still work (open), a new take is being written (making),
-- or the channel went on and the takes are kept as shown (frozen).
CREATE TABLE answer_takes (
    answer_id   TEXT PRIMARY KEY,    -- the answer's first message as first posted: its buttons name it
    channel_id  TEXT NOT NULL,
    guild_id    TEXT,
    trigger_id  TEXT NOT NULL,       -- the message it answers: a new take reads up to it
    asker_id    TEXT NOT NULL,       -- whose quota a new take counts against
    persona     TEXT,                -- the persona's name key; NULL: the bot
    messages    TEXT NOT NULL,       -- JSON list of the message IDs that show the take now
    shown       INTEGER NOT NULL,    -- the take on display, from 0
    state       TEXT NOT NULL,       -- open, making, frozen
    updated_at  REAL NOT NULL  -- the database's clock, seconds since the epoch
);
CREATE INDEX answer_takes_by_channel ON answer_takes (channel_id, state);
CREATE INDEX answer_takes_by_time ON answer_takes (updated_at);

-- Each take of an answer: its text as its messages show it, and the tokens it used (which also
-- count, as every turn's do, in token_usage against the asker's day). A frozen answer's texts
-- are cleared: nothing shows them again.
CREATE TABLE answer_take_texts (
    answer_id     TEXT NOT NULL,
    number        INTEGER NOT NULL,  -- from 0, in the order made
    parts         TEXT NOT NULL,     -- JSON list: the text of each message
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    made_at       REAL NOT NULL,
    PRIMARY KEY (answer_id, number)
);

-- /tomori swipes: whether a server's answers carry Regenerate and ◀ ▶ (1) or not (0);
-- NULL: on.
ALTER TABLE server_settings ADD COLUMN swipes INTEGER;
