-- Processes that serve channels. A lock whose owner is no longer alive is recovered.
CREATE TABLE instances (
    instance_id   TEXT PRIMARY KEY,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    process_token TEXT NOT NULL,   -- pid plus process start time where the OS tells it
    started_at    REAL NOT NULL,
    heartbeat_at  REAL NOT NULL
);

-- One row per busy channel: the turn that holds it.
CREATE TABLE channel_locks (
    channel_id         TEXT PRIMARY KEY,
    owner              TEXT NOT NULL,   -- instances.instance_id
    turn_id            TEXT NOT NULL,
    trigger_message_id TEXT,
    requester_id       TEXT,
    locked_at          REAL NOT NULL,   -- turn start, never moved
    last_progress_at   REAL NOT NULL,
    watchdogs          INTEGER NOT NULL DEFAULT 0
);

-- Triggers waiting for a busy channel, in arrival order, with what is needed to replay them.
CREATE TABLE queued_triggers (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    channel_id   TEXT NOT NULL,
    message_id   TEXT,
    requester_id TEXT,
    payload      TEXT NOT NULL,   -- JSON
    received_at  REAL NOT NULL
);

CREATE INDEX queued_triggers_by_channel ON queued_triggers (channel_id, id);
