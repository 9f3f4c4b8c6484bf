-- The models turns skip for now: one row per model that stalled or failed with a server error
-- (provider:model, as TOMORI_MODELS names it), shared by every process, until a probe finds it
-- answering again and deletes the row. One probe at a time: the process that claims a row
-- writes itself in `probing_by` until `probe_until` (past which another may claim it).
CREATE TABLE model_health (
    model       TEXT PRIMARY KEY,
    ailment     TEXT NOT NULL,
    sick_since  DOUBLE PRECISION NOT NULL,   -- the server's clock, seconds since the epoch
    probe_at    DOUBLE PRECISION NOT NULL,   -- when a probe may ask it again
    probing_by  TEXT,                        -- instances.instance_id
    probe_until DOUBLE PRECISION
);
