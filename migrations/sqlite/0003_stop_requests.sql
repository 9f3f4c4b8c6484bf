-- A /kill handled by a process that does not run the channel's turn is written here; the
-- owner reads its rows' stop requests while it runs turns and stops the turn as a local /kill
-- would. NULL while nobody asked; a new turn's row starts NULL.
ALTER TABLE channel_locks ADD COLUMN stop_requested_by TEXT;
