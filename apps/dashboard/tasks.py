"""Celery tasks of the dashboard (queue ``default``): thin wrappers over services."""

from celery import shared_task

from apps.dashboard import services


@shared_task(name="dashboard.tool_calls_roll_up", ignore_result=True)
def tool_calls_roll_up_task() -> None:
    # Scheduled by Celery beat every minute (settings.CELERY_BEAT_SCHEDULE); a no-op until an hour
    # has ended two minutes ago.
    services.tool_calls_roll_up()
