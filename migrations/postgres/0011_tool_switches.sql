-- Which tools an admin turned off or on (/tomori tools), for a channel or its whole server:
-- a tool by the name the model calls it, or every tool of one MCP server. A channel's choice
-- beats its server's; a tool's beats its MCP server's at the same scope; unset is on.
CREATE TABLE tool_switches (
    guild_id   TEXT NOT NULL,
    channel_id TEXT NOT NULL,          -- '' for the whole server
    kind       TEXT NOT NULL,          -- tool or server
    name       TEXT NOT NULL,
    enabled    SMALLINT NOT NULL,       -- 1 on, 0 off
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (guild_id, channel_id, kind, name)
);

-- Each tool call's ending, for /tomori status (never its arguments): used, failed,
-- timed_out, killed. Kept two days, as turn_outcomes.
CREATE TABLE tool_calls (
    guild_id    TEXT,
    tool        TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    recorded_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX tool_calls_by_guild ON tool_calls (guild_id, recorded_at);
