-- Processes that serve channels. A lock whose owner is no longer alive is recovered.
-- Times are seconds since the epoch on the database server's clock.
CREATE TABLE instances (
    instance_id   TEXT PRIMARY KEY,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    process_token TEXT NOT NULL,   -- pid plus process start time where the OS tells it
    started_at    DOUBLE PRECISION NOT NULL,
    heartbeat_at  DOUBLE PRECISION NOT NULL
);

-- One row per busy channel: the turn that holds it.
CREATE TABLE channel_locks (
    channel_id         TEXT PRIMARY KEY,
    owner              TEXT NOT NULL,   -- instances.instance_id
    turn_id            TEXT NOT NULL,
    trigger_message_id TEXT,
    requester_id       TEXT,
    locked_at          DOUBLE PRECISION NOT NULL,   -- turn start, never moved
    last_progress_at   DOUBLE PRECISION NOT NULL,
    watchdogs          INTEGER NOT NULL DEFAULT 0
);

-- Triggers waiting for a busy channel, in arrival order, with what is needed to replay them.
-- Enqueueing for one channel is serialised by its advisory lock, so id order is arrival order.
CREATE TABLE queued_triggers (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id   TEXT NOT NULL,
    message_id   TEXT,
    requester_id TEXT,
    payload      TEXT NOT NULL,   -- JSON
    received_at  DOUBLE PRECISION NOT NULL
);

CREATE INDEX queued_triggers_by_channel ON queued_triggers (channel_id, id);
