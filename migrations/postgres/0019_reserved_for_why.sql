-- A placeholder: number 19 is the "why" branch's (issue 36). Migrations are numbered without a
-- gap, so this branch carries an empty 0019 to stand alone; at the merge, why's own 0019 takes
-- its place and this file is deleted.
SELECT 1;
