-- A lock row describes its whole turn, so a process that started a turn (or handed the channel
-- on) and lost the reply to its commit, as when the server restarts, can still begin it.
ALTER TABLE channel_locks
    ADD COLUMN payload TEXT NOT NULL DEFAULT '{}',   -- JSON
    ADD COLUMN received_at DOUBLE PRECISION;

-- Each message is admitted once across every process on the database: a retried admission
-- whose first commit did land, or the same message delivered to two processes (a rolling
-- restart), is recognised. Rows older than TOMORI_QUEUE_MAX_AGE_MS are pruned.
CREATE TABLE admitted_messages (
    message_id  TEXT PRIMARY KEY,
    admitted_by TEXT NOT NULL,   -- instances.instance_id
    admitted_at DOUBLE PRECISION NOT NULL
);
