-- How often each thing happened, by label (a model, a tool): stream_sdk_timeout,
-- fallback_used, tool_used, tool_failed. Counters only, so the table stays small.
CREATE TABLE metrics (
    name       TEXT NOT NULL,
    label      TEXT NOT NULL,
    count      BIGINT NOT NULL DEFAULT 0,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (name, label)
);
