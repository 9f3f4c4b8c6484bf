"""MCP servers' addresses and headers kept out of every log line, the libraries' own included.

An MCP server's URL may carry a token in its query or user part, and its headers carry keys;
the HTTP client the SDK uses logs each request's URL at INFO, and an error from it (a 401, a
refused connection) names the URL too. So while MCP servers run, every log record the process
makes passes through one record factory that writes each such secret as `<mcp server NAME>`,
in its message and in the traceback it carries, before any handler formats it.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from tomori.config.mcp_servers import McpServerConfig

MIN_SECRET_CHARS = 4
"""A header value shorter than this is too common a string to stand for a secret."""


def secrets_of(configs: Iterable[McpServerConfig]) -> Mapping[str, str]:
    """Each secret of the servers' configuration, and what a log line shows in its place."""
    found: dict[str, str] = {}
    for config in configs:
        shown = f"<mcp server {config.name}>"
        if config.url:
            found[config.url] = shown
            parts = urlsplit(config.url)
            found[f"{parts.scheme}://{parts.netloc}"] = shown
            if parts.query:
                found[parts.query] = shown
        for value in config.headers.values():
            if len(value) >= MIN_SECRET_CHARS:
                found[value] = shown
    return found


class LogRedaction:
    """One set of secrets, redacted while installed (`install`, `remove`): every set installed
    shares one record factory, put in place by the first and taken away with the last."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        # Longest first: a URL is replaced whole before its origin is.
        self._secrets = sorted(secrets.items(), key=lambda item: -len(item[0]))

    def install(self) -> None:
        if self._secrets and self not in _INSTALLED:
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
