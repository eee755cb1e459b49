"""Celery tasks of the connector registry (queue ``default``): thin wrappers over the gateway's syncs."""

from __future__ import annotations

from datetime import datetime

from celery import shared_task

from apps.connectors import gateway
from apps.core.errors import UpstreamError
from apps.core.logging import get_logger

logger = get_logger(__name__)


@shared_task(name="connectors.sync_all", ignore_result=True)
def connectors_sync_all_task() -> dict[str, str]:
    # Scheduled by Celery beat every CONNECTORS_SYNC_INTERVAL_SECONDS (settings.CELERY_BEAT_SCHEDULE);
    # a failed connector waits for the next run rather than retrying here.
    outcome = gateway.connectors_sync_scheduled()
    logger.info("connectors.sync_all", **outcome)
    return outcome


@shared_task(name="connectors.sync", bind=True, ignore_result=True, max_retries=2, default_retry_delay=30)
def connector_sync_task(self, slug: str, trigger: str, since: str | None = None) -> None:
    # Enqueued when an upstream said its tools changed; skipped when a call's sync got there first.
    # Only an unreachable or overloaded upstream is worth retrying, twice at most.
    try:
        gateway.connector_sync_once(
            slug=slug, trigger=trigger, since=datetime.fromisoformat(since) if since else None
        )
    except UpstreamError as error:
        if error.retryable:
            raise self.retry(exc=error) from error
        raise
