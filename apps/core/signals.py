"""Carry the correlation id from the request into Celery tasks, and count tasks."""

from __future__ import annotations

import time
from typing import Any

from celery import signals

from apps.core.logging import current_correlation_id, get_logger, reset_correlation_id, set_correlation_id
from apps.core.metrics import celery_task_duration_seconds, celery_tasks_total

logger = get_logger(__name__)
# Not "correlation_id": Celery already uses that message property for the task id.
CORRELATION_HEADER = "cortex_correlation_id"
_task_state: dict[str, tuple[object, float]] = {}


@signals.before_task_publish.connect
def _attach_correlation_id(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    correlation_id = current_correlation_id()
    if headers is not None and correlation_id and CORRELATION_HEADER not in headers:
        headers[CORRELATION_HEADER] = correlation_id


@signals.task_prerun.connect
def _bind_correlation_id(task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    correlation_id = getattr(task.request, CORRELATION_HEADER, None) if task is not None else None
    token = set_correlation_id(correlation_id or task_id)
    if task_id:
        _task_state[task_id] = (token, time.perf_counter())


@signals.task_postrun.connect
def _unbind_correlation_id(
    task_id: str | None = None, task: Any = None, state: str | None = None, **kwargs: Any
) -> None:
    token, started = _task_state.pop(task_id or "", (None, time.perf_counter()))
    name = getattr(task, "name", "unknown")
    celery_tasks_total.labels(name, state or "UNKNOWN").inc()
    celery_task_duration_seconds.labels(name).observe(time.perf_counter() - started)
    if token is not None:
        try:
            reset_correlation_id(token)
        except ValueError:  # set in another context (thread pools): just clear it
            set_correlation_id(None)
