"""Structured logging with a correlation id on every line.

The id comes from the request's ``X-Request-ID`` (or is generated), lives in a
context variable for the request or task, is returned in the response header,
travels to Celery tasks in their message headers, and is forwarded to
upstreams by the httpx factory. Every line also carries ``brand``.

One format per stream (:class:`ConsoleHandler`): JSON objects, one a line, when
the stream is a pipe or a file (log collectors, ``manage.py run``'s children);
readable lines when it is a terminal. Python warnings are logged as one line on
``py.warnings``; known third-party ones (:data:`KNOWN_WARNINGS`) once per
process, in a sentence that says what to do.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import uuid
import warnings
from collections.abc import Iterator, Mapping, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TextIO

import structlog
from django.conf import settings
from structlog.typing import Processor

_correlation_id: ContextVar[str | None] = ContextVar("correlation_id", default=None)

# Ids we accept from clients: printable and short, so a header cannot inject log lines.
_ACCEPTABLE_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")


def current_correlation_id() -> str | None:
    return _correlation_id.get()


def set_correlation_id(value: str | None) -> object:
    """Set the id for this context; returns a token for :func:`reset_correlation_id`."""
    return _correlation_id.set(value)


def reset_correlation_id(token: object) -> None:
    _correlation_id.reset(token)  # type: ignore[arg-type]


def accept_or_generate_correlation_id(candidate: str | None) -> str:
    if candidate and _ACCEPTABLE_ID.match(candidate):
        return candidate
    return uuid.uuid4().hex


def _add_context(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    correlation_id = _correlation_id.get()
    if correlation_id:
        event_dict.setdefault("correlation_id", correlation_id)
    event_dict.setdefault("brand", settings.CORTEX_BRAND)
    return event_dict


SHARED_PROCESSORS: list[Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    _add_context,
]


def _formatter(renderer: Any) -> structlog.stdlib.ProcessorFormatter:
    """Records of structlog and of the standard library alike, through the shared processors to
    ``renderer``."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=SHARED_PROCESSORS,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )


def json_formatter() -> structlog.stdlib.ProcessorFormatter:
    """The formatter named in settings.LOGGING: one JSON object per line."""
    return _formatter(structlog.processors.JSONRenderer())


# Keys every line has; a readable line shows them in its own places (or not at all: brand).
_READABLE_OMITTED = frozenset({"event", "level", "logger", "timestamp", "brand", "exception", "process"})


def readable_line(record: Mapping[str, Any]) -> str:
    """One log record (as the JSON renderer would write it) as a line for a person.

    ``06:08:26 info    api_token.created token_id=1 scopes=read``; the logger is named for
    warnings and errors, and a traceback follows on its own lines.
    """
    timestamp = str(record.get("timestamp") or "")
    clock = timestamp[11:19] if len(timestamp) >= 19 else ""
    level = str(record.get("level") or "info").lower()
    event = str(record.get("event", ""))
    if "\n" in event:
        event = " ".join(event.split())
    fields = " ".join(
        f"{key}={_readable_value(value)}" for key, value in record.items() if key not in _READABLE_OMITTED
    )
    line = " ".join(part for part in (clock, f"{level:<7}", event, fields) if part)
    if level in {"warning", "error", "critical"} and record.get("logger"):
        line += f"  [{record['logger']}]"
    if record.get("exception"):
        line += "\n" + str(record["exception"]).rstrip()
    return line


def _readable_value(value: Any) -> str:
    if isinstance(value, list | tuple) and all(isinstance(item, str | int | float) for item in value):
        return ",".join(str(item) for item in value)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _render_readable(logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> str:
    return readable_line(event_dict)


def readable_formatter() -> structlog.stdlib.ProcessorFormatter:
    """Readable lines for a terminal (:func:`readable_line`), from the same processors as JSON."""
    return _formatter(_render_readable)


def _is_terminal(stream: TextIO | None) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real file
        return False


class ConsoleHandler(logging.StreamHandler[TextIO]):
    """A stream handler writing JSON lines (its configured formatter) to a pipe or file, and
    readable lines to a terminal: one format per stream, whichever the stream is."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self._readable = readable_formatter()

    def format(self, record: logging.LogRecord) -> str:
        if _is_terminal(self.stream):
            return self._readable.format(record)
        return super().format(record)


@contextlib.contextmanager
def console_quiet(level: int = logging.WARNING) -> Iterator[None]:
    """Console handlers show only ``level`` and above meanwhile: for commands that tell a person
    what they did in their own words (``tokens create``), so no log line comes before them."""
    handlers = [handler for handler in logging.getLogger().handlers if isinstance(handler, ConsoleHandler)]
    previous = [handler.level for handler in handlers]
    for handler in handlers:
        handler.setLevel(max(level, handler.level))
    try:
        yield
    finally:
        for handler, old in zip(handlers, previous, strict=True):
            handler.setLevel(old)


def uvicorn_log_config() -> dict[str, Any]:
    """``logging.config.dictConfig`` for uvicorn (``--log-config``): its server and access lines in
    the same format as everything else instead of its own ``INFO:     …`` lines."""
    handler = {"class": "apps.core.logging.ConsoleHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "apps.core.logging.json_formatter"}},
        "handlers": {"console": handler},
        "loggers": {
            name: {"handlers": ["console"], "level": "INFO", "propagate": False}
            for name in ("uvicorn", "uvicorn.access")
        },
    }


# --- Python warnings ---------------------------------------------------------------------


@dataclass(frozen=True)
class KnownWarning:
    """A third-party warning CortexWeb knows: logged once per process as ``text``."""

    category: str  # the warning class's name
    path_part: str  # part of the path of the file that warned
    contains: str  # part of the warning's message
    text: str

    def matches(self, category: type[Warning], filename: str, message: str) -> bool:
        return (
            category.__name__ == self.category
            and self.path_part in filename.replace("\\", "/")
            and self.contains in message
        )


KNOWN_WARNINGS: tuple[KnownWarning, ...] = (
    KnownWarning(
        category="SecurityWarning",
        path_part="/celery/",
        contains="superuser privileges",
        text="Celery runs as root (uid 0): acceptable in a disposable container; in production run "
        "the worker as an unprivileged user (celery --uid, or USER in the image)",
    ),
)
_known_warnings_logged: set[KnownWarning] = set()
_stdlib_showwarning = warnings.showwarning


def _log_warning(  # noqa: PLR0917 - the signature of warnings.showwarning
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """``warnings.showwarning``: one line on ``py.warnings`` instead of Python's multi-line text."""
    if file is not None:  # someone asked for a particular file: Python's own behaviour
        _stdlib_showwarning(message, category, filename, lineno, file, line)
        return
    text = " ".join(str(message).split())
    logger = logging.getLogger("py.warnings")
    for known in KNOWN_WARNINGS:
        if known.matches(category, filename, text):
            if known not in _known_warnings_logged:
                _known_warnings_logged.add(known)
                logger.warning(known.text)
            return
    logger.warning("%s: %s (%s:%s)", category.__name__, text, filename, lineno)


def configure_structlog() -> None:
    structlog.configure(
        processors=[*SHARED_PROCESSORS, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)


warnings.showwarning = _log_warning
