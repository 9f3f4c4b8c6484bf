-- /tomori progress and /tomori errors: how a server's direct triggers show their turn's
-- progress ('reactions' or 'off') and how one whose turn failed is told so ('reply', 'react'
-- or 'silent'); NULL: TOMORI_PROGRESS and TOMORI_ERRORS apply.
ALTER TABLE server_settings ADD COLUMN progress TEXT;
ALTER TABLE server_settings ADD COLUMN errors TEXT;
