"""The home page's dashboard: one read per chart, each over a fixed window ending ``now``.

Reads only: every figure comes from rows the apps already write — connectors and their tools
(drift from sync), ``UpstreamRequest`` (written by each upstream's gate), ``ToolCall`` (every
dispatched call, its ten-minute slots read from their roll-up: ``apps.dashboard.models``), fact runs,
arXiv search runs and verifications. Counts are exact; tool latency percentiles are read from a
log-scale histogram, within 4.9 % of the exact value (``apps.dashboard.latency``). Each selector
runs a fixed number of queries whatever the data (tests pin the counts; the bench
``python -m bench dashboard`` times them on 100k tool calls and 10k runs).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Count, Max, Q, Sum
from django.db.models.functions import TruncDate, TruncHour
from django.utils import timezone

from apps.arxiv.models import SearchRun
from apps.arxiv.services import LIMITER_NAME as ARXIV_UPSTREAM
from apps.arxiv.services import arxiv_limiter
from apps.connectors.gateway import connector_upstream
from apps.connectors.models import (
    Connector,
    ConnectorSync,
    DriftState,
    RemoteTool,
    ToolCall,
    ToolCallStatus,
    Transport,
)
from apps.core.models import RunStatus, UpstreamOutcome, UpstreamRequest
from apps.dashboard import latency, services
from apps.dashboard.models import ToolCallSlot, ToolLatencyWindow
from apps.dashboard.services import TOOL_CALL_HOURS
from apps.grounding.models import Verdict, Verification
from apps.wikidata.clients import upstream_budgets
from apps.wikidata.models import FactRun

BUDGET_WINDOW = timedelta(hours=1)
ERROR_WINDOW = timedelta(hours=24)
DAYS = 14


def _now(now: datetime | None) -> datetime:
    return now if now is not None else timezone.now()


# --- Connectors and their health ----------------------------------------------------------------


@dataclass(frozen=True)
class ConnectorHealth:
    slug: str
    name: str
    transport: str
    enabled: bool
    last_synced_at: datetime | None
    last_sync_error: str
    in_sync: int
    schema_changed: int
    missing_upstream: int
    unsynced: int
    undeclared: int  # found upstream at the last sync, not declared
    description_changed: int = 0  # held for an operator's approval, like a changed schema

    @property
    def drifted(self) -> int:
        return self.schema_changed + self.description_changed + self.missing_upstream

    @property
    def tools(self) -> int:
        return self.in_sync + self.drifted + self.unsynced


def connector_health() -> list[ConnectorHealth]:
    """Every connector with its last sync and its tools counted by drift state (one query)."""

    def tools_in(state: str) -> Count:
        return Count("tools", filter=Q(tools__drift=state))

    rows = Connector.objects.annotate(
        in_sync=tools_in(DriftState.IN_SYNC),
        schema_changed=tools_in(DriftState.SCHEMA_CHANGED),
        description_changed=tools_in(DriftState.DESCRIPTION_CHANGED),
        missing_upstream=tools_in(DriftState.MISSING_UPSTREAM),
        unsynced=tools_in(DriftState.UNSYNCED),
    ).order_by("position", "slug")
    return [
        ConnectorHealth(
            slug=row.slug,
            name=row.name,
            transport=row.get_transport_display(),
            enabled=row.enabled,
            last_synced_at=row.last_synced_at,
            last_sync_error=row.last_sync_error,
            in_sync=row.in_sync,
            schema_changed=row.schema_changed,
            missing_upstream=row.missing_upstream,
            unsynced=row.unsynced,
            undeclared=len(row.undeclared_upstream_tools),
            description_changed=row.description_changed,
        )
        for row in rows
    ]


@dataclass(frozen=True)
class ConnectorDrift:
    """What an operator should look at: upstream changes awaiting approval, and the last syncs that
    found something (added, removed, renamed or changed tools)."""

    pending: list[RemoteTool]
    recent: list[ConnectorSync]


def connector_drift(*, limit: int = 5) -> ConnectorDrift:
    """Two queries: the tools awaiting approval (oldest first) and the ``limit`` latest drifted syncs."""
    pending = RemoteTool.objects.pending_approval().select_related("connector").order_by("pending_since")
    recent = ConnectorSync.objects.with_drift().select_related("connector").order_by("-started_at")
    return ConnectorDrift(pending=list(pending[:limit]), recent=list(recent[:limit]))


# --- Upstream budget use ------------------------------------------------------------------------


@dataclass(frozen=True)
class UpstreamBudget:
    upstream: str
    sent: int  # requests that reached the upstream (our limiter's refusals excluded)
    budget_per_hour: float | None  # None: the upstream has no shared limit
    waits: int  # requests the shared limiter made wait for their slot
    waited_seconds: float
    throttled: int  # HTTP 429 from the upstream
    refused: int  # refused by our limiter: the wait would have passed the caller's deadline
    failed: int

    @property
    def share(self) -> float | None:
        """The hour's requests as a share of the budget (1.0: all of it)."""
        return self.sent / self.budget_per_hour if self.budget_per_hour else None


def known_upstreams() -> dict[str, float | None]:
    """Every upstream CortexWeb sends requests to, with its hourly budget under today's settings:
    arXiv, the Wikidata services and each enabled MCP connector (``None``: no shared limit). One
    query (the connectors)."""
    known: dict[str, float | None] = {ARXIV_UPSTREAM: arxiv_limiter().per_hour, **upstream_budgets()}
    for connector in Connector.objects.filter(transport=Transport.MCP, enabled=True):
        upstream, budget = connector_upstream(connector)
        known[upstream] = budget
    return known


def upstream_budget(*, now: datetime | None = None) -> list[UpstreamBudget]:
    """Every known upstream, and any other that saw requests in the last hour, by name: requests
    sent against the hourly budget in force (the largest recorded in the hour; today's setting for
    an upstream without requests), waits, 429s, refusals and failures (two queries)."""
    since = _now(now) - BUDGET_WINDOW
    rows: dict[str, dict[str, Any]] = {
        row["upstream"]: dict(row)
        for row in UpstreamRequest.objects.filter(created_at__gt=since, created_at__lte=_now(now))
        .values("upstream")
        .annotate(
            sent=Count("id", filter=~Q(outcome=UpstreamOutcome.REFUSED)),
            waits=Count("id", filter=Q(waited_ms__gt=0)),
            waited_ms=Sum("waited_ms"),
            throttled=Count("id", filter=Q(outcome=UpstreamOutcome.THROTTLED)),
            refused=Count("id", filter=Q(outcome=UpstreamOutcome.REFUSED)),
            failed=Count("id", filter=Q(outcome=UpstreamOutcome.FAILED)),
            budget=Max("budget_per_hour"),
        )
        .order_by()
    }
    known = known_upstreams()
    quiet = {"sent": 0, "waits": 0, "waited_ms": 0.0, "throttled": 0, "refused": 0, "failed": 0}
    budgets = []
    for upstream in sorted(known.keys() | rows.keys()):
        row = rows.get(upstream) or {**quiet, "budget": known[upstream]}
        budgets.append(
            UpstreamBudget(
                upstream=upstream,
                sent=row["sent"],
                budget_per_hour=row["budget"],
                waits=row["waits"],
                waited_seconds=round((row["waited_ms"] or 0.0) / 1000, 1),
                throttled=row["throttled"],
                refused=row["refused"],
                failed=row["failed"],
            )
        )
    return budgets


# --- Tool calls ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class HourCalls:
    hour: datetime
    ok: int
    failed: int

    @property
    def calls(self) -> int:
        return self.ok + self.failed


@dataclass(frozen=True)
class ToolLatency:
    tool: str
    connector: str
    calls: int
    failed: int
    p50_ms: float  # read from the latency histogram: within 4.9 % of the exact percentile
    p95_ms: float


@dataclass(frozen=True)
class ToolCallActivity:
    hours: list[HourCalls]  # oldest first, every hour of the window, empty ones included
    tools: list[ToolLatency]  # most called first


def tool_call_activity(*, now: datetime | None = None) -> ToolCallActivity:
    """Calls per hour over the last 24 hours (OK and not), and per tool its calls with p50/p95
    latency over the same window (five queries).

    The calls before the watermark come from the roll-up (``services.tool_calls_roll_up``): the
    ten-minute slots per hour, and the latency window from the first hour to the watermark, one
    row per tool. The calls after it (at most the last twelve minutes) are read from ``ToolCall``.
    When the roll-up is behind — no window for the watermark, or one whose calls do not add up to
    the slots' — every call of the day is read from ``ToolCall``: slower, never stale."""
    end = _now(now)
    current_hour = end.replace(minute=0, second=0, microsecond=0)
    first_hour = current_hour - timedelta(hours=TOOL_CALL_HOURS - 1)
    watermark = max(min(services.watermark_read() or first_hour, services.slot_floor(end)), first_hour)
    is_failed = ~Q(status=ToolCallStatus.OK)
    rolled = list(
        ToolCallSlot.objects.filter(start__gte=first_hour, start__lt=watermark)
        .annotate(hour=TruncHour("start"))
        .values_list("hour")
        .annotate(hour_calls=Sum("calls"), hour_failed=Sum("calls", filter=is_failed))
        .order_by()
    )
    windows = list(
        ToolLatencyWindow.objects.filter(first_hour=first_hour, end_hour=watermark).values_list(
            "connector_slug", "tool_name", "calls", "failed", "buckets", "counts"
        )
    )
    if sum(window[2] for window in windows) != sum(calls for _, calls, _ in rolled):
        rolled, windows, watermark = [], [], first_hour

    per_hour: dict[datetime, list[int]] = {hour: [calls, failed or 0] for hour, calls, failed in rolled}
    tool_calls: dict[tuple[str, str], list[int]] = {}
    histograms: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
    for connector_slug, tool_name, calls, failed, buckets, counts in windows:
        tool_calls[(connector_slug, tool_name)] = [calls, failed]
        histograms[(connector_slug, tool_name)] = dict(zip(buckets, counts, strict=True))
    # The calls after the watermark, twice: per hour, and per tool and bucket (grouped by both at
    # once, the rows would multiply, and converting each row's hour costs more than the query).
    live = ToolCall.objects.filter(created_at__gte=watermark, created_at__lte=end)
    counted = {"calls": Count("id"), "failed": Count("id", filter=is_failed)}
    for hour, calls, failed_calls in (
        live.annotate(hour=TruncHour("created_at")).values_list("hour").annotate(**counted).order_by()
    ):
        totals = per_hour.setdefault(hour, [0, 0])  # the watermark's hour is in both
        totals[0] += calls
        totals[1] += failed_calls
    for connector_slug, tool_name, bucket, calls, failed_calls in (
        live.annotate(bucket=latency.latency_bucket())
        .values_list("connector_slug", "tool_name", "bucket")
        .annotate(**counted)
        .order_by()
    ):
        totals = tool_calls.setdefault((connector_slug, tool_name), [0, 0])
        totals[0] += calls
        totals[1] += failed_calls
        histogram = histograms[(connector_slug, tool_name)]
        histogram[bucket] = histogram.get(bucket, 0) + calls

    hours = []
    for offset in range(TOOL_CALL_HOURS):
        hour = first_hour + timedelta(hours=offset)
        calls, failed_calls = per_hour.get(hour, (0, 0))
        hours.append(HourCalls(hour=hour, ok=calls - failed_calls, failed=failed_calls))
    tools = []
    for (connector_slug, tool_name), (calls, failed) in tool_calls.items():
        p50, p95 = latency.percentiles(histograms[(connector_slug, tool_name)], (0.5, 0.95))
        tools.append(ToolLatency(tool=tool_name, connector=connector_slug, calls=calls, failed=failed,
                                 p50_ms=round(p50, 1), p95_ms=round(p95, 1)))  # fmt: skip
    tools.sort(key=lambda tool: (-tool.calls, tool.tool, tool.connector))
    return ToolCallActivity(hours=hours, tools=tools)


# --- Fact runs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DayRuns:
    day: date
    succeeded: int  # answered from Wikidata
    degraded: int  # answered from local knowledge and stored facts: Wikidata failed
    failed: int


@dataclass(frozen=True)
class FactRunOutcomes:
    days: list[DayRuns]  # oldest first, every day of the window
    pending: int  # queued or running now


def _days(end: datetime) -> list[date]:
    today = timezone.localdate(end)
    return [today - timedelta(days=DAYS - 1 - offset) for offset in range(DAYS)]


def _window_start(days: list[date]) -> datetime:
    return timezone.make_aware(datetime.combine(days[0], datetime.min.time()))


def fact_run_outcomes(*, now: datetime | None = None) -> FactRunOutcomes:
    """Fact runs created on each of the last 14 days by outcome, and how many are pending (one query)."""
    end = _now(now)
    days = _days(end)
    counts: dict[date, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    pending = 0
    rows = (
        FactRun.objects.filter(created_at__gte=_window_start(days), created_at__lte=end)
        .annotate(day=TruncDate("created_at"))
        .values("day", "status")
        .annotate(runs=Count("id"))
    )
    for row in rows:
        if row["status"] == RunStatus.FAILED:
            counts[row["day"]]["failed"] += row["runs"]
        elif row["status"] == RunStatus.DEGRADED:
            counts[row["day"]]["degraded"] += row["runs"]
        elif row["status"] == RunStatus.SUCCEEDED:
            counts[row["day"]]["succeeded"] += row["runs"]
        else:
            pending += row["runs"]
    return FactRunOutcomes(
        days=[
            DayRuns(
                day=day,
                succeeded=counts[day]["succeeded"],
                degraded=counts[day]["degraded"],
                failed=counts[day]["failed"],
            )
            for day in days
        ],
        pending=pending,
    )


# --- Verdicts and the review queue ---------------------------------------------------------------


@dataclass(frozen=True)
class DayVerdicts:
    day: date
    supported: int
    contradicted: int
    unverified: int


@dataclass(frozen=True)
class VerdictActivity:
    days: list[DayVerdicts]  # oldest first, every day of the window
    review_queue: int  # verifications waiting for an operator, of any age


def verdict_activity(*, now: datetime | None = None) -> VerdictActivity:
    """Verifications made on each of the last 14 days by verdict, and the review queue's size (two
    queries)."""
    end = _now(now)
    days = _days(end)
    counts: dict[date, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows = (
        Verification.objects.filter(created_at__gte=_window_start(days), created_at__lte=end)
        .annotate(day=TruncDate("created_at"))
        .values("day", "verdict")
        .annotate(verifications=Count("id"))
    )
    for row in rows:
        counts[row["day"]][row["verdict"]] += row["verifications"]
    return VerdictActivity(
        days=[
            DayVerdicts(
                day=day,
                supported=counts[day][Verdict.SUPPORTED],
                contradicted=counts[day][Verdict.CONTRADICTED],
                unverified=counts[day][Verdict.UNVERIFIED],
            )
            for day in days
        ],
        review_queue=Verification.objects.pending_review().count(),
    )


# --- Errors by type -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorCount:
    source: str  # tool calls, fact runs, arXiv runs
    type: str
    count: int


def errors_by_type(*, now: datetime | None = None) -> list[ErrorCount]:
    """Failures of the last 24 hours by where and what: tool calls by status, fact runs (failed or
    degraded) and arXiv runs (failed or rate limited) by their recorded error type; most first
    (five queries).

    Tool calls come from the roll-up's ten-minute slots wholly inside the day and before the
    watermark, and from ``ToolCall`` for the rest: the minutes before the first whole slot and
    those after the watermark (all of the day when the roll-up is behind)."""
    end = _now(now)
    since = end - ERROR_WINDOW
    window = Q(created_at__gt=since, created_at__lte=end)
    first_slot = services.slot_ceil(since)
    # Read in the past (tests), the slots after ``end`` are not wanted: clamp to its slot.
    watermark = max(min(services.watermark_read() or first_slot, services.slot_floor(end)), first_slot)
    errors = [
        ErrorCount("tool calls", status, count)
        for status, count in ToolCallSlot.objects.filter(start__gte=first_slot, start__lt=watermark)
        .exclude(status=ToolCallStatus.OK)
        .values_list("status")
        .annotate(status_calls=Sum("calls"))
        .order_by()
    ]
    unrolled = Q(created_at__gt=since, created_at__lt=first_slot) | Q(
        created_at__gte=watermark, created_at__lte=end
    )
    errors += [
        ErrorCount("tool calls", status, count)
        for status, count in ToolCall.objects.filter(unrolled if watermark > first_slot else window)
        .exclude(status=ToolCallStatus.OK)
        .values_list("status")
        .annotate(count=Count("id"))
        .order_by()
    ]
    errors += [
        ErrorCount(
            "fact runs", row["error_type"] or ("degraded" if row["degraded"] else "failed"), row["count"]
        )
        for row in FactRun.objects.filter(window)
        .filter(Q(status=RunStatus.FAILED) | Q(degraded=True))
        .values("error_type", "degraded")
        .annotate(count=Count("id"))
    ]
    errors += [
        ErrorCount("arXiv runs", row["error_type"] or row["status"], row["count"])
        for row in SearchRun.objects.filter(window)
        .exclude(status__in=[RunStatus.SUCCEEDED, RunStatus.QUEUED, RunStatus.RUNNING])
        .values("error_type", "status")
        .annotate(count=Count("id"))
    ]
    merged: dict[tuple[str, str], int] = defaultdict(int)
    for error in errors:
        merged[(error.source, error.type)] += error.count
    return sorted(
        (ErrorCount(source, kind, count) for (source, kind), count in merged.items()),
        key=lambda error: (-error.count, error.source, error.type),
    )
