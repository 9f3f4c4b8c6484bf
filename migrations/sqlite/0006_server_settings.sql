-- What the people who run a server set with /tomori: for the whole server, and per channel.
-- A NULL value is not set here: the next scope out applies (channel, then server, then the
-- bot's environment).
CREATE TABLE server_settings (
    guild_id      TEXT PRIMARY KEY,
    models        TEXT,              -- a model chain, as TOMORI_MODELS writes one
    system_prompt TEXT,
    cooldown_ms   INTEGER,           -- the least time between one user's turns; 0 off
    daily_tokens  INTEGER,           -- the most tokens one user may use per UTC day; 0 off
    updated_at    REAL NOT NULL      -- the database's clock, seconds since the epoch
);
CREATE TABLE channel_settings (
    channel_id    TEXT PRIMARY KEY,
    guild_id      TEXT NOT NULL,
    models        TEXT,
    system_prompt TEXT,
    autoreply     INTEGER,           -- 1: answer every message, 0: only when addressed
    updated_at    REAL NOT NULL
);
CREATE INDEX channel_settings_by_guild ON channel_settings (guild_id);

-- The server a turn's tokens were used in, for /tomori status and the daily quota (NULL
-- before this migration; "dm" in direct messages).
ALTER TABLE token_usage ADD COLUMN guild_id TEXT;
CREATE INDEX token_usage_by_guild ON token_usage (guild_id, recorded_at);

-- How each model's part in each turn ended, for /tomori status: one row per model tried, or
-- one without a model for a turn stopped or failed before any model was asked. Kept two
-- days (status shows one).
CREATE TABLE turn_outcomes (
    guild_id    TEXT,
    channel_id  TEXT NOT NULL,
    model       TEXT,                -- provider:model; NULL: no model was asked
    outcome     TEXT NOT NULL,       -- completed, timeout, error, empty_response, stopped_by_user
    phase       TEXT,                -- a timeout's: first_token or idle
    fallback    INTEGER NOT NULL,    -- 1: it answered after an earlier model failed
    recorded_at REAL NOT NULL
);
CREATE INDEX turn_outcomes_by_guild ON turn_outcomes (guild_id, recorded_at);
CREATE INDEX turn_outcomes_by_time ON turn_outcomes (recorded_at);
