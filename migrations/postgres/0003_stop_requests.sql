-- A /kill handled by a process that does not run the channel's turn is written here, and the
-- owner is told at once (NOTIFY tomori_stop); it stops the turn as a local /kill would.
-- NULL while nobody asked; a new turn's row starts NULL.
ALTER TABLE channel_locks ADD COLUMN stop_requested_by TEXT;
