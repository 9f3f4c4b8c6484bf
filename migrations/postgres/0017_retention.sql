-- A model's health is kept per endpoint and model: two processes (or a bot before and after a
-- move) asking one model name at two servers no longer share a mark, and a mark the retention
-- sweep finds no chain naming at its endpoint is forgotten (tomori.policy.retention). The rows
-- of the table keyed by the model alone are dropped: a model still sick is marked again by the
-- next turn that meets it.
DROP TABLE model_health;
CREATE TABLE model_health (
    endpoint    TEXT NOT NULL,   -- the provider's base URL without credentials; '' for its own
    model       TEXT NOT NULL,   -- provider:model, as TOMORI_MODELS names it
    ailment     TEXT NOT NULL,
    sick_since  DOUBLE PRECISION NOT NULL,   -- the server's clock, seconds since the epoch
    probe_at    DOUBLE PRECISION NOT NULL, -- when a probe may ask it again
    probing_by  TEXT,            -- instances.instance_id
    probe_until DOUBLE PRECISION,
    PRIMARY KEY (endpoint, model)
);

-- The retention sweep deletes the tokens of turns older than TOMORI_TOKEN_USAGE_DAYS, oldest
-- first, a slice at a time.
CREATE INDEX token_usage_by_time ON token_usage (recorded_at);
