"""Structured JSON logging with a correlation id on every line.

The id comes from the request's ``X-Request-ID`` (or is generated), lives in a
context variable for the request or task, is returned in the response header,
travels to Celery tasks in their message headers, and is forwarded to
upstreams by the httpx factory. Every line also carries ``brand``.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import MutableMapping
from contextvars import ContextVar
from typing import Any

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


def json_formatter() -> structlog.stdlib.ProcessorFormatter:
    """The formatter named in settings.LOGGING: one JSON object per line."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=SHARED_PROCESSORS,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
    )


def configure_structlog() -> None:
    structlog.configure(
        processors=[*SHARED_PROCESSORS, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)


logging.captureWarnings(True)
