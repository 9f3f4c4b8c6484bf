"""Discord's webhook and interaction tokens kept out of every log line while the cog is loaded.

Both libraries log each request's URL at DEBUG (their HTTP clients and their webhook adapters),
and discord.py the body of each answer too: a webhook's URL, and the webhook Discord answers
its creation with, hold its token, a key to post under any name in its channel; an
interaction's reply URL holds the interaction's, a key to answer for it. So each cog installs
this redaction (`tomori.tools.log_redaction`) from its adding until its unloading, and every
log line of the process, the libraries' own included, shows each such token as `<token>`.
"""

from __future__ import annotations

from tomori.tools.log_redaction import LogRedaction

SHOWN = "<token>"
TOKEN_PATTERNS = {
    # /webhooks/{id}/{token}..., /interactions/{id}/{token}/callback: the segment after the ID
    r"(/(?:webhooks|interactions)/\d+/)[^/?#\s'\"\\]+": rf"\g<1>{SHOWN}",
    # a webhook object as Discord answers it, as JSON or as a logged dict
    r"""(["']token["']\s*:\s*["'])[^"']+""": rf"\g<1>{SHOWN}",
}
"""Each pattern (a regular expression) and what the text it matches is written as."""


def token_redaction() -> LogRedaction:
    """A cog's own redaction of Discord's tokens: each cog installs and removes its own."""
    return LogRedaction(patterns=TOKEN_PATTERNS)
