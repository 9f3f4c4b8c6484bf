-- Sprites: a persona's labelled alternate avatars (/tomori sprite), which its model switches
-- to by starting a line with "Name (label):".
CREATE TABLE persona_sprites (
    guild_id    TEXT NOT NULL,
    name_key    TEXT NOT NULL,       -- the persona's (personas.name_key)
    label_key   TEXT NOT NULL,       -- the label casefolded: unique per persona, case-insensitive
    label       TEXT NOT NULL,       -- as the admin wrote it, and as the marker and name show it
    avatar_url  TEXT NOT NULL,
    updated_at  REAL NOT NULL, -- the database's clock, seconds since the epoch
    PRIMARY KEY (guild_id, name_key, label_key)
);

-- Each message posted wearing a sprite, for /tomori status. Kept two days, as turn_outcomes.
CREATE TABLE sprites_shown (
    guild_id    TEXT,
    sprite      TEXT NOT NULL,       -- as the message showed it: "Name (label)"
    recorded_at REAL NOT NULL
);
CREATE INDEX sprites_shown_by_guild ON sprites_shown (guild_id, recorded_at);
