-- The text answers begin with (/tomori prefill), for a server or one channel: NULL is not set
-- here (the channel's beats the server's; the bot's environment sets none). A /respond turn's
-- own prefill is never stored: it travels with its queued trigger.
ALTER TABLE server_settings ADD COLUMN prefill TEXT;
ALTER TABLE channel_settings ADD COLUMN prefill TEXT;
