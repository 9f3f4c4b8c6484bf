-- SQLite's clock gets a table of its own here (host_clock: the host's boot clock, anchored once
-- per boot). PostgreSQL needs none: its clock is the server's, one for every host. The number
-- is kept so that both engines count the same migrations.
SELECT 1;
