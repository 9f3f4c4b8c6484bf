-- A user's daily tokens are counted per server: each turn's usage names the server it was in
-- (token_usage.guild_id, from 0006: NULL in rows written before it, which no quota counts;
-- "dm" for direct messages).
CREATE INDEX token_usage_by_guild_requester ON token_usage (guild_id, requester_id, recorded_at);

-- One row per user per server that met a limit: when their last message was admitted (the
-- start of their cooldown window), which message that was (the same message delivered to
-- another process is not refused), and when each kind of notice was last posted to them.
CREATE TABLE user_limits (
    guild_id            TEXT NOT NULL,
    user_id             TEXT NOT NULL,
    admitted_at         REAL,          -- the database's clock, seconds since the epoch
    admitted_message    TEXT,
    cooldown_noticed_at REAL,
    quota_noticed_at    REAL,
    PRIMARY KEY (guild_id, user_id)
);
