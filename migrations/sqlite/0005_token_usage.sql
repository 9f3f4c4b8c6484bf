-- The tokens each model used in each turn, as its provider reported them: one row per model
-- that reported usage in a turn (a fallback's turn has one per model tried). What a quota per
-- requester or per channel is built on, hence an index on each with the time.
CREATE TABLE token_usage (
    channel_id    TEXT NOT NULL,
    requester_id  TEXT,              -- the user who asked
    message_id    TEXT,              -- the message the turn answered
    model         TEXT NOT NULL,     -- provider:model, as TOMORI_MODELS names it
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,  -- the model's hidden reasoning included
    recorded_at   REAL NOT NULL      -- the database's clock, seconds since the epoch
);
CREATE INDEX token_usage_by_requester ON token_usage (requester_id, recorded_at);
CREATE INDEX token_usage_by_channel ON token_usage (channel_id, recorded_at);
