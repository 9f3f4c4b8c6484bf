-- Memories (issue 37): what the model chose to remember with its `remember` tool, in one scope
-- the store's queries keep to (tomori.memory.store): about a member in one server, about one
-- server, a persona's own in one server, or one direct message conversation's.
CREATE TABLE memories (
    memory_id  BIGSERIAL PRIMARY KEY,
    scope      TEXT NOT NULL,   -- member, server, persona, dm
    guild_id   TEXT NOT NULL,   -- the server; '' for a direct message
    owner_id   TEXT NOT NULL,   -- member: the member's id; server: ''; persona: its name key
                                -- ('' for the bot); dm: the conversation's channel id
    member_id  TEXT NOT NULL,   -- whose turn saved it: /memory list, export and forget-all
                                -- find a member's memories by it
    text       TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,  -- the server's clock, seconds since the epoch
    -- The full-text search entry: part of the row, gone with it.
    search     TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED
);
CREATE INDEX memories_by_owner ON memories (guild_id, scope, owner_id, created_at);
CREATE INDEX memories_by_member ON memories (member_id);
CREATE INDEX memories_by_time ON memories (created_at);
CREATE INDEX memories_search ON memories USING GIN (search);

-- Who said no to memories: a member (/memory off: nothing more is remembered of their turns,
-- and what was is not shown) or a server (/tomori memory off).
CREATE TABLE memory_refusals (
    kind     TEXT NOT NULL,     -- member, server
    id       TEXT NOT NULL,     -- the member's or the server's id
    since    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (kind, id)
);
