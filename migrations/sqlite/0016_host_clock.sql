-- The clock SQLite's rows are written and judged on never steps (tomori.store.host_clock): the
-- host's boot clock plus an offset, taken from the wall clock once per boot by its first
-- process and read here by the others, so that every process of the host reads one clock.
-- One row, the current boot's; a new boot replaces it.
CREATE TABLE host_clock (
    boot_id  TEXT PRIMARY KEY,   -- the kernel's id of the boot (/proc/sys/kernel/random/boot_id)
    offset_s REAL NOT NULL       -- seconds since the epoch at the boot clock's zero
);
