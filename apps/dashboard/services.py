"""The dashboard's roll-up of tool calls into completed hours (``apps.dashboard.models``)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Count, Max, Q
from django.db.models.functions import TruncHour
from django.utils import timezone

from apps.connectors.models import ToolCall, ToolCallStatus
from apps.core.logging import get_logger
from apps.dashboard.latency import latency_bucket
from apps.dashboard.models import ToolCallHour, ToolLatencyWindow

logger = get_logger(__name__)

#: The hours the tool-call panel shows: the current one and the 23 before it.
TOOL_CALL_HOURS = 24
#: An hour is rolled up this long after it ends. A call is stamped when its row is written, in
#: autocommit, so its row is visible well before; one committed later than this would be missed.
ROLL_UP_GRACE = timedelta(minutes=2)
#: Hourly rows are kept two days (the panel reads one); older ones are deleted by the roll-up.
KEEP_HOURS = 48

_LOCK_KEY = int.from_bytes(hashlib.sha256(b"dashboard-tool-calls-roll-up").digest()[:8], "big", signed=True)


def hour_floor(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def tool_calls_roll_up(*, now: datetime | None = None) -> int:
    """Roll up every completed hour of the last day not rolled up yet (ended ``ROLL_UP_GRACE`` ago):
    a ``ToolCallHour`` per hour, and, when the watermark moves, the two ``ToolLatencyWindow`` sets
    the panel can ask for. Idempotent and serialised (an advisory lock): a second run finds nothing
    to do. Returns how many hours were rolled up. Run every minute by Celery beat."""
    now = now or timezone.now()
    watermark = hour_floor(now - ROLL_UP_GRACE)  # hours before it are complete
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
        start = hour_floor(now) - timedelta(hours=TOOL_CALL_HOURS)
        latest = ToolCallHour.objects.aggregate(latest=Max("hour"))["latest"]
        if latest is not None:
            start = max(start, latest + timedelta(hours=1))
        if start >= watermark:
            return 0
        failed = ~Q(status=ToolCallStatus.OK)
        counted: dict[datetime, tuple[int, int]] = {
            hour: (calls, failed_calls)
            for hour, calls, failed_calls in ToolCall.objects.filter(
                created_at__gte=start, created_at__lt=watermark
            )
            .annotate(hour=TruncHour("created_at"))
            .values_list("hour")
            .annotate(calls=Count("id"), failed=Count("id", filter=failed))
            .order_by()
        }
        hours = int((watermark - start) / timedelta(hours=1))
        ToolCallHour.objects.bulk_create(
            [
                ToolCallHour(
                    hour=hour, calls=counted.get(hour, (0, 0))[0], failed=counted.get(hour, (0, 0))[1]
                )
                for hour in (start + timedelta(hours=offset) for offset in range(hours))
            ],
            update_conflicts=True,
            unique_fields=["hour"],
            update_fields=["calls", "failed"],
        )
        for first_hour in (
            watermark - timedelta(hours=TOOL_CALL_HOURS - 1),
            watermark - timedelta(hours=TOOL_CALL_HOURS - 2),
        ):
            _latency_window_write(first_hour, watermark)
        ToolLatencyWindow.objects.exclude(end_hour=watermark).delete()
        ToolCallHour.objects.filter(hour__lt=watermark - timedelta(hours=KEEP_HOURS)).delete()
    logger.info("dashboard.tool_calls.rolled_up", hours=hours, watermark=watermark.isoformat())
    return hours


def _latency_window_write(first_hour: datetime, end_hour: datetime) -> None:
    """Replace the window ``[first_hour, end_hour)``: per tool its calls, failures and histogram."""
    per_tool: dict[tuple[str, str], dict[int, tuple[int, int]]] = defaultdict(dict)
    rows = (
        ToolCall.objects.filter(created_at__gte=first_hour, created_at__lt=end_hour)
        .annotate(bucket=latency_bucket())
        .values_list("connector_slug", "tool_name", "bucket")
        .annotate(calls=Count("id"), failed=Count("id", filter=~Q(status=ToolCallStatus.OK)))
        .order_by()
    )
    for connector_slug, tool_name, bucket, calls, failed in rows:
        per_tool[(connector_slug, tool_name)][bucket] = (calls, failed)
    ToolLatencyWindow.objects.filter(first_hour=first_hour, end_hour=end_hour).delete()
    ToolLatencyWindow.objects.bulk_create(
        [
            ToolLatencyWindow(
                first_hour=first_hour,
                end_hour=end_hour,
                connector_slug=connector_slug,
                tool_name=tool_name,
                calls=sum(calls for calls, _ in histogram.values()),
                failed=sum(failed for _, failed in histogram.values()),
                buckets=sorted(histogram),
                counts=[histogram[bucket][0] for bucket in sorted(histogram)],
            )
            for (connector_slug, tool_name), histogram in per_tool.items()
        ]
    )
