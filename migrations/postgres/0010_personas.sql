-- Personas: characters an admin adds to a server with /tomori persona, each answering under its
-- own name and avatar through a webhook the bot creates in the channel.
CREATE TABLE personas (
    guild_id    TEXT NOT NULL,
    name_key    TEXT NOT NULL,       -- the name casefolded: unique per server, case-insensitive
    name        TEXT NOT NULL,       -- as the admin wrote it, and as the channel shows it
    prompt      TEXT NOT NULL,
    avatar_url  TEXT,
    triggers    TEXT NOT NULL,       -- comma separated words; empty: the name alone
    models      TEXT,                -- a model chain as TOMORI_MODELS writes one; NULL: the channel's
    updated_at  DOUBLE PRECISION NOT NULL, -- the database's clock, seconds since the epoch
    PRIMARY KEY (guild_id, name_key)
);

-- Which persona posted which message: a reply to it is answered by that persona, after a
-- restart and from any process, and the history shows the model who said what.
CREATE TABLE persona_messages (
    message_id  TEXT PRIMARY KEY,
    channel_id  TEXT NOT NULL,
    guild_id    TEXT NOT NULL,
    name_key    TEXT NOT NULL,
    posted_at   DOUBLE PRECISION NOT NULL
);
CREATE INDEX persona_messages_by_time ON persona_messages (posted_at);

-- The webhook the bot created in each channel for its personas, so a restart or another process
-- reuses it (a channel holds at most 15 webhooks).
CREATE TABLE channel_webhooks (
    channel_id  TEXT PRIMARY KEY,
    webhook_id  TEXT NOT NULL,
    token       TEXT NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL
);
