-- Whether members may run /scene in a server (/tomori scenes): NULL is not set, and scenes
-- are allowed; 0 turns them off, 1 on.
ALTER TABLE server_settings ADD COLUMN scenes SMALLINT;
