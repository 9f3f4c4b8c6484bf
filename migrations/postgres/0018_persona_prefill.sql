-- What a persona's answers begin with (/tomori persona add|edit prefill:), checked as
-- /tomori prefill checks one: NULL is none, and its answers begin with the channel's or the
-- server's prefill as before. A /respond prefill still wins for the answer it was given for.
ALTER TABLE personas ADD COLUMN prefill TEXT;
