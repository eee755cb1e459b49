"""Celery tasks of the dashboard (queue ``default``): thin wrappers over services."""

from celery import shared_task

from apps.connectors import health
from apps.dashboard import services


@shared_task(name="dashboard.tool_calls_roll_up", ignore_result=True)
def tool_calls_roll_up_task() -> None:
    # Scheduled by Celery beat every minute (settings.CELERY_BEAT_SCHEDULE); a no-op until an hour
    # has ended two minutes ago.
    services.tool_calls_roll_up()


@shared_task(name="dashboard.health_probe", ignore_result=True)
def health_probe_task() -> None:
    # Scheduled by Celery beat every CORTEX_HEALTH_PROBE_SECONDS: probes the connectors and upstreams
    # idle for an interval (apps/connectors/health.py), never waiting for a limiter slot, so runs that
    # overlap cost at most one extra request per target. Here because the dashboard shows the result.
    health.health_probe()
