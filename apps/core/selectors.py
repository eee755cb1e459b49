"""Core reads: readiness of the services CortexWeb depends on."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet

from apps.core.models import Event
from apps.core.redis import get_redis


def _timed(check: Any) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        detail = check()
        result: dict[str, Any] = {"ok": True, **detail}
    except Exception as error:  # noqa: BLE001 - readiness reports every failure by name
        result = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    result["latencyMs"] = round((time.perf_counter() - started) * 1000, 1)
    return result


def _check_postgres() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    if row is None:
        raise RuntimeError("the 'vector' extension is not installed (run migrations)")
    return {"vector": row[0]}


def _check_redis() -> dict[str, Any]:
    get_redis().ping()
    return {}


def _check_celery() -> dict[str, Any]:
    from cortexweb.celery import app

    # limit=1: one answering worker is enough, so don't wait out the timeout for others.
    replies = app.control.ping(timeout=settings.CORTEX_READYZ_CELERY_TIMEOUT, limit=1)
    if not replies:
        raise RuntimeError("no Celery worker answered a ping")
    return {"worker": next(iter(replies[0]))}


def readiness() -> dict[str, dict[str, Any]]:
    """Each dependency by name, with ok, latency and what failed.

    Celery is only pinged when Redis answered: without a broker the ping would
    just repeat the Redis failure after its timeout.
    """
    checks = {"postgres": _timed(_check_postgres), "redis": _timed(_check_redis)}
    if checks["redis"]["ok"]:
        checks["celery"] = _timed(_check_celery)
    else:
        checks["celery"] = {
            "ok": False,
            "error": "skipped: Redis (the broker) is unreachable",
            "latencyMs": 0.0,
        }
    return checks


EVENT_LIMIT = 100


def events_recent(*, prefix: str = "", correlation_id: str = "", limit: int = EVENT_LIMIT) -> QuerySet[Event]:
    """The newest events first, optionally those whose name starts with ``prefix``."""
    events = Event.objects.all()
    if prefix:
        events = events.filter(name__startswith=prefix)
    if correlation_id:
        events = events.filter(correlation_id=correlation_id)
    return events.order_by("-created_at", "-id")[:limit]
