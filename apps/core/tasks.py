"""Celery tasks of the core app (queue ``default``): thin wrappers over services."""

from celery import shared_task

from apps.core import runs, services


@shared_task(name="core.runs_sweep", ignore_result=True)
def runs_sweep_task() -> None:
    # Scheduled by Celery beat every CORTEX_RUN_SWEEP_SECONDS (settings.CELERY_BEAT_SCHEDULE).
    runs.runs_sweep()


@shared_task(name="core.upstream_requests_prune", ignore_result=True)
def upstream_requests_prune_task() -> None:
    # Scheduled by Celery beat hourly (settings.CELERY_BEAT_SCHEDULE).
    services.upstream_requests_prune()
