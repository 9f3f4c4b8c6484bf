"""The `tomori` command's log lines, as `TOMORI_LOG_FORMAT` says: text a person reads, or one
JSON object a line for a collector (Loki, Elasticsearch, CloudWatch), with the fields of the
turn a line is about (`tomori.turn_log`).

What a line says is the code's own log call; none of a turn's INFO lines carries the words of
a message or of an answer, so a collector that keeps INFO keeps no conversation.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import TextIO

from tomori.config.settings import LogFormat
from tomori.turn_log import FIELDS, TurnFields

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLines(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message; the turn's id,
    channel, model and outcome where the line is about a turn; the traceback, if any."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                line[field] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False)


def log_handler(
    format: LogFormat, stream: TextIO | None = None, text: str = TEXT_FORMAT
) -> logging.Handler:
    """A handler writing to `stream` (standard error by default) in `format`, every record
    given its turn's fields; `text` is the line of the text format (the console's is shorter)."""
    handler = logging.StreamHandler(stream)
    handler.addFilter(TurnFields())
    handler.setFormatter(JsonLines() if format is LogFormat.JSON else logging.Formatter(text))
    return handler
