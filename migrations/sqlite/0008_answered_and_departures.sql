-- Whether a lock's turn has shown anything in its channel yet (0 or 1), written with its
-- progress: a process that takes over the channel of one that is gone runs again a turn that
-- showed nothing, so a crash or a cut-short stop loses no message, and does not run again one
-- that already answered.
ALTER TABLE channel_locks ADD COLUMN answered INTEGER NOT NULL DEFAULT 0;

-- A process that stops cleanly writes a row here as it leaves, so the processes still running
-- serve the channels and queues it left at once instead of at their next heartbeat. SQLite
-- cannot announce it, so they read the newest id; PostgreSQL announces it too (NOTIFY).
CREATE TABLE departures (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    departed_at REAL NOT NULL    -- the database's clock, seconds since the epoch
);
