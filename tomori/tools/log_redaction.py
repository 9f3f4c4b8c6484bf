"""Secrets kept out of every log line, the libraries' own included.

An MCP server's URL may carry a token in its query or user part, its headers carry keys, and
a `${VAR}` the author filled into its arguments or environment may be a key the server echoes
on its stderr; the HTTP client the SDK uses logs each request's URL at INFO, and an error from
it (a 401, a refused connection) names the URL too. The Discord libraries log each request's
URL at DEBUG, and a webhook's or an interaction's URL holds its token. So every log record the
process makes passes through one record factory while any `LogRedaction` is installed, which
writes each secret it knows (`<mcp server NAME>`) or each text its patterns match in place, in
the message and in the traceback the record carries, before any handler formats it.
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

from tomori.config.mcp_servers import McpServerConfig

MIN_SECRET_CHARS = 4
"""A header's or a filled `${VAR}`'s value shorter than this is too common a string to
stand for a secret."""


URL_SAFE = "/:@!$&'()*+,;=~?"
"""What an HTTP client leaves as it is in a URL it logs (it percent-encodes the rest)."""


def secrets_of(configs: Iterable[McpServerConfig]) -> Mapping[str, str]:
    """Each secret of the servers' configuration, and what a log line shows in its place: each
    in every spelling a client may log it in (percent-encoded, its host in lower case), and a
    server's address as the connection's own lines name it (`host='...' port=...`)."""
    found: dict[str, str] = {}
    for config in configs:
        shown = f"<mcp server {config.name}>"
        values = [*config.headers.values(), *config.filled]
        if config.url:
            parts = urlsplit(config.url)
            origin = f"{parts.scheme}://{parts.netloc}"
            lowered = f"{parts.scheme.lower()}://{parts.netloc.lower()}"
            values += [config.url, origin, lowered + config.url[len(origin) :], lowered]
            if parts.query:
                values.append(parts.query)
            if parts.hostname:
                port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
                found[f"host='{parts.hostname}' port={port}"] = shown
        for value in values:
            if len(value) >= MIN_SECRET_CHARS:
                for spelling in _spellings(value):
                    found[spelling] = shown
    return found


def _spellings(value: str) -> set[str]:
    """`value` as it is, and percent-encoded as URL clients write it."""
    return {value, quote(value, safe=URL_SAFE), quote(value, safe=""), quote_plus(value)}


class LogRedaction:
    """Secrets and patterns, redacted while installed (`install`, `remove`): every one
    installed shares one record factory, put in place by the first and taken away with the
    last.

    `secrets` maps each secret to what a line shows instead; `patterns`, each regular
    expression to its replacement (`re.sub`'s, so a group may keep what surrounds a token)."""

    def __init__(
        self, secrets: Mapping[str, str] | None = None, patterns: Mapping[str, str] | None = None
    ) -> None:
        # Longest first: a URL is replaced whole before its origin is.
        self._secrets = sorted((secrets or {}).items(), key=lambda item: -len(item[0]))
        self._patterns = [(re.compile(p), shown) for p, shown in (patterns or {}).items()]

    def install(self) -> None:
        if (self._secrets or self._patterns) and self not in _INSTALLED:
            if not _INSTALLED:
                _FACTORY.wrap(logging.getLogRecordFactory())
            _INSTALLED.append(self)

    def remove(self) -> None:
        if self in _INSTALLED:
            _INSTALLED.remove(self)
            if not _INSTALLED:
                _FACTORY.unwrap()

    def clean(self, text: str) -> str:
        for secret, shown in self._secrets:
            if secret in text:
                text = text.replace(secret, shown)
        for pattern, replacement in self._patterns:
            text = pattern.sub(replacement, text)
        return text


class _RedactingFactory:
    """The record factory in place while any `LogRedaction` is installed."""

    def __init__(self) -> None:
        self._previous: Any = None

    def wrap(self, previous: Any) -> None:
        self._previous = previous
        logging.setLogRecordFactory(self)

    def unwrap(self) -> None:
        if logging.getLogRecordFactory() is self:  # else another wrapped us: leave theirs
            logging.setLogRecordFactory(self._previous)

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self._previous(*args, **kwargs)
        if _INSTALLED:
            _redact(record)
        return record


def _redact(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a malformed record is the logging module's to report
        return
    said = _clean(message)
    if said != message:
        record.msg, record.args = said, ()
    if record.exc_info and record.exc_info[1] is not None:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        record.exc_text = _clean(text)


def _clean(text: str) -> str:
    for redaction in _INSTALLED:
        text = redaction.clean(text)
    return text


_INSTALLED: list[LogRedaction] = []
_FACTORY = _RedactingFactory()
