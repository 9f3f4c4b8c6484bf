-- A turn's user may end it early without /kill's clearing of the queue: a stop word, or a
-- follow-up (a new message of theirs to the same addressee while it answers). `interrupted`
-- is why (stop_word, follow_up): the owner hears it as it hears stop_requested_by, and the
-- turn stops; the queue stays and is served. NULL while nobody asked; a new turn starts NULL.
ALTER TABLE channel_locks ADD COLUMN interrupted TEXT;
-- Whom a turn's trigger was addressed to, as the cog says it (NULL: the turn takes no
-- follow-ups); a follow-up must be addressed the same. `follow_ups` counts the follow-ups in a
-- row that led to this trigger (0: it is not one); a turn past the limit takes none.
ALTER TABLE channel_locks ADD COLUMN follow_up_key TEXT;
ALTER TABLE channel_locks ADD COLUMN follow_ups INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queued_triggers ADD COLUMN follow_up_key TEXT;
ALTER TABLE queued_triggers ADD COLUMN follow_ups INTEGER NOT NULL DEFAULT 0;

-- /tomori followups: whether a server's users' follow-ups stop the answer (1) or queue (0);
-- NULL: TOMORI_FOLLOW_UPS applies.
ALTER TABLE server_settings ADD COLUMN follow_ups SMALLINT;
