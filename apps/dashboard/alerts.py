"""The alert conditions of ``deploy/prometheus/alerts.yml``, for staff as a banner on the dashboard,
and the scrape-time gauges those rules read that no other module exports.

Prometheus evaluates the rules over series in time; the banner judges the same conditions at once,
from the rows behind the same metrics (``UpstreamRequest`` is ``cortex_upstream_requests_total``,
the health report is ``cortex_health_state``) with the same thresholds (``CORTEX_ALERT_*``, whose
defaults are the rules' numbers: ``tests/core/test_alert_rules.py`` keeps them equal). The banner
has no ``for:`` delay: staff see a condition as soon as it holds.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import redis
from django.conf import settings
from django.db.models import Count, Min, Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from apps.connectors import health
from apps.core.logging import get_logger
from apps.core.models import UpstreamOutcome, UpstreamRequest
from apps.grounding.models import Verification

logger = get_logger(__name__)

ERROR_RATE_WINDOW = timedelta(minutes=10)
ERROR_RATE_MIN_REQUESTS = 5
REFUSALS_WINDOW = timedelta(minutes=15)


@dataclass(frozen=True)
class Alert:
    """A condition that holds now: the rule's name (``alert:`` in alerts.yml) and what to say."""

    name: str
    message: str


@dataclass(frozen=True)
class ReviewQueue:
    pending: int
    oldest_at: datetime | None

    def oldest_age_seconds(self, now: datetime) -> float:
        return (now - self.oldest_at).total_seconds() if self.oldest_at else 0.0


def review_queue() -> ReviewQueue:
    row = Verification.objects.pending_review().aggregate(pending=Count("id"), oldest=Min("created_at"))
    return ReviewQueue(pending=row["pending"], oldest_at=row["oldest"])


@dataclass(frozen=True)
class DataDirDisk:
    free_bytes: int
    size_bytes: int

    @property
    def free_ratio(self) -> float:
        return self.free_bytes / self.size_bytes if self.size_bytes else 1.0


def data_dir_disk() -> DataDirDisk:
    usage = shutil.disk_usage(settings.CORTEX_DATA_DIR)
    return DataDirDisk(free_bytes=usage.free, size_bytes=usage.total)


def _upstream_counts(now: datetime) -> dict[str, Any]:
    """Per upstream: requests sent and failed in the error-rate window, refused in the refusals
    window (one query)."""
    recent = Q(created_at__gt=now - ERROR_RATE_WINDOW)
    refused = Q(outcome=UpstreamOutcome.REFUSED)
    failed = Q(outcome__in=[UpstreamOutcome.FAILED, UpstreamOutcome.THROTTLED])
    return {
        row["upstream"]: row
        for row in UpstreamRequest.objects.filter(created_at__gt=now - REFUSALS_WINDOW, created_at__lte=now)
        .values("upstream")
        .annotate(
            sent=Count("id", filter=recent & ~refused),
            failed=Count("id", filter=recent & failed),
            refused=Count("id", filter=refused),
        )
        .order_by("upstream")
    }


def _ago(seconds: float) -> str:
    if seconds == float("inf"):
        return "ever"
    minutes = int(seconds // 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def alerts_firing(*, now: datetime | None = None, report: health.HealthReport | None = None) -> list[Alert]:
    """Every condition of alerts.yml that holds now, in the file's order (``report``: the health
    report already read for the same page)."""
    now = now or timezone.now()
    report = report or health.health_report(now=now)
    firing = [
        Alert(
            "CortexUpstreamDown", f"{h.kind.capitalize()} {h.target} is down: {h.last_error or 'no answer'}"
        )
        for h in report.down()
    ]
    counts = _upstream_counts(now)
    for upstream, row in counts.items():
        if (
            row["sent"] >= ERROR_RATE_MIN_REQUESTS
            and row["failed"] / row["sent"] > settings.CORTEX_ALERT_ERROR_RATIO
        ):
            firing.append(
                Alert("CortexUpstreamErrorRate",
                      f"{upstream} failed {row['failed']} of {row['sent']} requests in the last 10 minutes.")
            )  # fmt: skip
    queue = review_queue()
    age = queue.oldest_age_seconds(now)
    if age > settings.CORTEX_ALERT_REVIEW_QUEUE_HOURS * 3600:
        firing.append(
            Alert("CortexReviewQueueStale",
                  f"The oldest of {queue.pending} verifications waiting for review has waited {_ago(age)}.")
        )  # fmt: skip
    try:
        silent = health.worker_heartbeat_age()
    except redis.RedisError as error:  # the stamp is in Redis: unknown, not "never"
        logger.warning("alerts.heartbeat_unreadable", error=str(error))
        silent = 0.0
    if silent > settings.CORTEX_ALERT_WORKER_SILENT_SECONDS:
        firing.append(
            Alert("CortexWorkerSilent",
                  "No Celery worker has run the health probe " + ("ever." if silent == float("inf")
                                                                   else f"for {_ago(silent)}."))
        )  # fmt: skip
    for upstream, row in counts.items():
        if row["refused"] > settings.CORTEX_ALERT_RATE_LIMIT_REFUSALS:
            firing.append(
                Alert("CortexRateLimitRefusals",
                      f"The rate limiter refused {row['refused']} requests to {upstream} in 15 minutes.")
            )  # fmt: skip
    disk = data_dir_disk()
    if disk.free_ratio < settings.CORTEX_ALERT_DISK_FREE_RATIO:
        firing.append(
            Alert("CortexDataDirDiskLow", f"The data directory's disk is {disk.free_ratio:.0%} free.")
        )
    return firing


def alert_metrics() -> Iterator[GaugeMetricFamily]:
    """Scrape-time gauges of the review queue, the worker heartbeat and the data directory's disk."""
    now = timezone.now()
    queue = review_queue()
    yield GaugeMetricFamily(
        "cortex_review_queue_pending", "Verifications waiting for review.", value=queue.pending
    )
    yield GaugeMetricFamily(
        "cortex_review_queue_oldest_age_seconds",
        "How long the oldest verification waiting for review has waited (0: none waits).",
        value=queue.oldest_age_seconds(now),
    )
    yield GaugeMetricFamily(
        "cortex_worker_heartbeat_age_seconds",
        "Seconds since a Celery worker last ran the health probe (+Inf: never).",
        value=health.worker_heartbeat_age(),
    )
    disk = data_dir_disk()
    yield GaugeMetricFamily("cortex_data_dir_free_bytes", "Free bytes on CORTEX_DATA_DIR's file system.",
                            value=disk.free_bytes)  # fmt: skip
    yield GaugeMetricFamily("cortex_data_dir_size_bytes", "Size in bytes of CORTEX_DATA_DIR's file system.",
                            value=disk.size_bytes)  # fmt: skip
