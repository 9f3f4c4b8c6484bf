-- A placeholder holding this number for the branch that owns it (issue 36: why is 0019, takes
-- 0020), so that progress's 0021 applies in order on its own branch. Delete this file when
-- that branch's migration of the same number is merged.
SELECT 1;
