"""Logging for the service: JSON lines on stderr, and no customer text in them.

``DIWANIYA_LOG_FORMAT`` = ``json`` (default) | ``text``; ``DIWANIYA_LOG_LEVEL``;
``DIWANIYA_LOG_MESSAGE_TEXT=true`` is the one switch that lets message text
through (debugging on a private machine only).

Our own loggers never format message text. Third-party loggers can: aiosqlite
at DEBUG prints every statement with its parameters (the checkpoint blobs hold
customers' messages), psycopg/asyncpg report queries, httpx logs URLs, grpc
and the model clients log payloads. Unless the switch is on, they are held at
WARNING, and the handler's filter drops their records below WARNING and
withholds the arguments of the rest, whatever level anyone sets later.

One JSON object per line, e.g.::

    {"ts": "2026-12-01T09:00:00.123Z", "level": "INFO", "logger": "diwaniya.rpc",
     "msg": "rpc", "rpc.method": "SendMessage", "rpc.code": "OK", "trace_id": "4bf9…"}
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import IO, Any

from opentelemetry import trace

# Loggers that may print SQL parameters, payloads or URLs holding customer text.
THIRD_PARTY = ("aiosqlite", "sqlite3", "psycopg", "asyncpg", "httpx", "httpcore", "grpc",
               "openai", "langchain", "langchain_core", "langchain_openai", "langgraph",
               "urllib3", "hpack", "h2")
_HANDLER_NAME = "diwaniya"


def _third_party(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in THIRD_PARTY)


class RedactThirdParty(logging.Filter):
    """Drops third-party records below WARNING and withholds the arguments of the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _third_party(record.name):
            return True
        if record.levelno < logging.WARNING:
            return False
        if record.args:
            record.msg = f"{record.msg} [arguments withheld; DIWANIYA_LOG_MESSAGE_TEXT=false]"
            record.args = None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record; ``extra={"diwaniya": {...}}`` fields are merged in."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "diwaniya", None)
        if isinstance(fields, dict):
            out.update({k: v for k, v in fields.items() if v not in ("", None)})
        ctx = trace.get_current_span().get_span_context()
        if ctx.is_valid:
            out["trace_id"] = format(ctx.trace_id, "032x")
            out["span_id"] = format(ctx.span_id, "016x")
        if record.exc_info and record.exc_info[0] is not None:
            out["exc_type"] = record.exc_info[0].__name__
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = getattr(record, "diwaniya", None)
        if isinstance(fields, dict):
            line += " " + " ".join(f"{k}={v}" for k, v in fields.items() if v not in ("", None))
        return line


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at emit time, not at configure time:
    a replaced stderr (a test's capture, a daemon's redirect) never leaves the
    root handler writing to a closed stream."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, value: IO[str]) -> None:
        pass  # always sys.stderr


def configure_logging(*, format: str = "json", level: str | int = "INFO",
                      message_text: bool = False, stream: IO[str] | None = None
                      ) -> logging.Handler:
    """Install the one root handler (replacing ours from an earlier call); returns it."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    handler = logging.StreamHandler(stream) if stream is not None else _StderrHandler()
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    if not message_text:
        handler.addFilter(RedactThirdParty())
    root.addHandler(handler)
    root.setLevel(level if isinstance(level, int) else level.upper())
    for name in THIRD_PARTY:
        logging.getLogger(name).setLevel(logging.NOTSET if message_text else logging.WARNING)
    return handler
