-- Number 6 belongs to the per-channel and per-server settings of the /tomori commands, built
-- on another branch; this stand-in keeps the numbers contiguous until that file replaces it.
SELECT 1;
