"""The home dashboard's selectors at scale (issue 16 target: < 50 ms each).

Seeds, inside one transaction that is rolled back at the end: 100,000 tool calls over 20 tools
spread across the last 30 days, 10,000 fact runs and 10,000 verifications over the last 14 days,
2,000 arXiv search runs over the last day and 20,000 upstream requests over the last two hours
(half inside the budget's hour), then ``ANALYZE``. The tool-call roll-up then runs (timed from
scratch: ``tool_calls_roll_up``, ``ROLL_UPS`` times) as if beat had last run it 11 minutes ago, so
the panels read 13 to 23 minutes of calls from the raw rows: more than they ever do in use (beat
runs it every minute and a slot waits two minutes, so at most 13). Each selector is timed
``ROUNDS`` times after a warm-up. Then, seeded again, the
worst case for the two selectors that read tool calls: all 100,000 in the last 24 hours, so both
windows cover every row; last, both with the roll-up deleted (beat behind: every call of the day
read from the raw rows).
Needs a migrated database (``make run`` once, or ``manage.py migrate``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from apps.arxiv.models import SearchRun
from apps.connectors.models import ToolCall, ToolCallStatus
from apps.core.models import RunStatus, UpstreamOutcome, UpstreamRequest
from apps.dashboard import selectors, services
from apps.dashboard.models import ToolCallRollUp, ToolCallSlot, ToolLatencyWindow
from apps.grounding.models import ReviewStatus, Verdict, Verification
from apps.wikidata.models import FactRun
from bench import timed

TOOL_CALLS = int(os.environ.get("BENCH_TOOL_CALLS", "100000"))
RUNS = int(os.environ.get("BENCH_RUNS", "10000"))
BATCH = 5000
WARMUP, ROUNDS = 3, 40
ROLL_UPS = 3
SEED = 16
TABLES = (
    "connectors_toolcall",
    "wikidata_factrun",
    "grounding_verification",
    "arxiv_searchrun",
    "core_upstreamrequest",
    "dashboard_toolcallrollup",
    "dashboard_toolcallslot",
    "dashboard_toollatencywindow",
)


class _Rollback(Exception):
    pass


def _bulk(model: type, rows: list) -> None:
    model.objects.bulk_create(rows, batch_size=BATCH)


@contextmanager
def _stamped_as_given(*models: type) -> Iterator[None]:
    """Let ``bulk_create`` keep the seeded ``created_at`` (``auto_now_add`` would stamp "now"), so
    rows are inserted once at their time: backdating them with an UPDATE would leave every row twice
    in the heap for the rest of the transaction and time the bloat instead of the selectors."""
    fields = [model._meta.get_field("created_at") for model in models]
    for field in fields:
        field.auto_now_add = False
    try:
        yield
    finally:
        for field in fields:
            field.auto_now_add = True


def _ago(rng: random.Random, now: datetime, seconds: float) -> datetime:
    return now - timedelta(seconds=rng.uniform(0, seconds))


def _seed(rng: random.Random, *, tool_call_days: float) -> None:
    now = timezone.now()
    statuses = [ToolCallStatus.OK] * 17 + [ToolCallStatus.UPSTREAM_ERROR, ToolCallStatus.RATE_LIMITED,
                                           ToolCallStatus.INVALID_ARGUMENTS]  # fmt: skip
    _bulk(
        ToolCall,
        [
            ToolCall(
                tool_name=f"bench.tool{index % 20}",
                requested_name=f"bench.tool{index % 20}",
                upstream_name="t",
                connector_slug=f"bench-{index % 3}",
                status=rng.choice(statuses),
                duration_ms=rng.lognormvariate(4.5, 0.8),
                created_at=_ago(rng, now, tool_call_days * 86400),
            )
            for index in range(TOOL_CALLS)
        ],
    )
    outcomes = [(RunStatus.SUCCEEDED, False)] * 8 + [(RunStatus.SUCCEEDED, True), (RunStatus.FAILED, False)]
    fact_runs = []
    for _ in range(RUNS):
        status, degraded = rng.choice(outcomes)
        fact_runs.append(
            FactRun(
                question="bench",
                status=status,
                degraded=degraded,
                error_type="timeout" if degraded else "",
                created_at=_ago(rng, now, 14 * 86400),
            )
        )
    _bulk(FactRun, fact_runs)
    _bulk(
        Verification,
        [
            Verification(
                claim="bench",
                verdict=rng.choice(list(Verdict)),
                confidence=0.5,
                latency_ms=1.0,
                review_status=rng.choice([ReviewStatus.PENDING, ReviewStatus.NOT_NEEDED]),
                created_at=_ago(rng, now, 14 * 86400),
            )
            for _ in range(RUNS)
        ],
    )
    _bulk(
        SearchRun,
        [
            SearchRun(kind="search", cache_key="bench", parameters={}, arxiv_params=[],
                      status=rng.choice([RunStatus.SUCCEEDED, RunStatus.FAILED]), error_type="terminal",
                      created_at=_ago(rng, now, 86400))
            for _ in range(RUNS // 5)
        ],
    )  # fmt: skip
    _bulk(
        UpstreamRequest,
        [
            UpstreamRequest(
                upstream=rng.choice(["arxiv", "wikidata-action-api", "wikidata-query-service", "mcp:bench"]),
                outcome=rng.choice(list(UpstreamOutcome)),
                waited_ms=rng.choice([0.0, 0.0, 1200.0]),
                duration_ms=200.0,
                budget_per_hour=1200.0,
                created_at=_ago(rng, now, 7200),
            )
            for _ in range(RUNS * 2)
        ],
    )
    _analyze(*TABLES)


def _analyze(*tables: str) -> None:
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ANALYZE {table}")


SELECTORS = (
    ("connector_health", selectors.connector_health),
    ("upstream_budget", selectors.upstream_budget),
    ("tool_call_activity", selectors.tool_call_activity),
    ("fact_run_outcomes", selectors.fact_run_outcomes),
    ("verdict_activity", selectors.verdict_activity),
    ("errors_by_type", selectors.errors_by_type),
)


def _roll_up_deleted() -> None:
    ToolCallRollUp.objects.all().delete()
    ToolCallSlot.objects.all().delete()
    ToolLatencyWindow.objects.all().delete()


def _rolled_up(report, suffix: str) -> None:
    """Roll the last day up from scratch ``ROLL_UPS`` times (the last one stays), as beat would
    have 11 minutes ago."""
    late = timezone.now() - timedelta(minutes=11)
    samples = []
    for _ in range(ROLL_UPS):
        _roll_up_deleted()
        samples += timed(lambda: services.tool_calls_roll_up(now=late), 1)
    report(f"dashboard.tool_calls_roll_up{suffix}", samples)
    _analyze("dashboard_toolcallslot", "dashboard_toollatencywindow")


def _timed_on(report, *, tool_call_days: float, names: tuple[str, ...], suffix: str) -> None:
    """Seed in a transaction, roll up, time the named selectors, roll everything back."""
    try:
        with transaction.atomic():
            _roll_up_deleted()  # the bench's own roll-up, not one left from earlier tool calls
            with _stamped_as_given(ToolCall, FactRun, Verification, SearchRun):
                _seed(random.Random(SEED), tool_call_days=tool_call_days)
            _rolled_up(report, suffix)
            for name, selector in SELECTORS:
                if name in names:
                    timed(selector, WARMUP)
                    report(f"dashboard.{name}{suffix}", timed(selector, ROUNDS))
            if suffix:
                _roll_up_deleted()
                for name, selector in SELECTORS:
                    if name in names:
                        timed(selector, WARMUP)
                        report(f"dashboard.{name}{suffix[:-1]}, no roll-up)", timed(selector, ROUNDS))
            raise _Rollback
    except _Rollback:
        pass


def _vacuum() -> None:
    """Earlier bench runs leave their rolled-back rows dead in the tables and indexes until autovacuum
    comes by; the scans would step over them. Start from clean tables."""
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")


def run(report) -> None:
    _vacuum()
    print(f"{TOOL_CALLS} tool calls over 30 days, {RUNS} fact runs, {RUNS} verifications", flush=True)
    _timed_on(report, tool_call_days=30, names=tuple(name for name, _ in SELECTORS), suffix="")
    print(f"the worst case: all {TOOL_CALLS} tool calls in the last 24 hours", flush=True)
    _timed_on(
        report, tool_call_days=23 / 24, names=("tool_call_activity", "errors_by_type"), suffix=" (worst)"
    )
