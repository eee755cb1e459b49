"""Celery tasks of the memory app (thin: the work is in ``services``)."""

from __future__ import annotations

from celery import shared_task

from apps.memory import services


@shared_task(name="memory.lifecycle", ignore_result=True)
def memory_lifecycle() -> dict[str, int]:
    """Decay, promotion and expiry (Celery beat, every ``MEMORY_LIFECYCLE_SECONDS``)."""
    return services.memory_lifecycle()
