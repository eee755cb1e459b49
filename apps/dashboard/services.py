"""The dashboard's roll-up of tool calls into ten-minute slots (``apps.dashboard.models``)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.db.models import BooleanField, Count, DateTimeField, ExpressionWrapper, F, Func, Q, Value
from django.utils import timezone

from apps.connectors.models import ToolCall, ToolCallStatus
from apps.core.logging import get_logger
from apps.dashboard.latency import latency_bucket
from apps.dashboard.models import ToolCallRollUp, ToolCallSlot, ToolLatencyWindow

logger = get_logger(__name__)

#: The hours the tool-call panel shows: the current one and the 23 before it.
TOOL_CALL_HOURS = 24
SLOT = timedelta(minutes=10)
#: A slot is rolled up this long after it ends. A call is stamped when its row is written, in
#: autocommit, so its row is visible well before; one committed later than this would be missed.
ROLL_UP_GRACE = timedelta(minutes=2)
#: Slots are kept two days (the panels read one); older ones are deleted by the roll-up.
KEEP_HOURS = 48

_LOCK_KEY = int.from_bytes(hashlib.sha256(b"dashboard-tool-calls-roll-up").digest()[:8], "big", signed=True)
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def hour_floor(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def slot_floor(moment: datetime) -> datetime:
    return moment.replace(minute=moment.minute - moment.minute % 10, second=0, microsecond=0)


def slot_ceil(moment: datetime) -> datetime:
    floor = slot_floor(moment)
    return floor if floor == moment else floor + SLOT


class SlotStart(Func):
    """Postgres' ``date_bin('10 minutes', field, 2000-01-01)``: the start of the row's slot."""

    function = "DATE_BIN"
    output_field = DateTimeField()

    def __init__(self, field: str) -> None:
        super().__init__(Value(SLOT), F(field), Value(_EPOCH))


def watermark_read() -> datetime | None:
    """The end of the rolled-up slots, or ``None`` before the first roll-up (one query)."""
    return ToolCallRollUp.objects.values_list("watermark", flat=True).first()


def latency_windows(watermark: datetime) -> tuple[datetime, datetime]:
    """The first hours of the two latency windows ending at ``watermark``: the panel's window while
    the watermark is in the current hour, and in the first minutes of the next one."""
    return (
        hour_floor(watermark) - timedelta(hours=TOOL_CALL_HOURS - 1),
        hour_floor(watermark) - timedelta(hours=TOOL_CALL_HOURS - 2),
    )


def tool_calls_roll_up(*, now: datetime | None = None) -> int:
    """Roll up every ten-minute slot of the last day not rolled up yet and ended
    ``ROLL_UP_GRACE`` ago: a ``ToolCallSlot`` per slot and status, the new watermark, and the two
    ``ToolLatencyWindow`` sets ending at it. Idempotent and serialised (an advisory lock): a second
    run finds nothing to do. Returns how many slots were rolled up. Run every minute by beat."""
    now = now or timezone.now()
    watermark = slot_floor(now - ROLL_UP_GRACE)  # slots before it are complete
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
        start = hour_floor(now) - timedelta(hours=TOOL_CALL_HOURS)
        previous = watermark_read()
        if previous is not None:
            start = max(start, previous)
        if start >= watermark:
            return 0
        ToolCallSlot.objects.filter(start__gte=start, start__lt=watermark).delete()
        ToolCallSlot.objects.bulk_create(
            ToolCallSlot(start=slot, status=status, calls=calls)
            for slot, status, calls in ToolCall.objects.filter(
                created_at__gte=start, created_at__lt=watermark
            )
            .annotate(slot=SlotStart("created_at"))
            .values_list("slot", "status")
            .annotate(calls=Count("id"))
            .order_by()
        )
        ToolCallRollUp.objects.update_or_create(pk=1, defaults={"watermark": watermark})
        _latency_windows_write(watermark)
        ToolCallSlot.objects.filter(start__lt=watermark - timedelta(hours=KEEP_HOURS)).delete()
    slots = int((watermark - start) / SLOT)
    logger.info("dashboard.tool_calls.rolled_up", slots=slots, watermark=watermark.isoformat())
    return slots


def _latency_windows_write(watermark: datetime) -> None:
    """Replace the latency windows by the two ending at ``watermark`` (``latency_windows``): per
    tool its calls, failures and histogram, both from one scan of the calls."""
    wide, narrow = latency_windows(watermark)
    # (connector, tool) → bucket → [calls, failed] for the wide window's first hour, and after it.
    first_hour: dict[tuple[str, str], dict[int, list[int]]] = defaultdict(dict)
    rest: dict[tuple[str, str], dict[int, list[int]]] = defaultdict(dict)
    for connector_slug, tool_name, bucket, early, calls, failed in (
        ToolCall.objects.filter(created_at__gte=wide, created_at__lt=watermark)
        .annotate(
            bucket=latency_bucket(),
            early=ExpressionWrapper(Q(created_at__lt=narrow), output_field=BooleanField()),
        )
        .values_list("connector_slug", "tool_name", "bucket", "early")
        .annotate(calls=Count("id"), failed=Count("id", filter=~Q(status=ToolCallStatus.OK)))
        .order_by()
    ):
        (first_hour if early else rest)[(connector_slug, tool_name)][bucket] = [calls, failed]
    wide_tools: dict[tuple[str, str], dict[int, list[int]]] = defaultdict(dict)
    for part in (first_hour, rest):
        for key, histogram in part.items():
            for bucket, (calls, failed) in histogram.items():
                totals = wide_tools[key].setdefault(bucket, [0, 0])
                totals[0] += calls
                totals[1] += failed
    ToolLatencyWindow.objects.all().delete()
    ToolLatencyWindow.objects.bulk_create(
        ToolLatencyWindow(
            first_hour=window_start,
            end_hour=watermark,
            connector_slug=connector_slug,
            tool_name=tool_name,
            calls=sum(calls for calls, _ in histogram.values()),
            failed=sum(failed for _, failed in histogram.values()),
            buckets=sorted(histogram),
            counts=[histogram[bucket][0] for bucket in sorted(histogram)],
        )
        for window_start, tools in ((wide, wide_tools), (narrow, rest))
        for (connector_slug, tool_name), histogram in tools.items()
    )
