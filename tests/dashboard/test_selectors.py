"""Each dashboard selector over the known history (tests/dashboard/conftest.py), with its query count."""

from __future__ import annotations

import math
import random
from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection
from django.test import override_settings

from apps.connectors.models import Connector, ToolCall
from apps.dashboard import latency, selectors, services
from apps.dashboard.models import ToolCallRollUp, ToolCallSlot, ToolLatencyWindow
from apps.dashboard.selectors import ErrorCount
from tests.dashboard.conftest import NOW

# The limiters' settings the budget tests count on (per hour: 3600 / interval + burst - 1).
BUDGETS = override_settings(
    ARXIV_MIN_INTERVAL_SECONDS=3.0,
    WIKIDATA_API_INTERVAL_SECONDS=0.2,
    WIKIDATA_API_BURST=5,
    WIKIDATA_SPARQL_INTERVAL_SECONDS=1.0,
    WIKIDATA_SPARQL_BURST=1,
    WIKIDATA_VECTOR_INTERVAL_SECONDS=2.0,
    WIKIDATA_VECTOR_BURST=3,
)

pytestmark = pytest.mark.django_db


def test_connector_health_counts_tools_by_drift_state(history, django_assert_num_queries) -> None:
    with django_assert_num_queries(1):
        rows = selectors.connector_health()
    assert [
        (r.slug, r.in_sync, r.schema_changed, r.missing_upstream, r.unsynced, r.undeclared) for r in rows
    ] == [
        ("wiki-mcp", 2, 1, 1, 0, 1),
        ("arxiv", 0, 0, 0, 1, 0),
    ]
    assert rows[0].drifted == 2 and rows[0].tools == 4
    assert rows[1].last_synced_at is None and rows[1].last_sync_error == "no MCP server <b>here</b>"


@BUDGETS
def test_upstream_budget_counts_the_last_hour(history, django_assert_num_queries) -> None:
    # Two queries: the hour's requests, and the MCP connectors (each one an upstream).
    with django_assert_num_queries(2):
        rows = selectors.upstream_budget(now=NOW)
    assert [
        (r.upstream, r.sent, r.budget_per_hour, r.waits, r.waited_seconds, r.throttled, r.refused, r.failed)
        for r in rows
    ] == [
        ("arxiv", 3, 1200.0, 2, 4.0, 1, 1, 0),
        ("mcp:wiki-mcp", 0, None, 0, 0.0, 0, 0, 0),  # quiet, and no rate limit in its manifest
        ("wikidata-action-api", 1, 18000.0, 0, 0.0, 0, 0, 1),  # the budget recorded with the request
        ("wikidata-query-service", 0, 3600.0, 0, 0.0, 0, 0, 0),
        ("wikidata-vectordb", 0, 1802.0, 0, 0.0, 0, 0, 0),
    ]
    assert rows[0].share == 3 / 1200 and rows[3].share == 0.0 and rows[1].share is None


@BUDGETS
def test_upstream_budget_lists_quiet_upstreams_with_their_budget(db) -> None:
    Connector.objects.all().delete()
    Connector.objects.create(
        slug="limited",
        name="L",
        version="1",
        transport="mcp",
        endpoint="https://l.example/mcp",
        rate_limit_interval=2.0,
        rate_limit_burst=4,
    )
    Connector.objects.create(
        slug="off", name="Off", version="1", transport="mcp", endpoint="https://o.example/mcp", enabled=False
    )
    Connector.objects.create(slug="local", name="Local", version="1", transport="native",
                             endpoint="https://n.example")  # fmt: skip
    rows = selectors.upstream_budget(now=NOW)
    assert [(r.upstream, r.sent, r.budget_per_hour, r.share) for r in rows] == [
        ("arxiv", 0, 1200.0, 0.0),
        ("mcp:limited", 0, 1803.0, 0.0),
        ("wikidata-action-api", 0, 18004.0, 0.0),
        ("wikidata-query-service", 0, 3600.0, 0.0),
        ("wikidata-vectordb", 0, 1802.0, 0.0),
    ]


def _exact_percentiles(values: list[float], fractions: tuple[float, ...]) -> list[float]:
    """Postgres' percentile_cont in Python."""
    ordered = sorted(values)
    found = []
    for fraction in fractions:
        position = fraction * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        found.append(ordered[low] + (position - low) * (ordered[high] - ordered[low]))
    return found


def _within_error(estimate: float, exact: float) -> bool:
    return abs(estimate - exact) <= latency.RELATIVE_ERROR * exact + 0.05 + 1e-9  # + the rounding


def _tool_rows(activity: selectors.ToolCallActivity) -> list[tuple]:
    return [(t.tool, t.connector, t.calls, t.failed) for t in activity.tools]


def test_tool_call_activity_per_hour_and_per_tool(history, django_assert_num_queries) -> None:
    # Five queries: the watermark, the rolled-up slots per hour, the latency window, the calls after
    # the watermark per hour and per tool (one query grouped by both returns hours × tools × buckets).
    with django_assert_num_queries(5):
        activity = selectors.tool_call_activity(now=NOW)
    assert len(activity.hours) == 24
    assert activity.hours[0].hour == datetime(2026, 3, 9, 13, tzinfo=UTC)
    assert activity.hours[-1].hour == datetime(2026, 3, 10, 12, tzinfo=UTC)
    busy = [(h.hour.hour, h.ok, h.failed) for h in activity.hours if h.calls]
    assert busy == [(13, 0, 1), (11, 1, 1), (12, 3, 0)]
    assert _tool_rows(activity) == [("a.one", "wiki-mcp", 4, 1), ("a.two", "wiki-mcp", 2, 1)]
    # percentile_cont over the raw rows: a.one 250 / 385 ms, a.two 30 / 48 ms.
    exact = {"a.one": (250.0, 385.0), "a.two": (30.0, 48.0)}
    for tool in activity.tools:
        assert _within_error(tool.p50_ms, exact[tool.tool][0]) and _within_error(
            tool.p95_ms, exact[tool.tool][1]
        )


def test_rolled_up_calls_are_read_from_the_roll_up(history, django_assert_num_queries) -> None:
    live = selectors.tool_call_activity(now=NOW)
    errors = selectors.errors_by_type(now=NOW)
    # 03-09 12:00 up to 12:20, the last slot that ended two minutes before 12:30.
    assert services.tool_calls_roll_up(now=NOW) == 146
    watermark = datetime(2026, 3, 10, 12, 20, tzinfo=UTC)
    assert ToolCallRollUp.objects.get().watermark == watermark
    assert services.tool_calls_roll_up(now=NOW + timedelta(minutes=1)) == 0  # idempotent
    assert set(ToolLatencyWindow.objects.values_list("first_hour", "end_hour").distinct()) == {
        (datetime(2026, 3, 9, 13, tzinfo=UTC), watermark),
        (datetime(2026, 3, 9, 14, tzinfo=UTC), watermark),
    }
    # Drop the raw rows before the watermark: the panels still count them, so they read the roll-up.
    ToolCall.objects.filter(created_at__lt=watermark).delete()
    with django_assert_num_queries(5):
        assert selectors.tool_call_activity(now=NOW) == live
    with django_assert_num_queries(5):
        assert selectors.errors_by_type(now=NOW) == errors


def test_a_roll_up_behind_falls_back_to_the_raw_rows(history) -> None:
    live = selectors.tool_call_activity(now=NOW)
    services.tool_calls_roll_up(now=NOW)
    # Early in the next hour (13:01) the window starting an hour later and ending at the same
    # watermark (12:20) is read, the calls after it live.
    later = selectors.tool_call_activity(now=NOW + timedelta(minutes=31))
    assert [h.calls for h in later.hours[-3:]] == [2, 3, 0]
    assert _tool_rows(later) == [("a.one", "wiki-mcp", 4, 1), ("a.two", "wiki-mcp", 1, 0)]
    ToolLatencyWindow.objects.all().delete()  # the window missing: the slots alone are not enough
    assert selectors.tool_call_activity(now=NOW) == live
    ToolCallSlot.objects.all().delete()
    ToolCallRollUp.objects.all().delete()
    assert selectors.tool_call_activity(now=NOW) == live


def test_rolled_up_latency_matches_the_exact_percentiles_within_the_stated_error(db) -> None:
    rng = random.Random(16)
    durations: dict[str, list[float]] = {"fast": [], "slow": []}
    for index in range(1200):
        tool = "fast" if index % 3 else "slow"
        ms = rng.lognormvariate(2.0 if tool == "fast" else 6.0, 1.0)
        call = ToolCall.objects.create(tool_name=tool, requested_name=tool, upstream_name=tool,
                                       connector_slug="c", status="ok", duration_ms=ms)  # fmt: skip
        ToolCall.objects.filter(pk=call.pk).update(
            created_at=NOW - timedelta(minutes=rng.uniform(0, 60 * 23))
        )
        durations[tool].append(ms)
    services.tool_calls_roll_up(now=NOW)
    activity = selectors.tool_call_activity(now=NOW)
    assert [(t.tool, t.calls) for t in activity.tools] == [("fast", 800), ("slow", 400)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tool_name, percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY duration_ms)"
            " FROM connectors_toolcall GROUP BY tool_name"
        )
        exact = dict(cursor.fetchall())
    for tool in activity.tools:
        assert exact[tool.tool] == pytest.approx(_exact_percentiles(durations[tool.tool], (0.5, 0.95)))
        assert _within_error(tool.p50_ms, exact[tool.tool][0]), (tool, exact[tool.tool])
        assert _within_error(tool.p95_ms, exact[tool.tool][1]), (tool, exact[tool.tool])


def test_the_database_and_python_agree_on_buckets(db) -> None:
    values = [0.0, 0.05, 0.1, 0.11, 1.0, 9.99, 10.0, 123.4, 5000.0, 3.6e6, 1e9]
    for ms in values:
        ToolCall.objects.create(tool_name="t", requested_name="t", upstream_name="t",
                                connector_slug="c", status="ok", duration_ms=ms)  # fmt: skip
    found = dict(
        ToolCall.objects.annotate(bucket=latency.latency_bucket()).values_list("duration_ms", "bucket")
    )
    assert found == {ms: latency.bucket_of(ms) for ms in values}
    assert latency.bucket_of(1e9) == latency.BUCKETS - 1
    for ms in values[3:-2]:  # inside the bounded buckets: within the stated factor
        assert abs(latency.bucket_value(latency.bucket_of(ms)) / ms - 1) <= latency.RELATIVE_ERROR + 1e-12


def test_fact_run_outcomes_per_day(history, django_assert_num_queries) -> None:
    with django_assert_num_queries(1):
        outcomes = selectors.fact_run_outcomes(now=NOW)
    assert len(outcomes.days) == 14
    assert outcomes.days[0].day == date(2026, 2, 25)
    busy = [
        (d.day, d.succeeded, d.degraded, d.failed)
        for d in outcomes.days
        if d.succeeded + d.degraded + d.failed
    ]
    assert busy == [(date(2026, 3, 9), 1, 0, 0), (date(2026, 3, 10), 1, 1, 1)]
    assert outcomes.pending == 1


def test_verdicts_per_day_and_the_review_queue(history, django_assert_num_queries) -> None:
    with django_assert_num_queries(2):
        activity = selectors.verdict_activity(now=NOW)
    busy = [
        (d.day, d.supported, d.contradicted, d.unverified) for d in activity.days if d != activity.days[0]
    ]
    busy = [row for row in busy if sum(row[1:])]
    assert busy == [(date(2026, 3, 8), 0, 0, 2), (date(2026, 3, 10), 1, 1, 0)]
    assert activity.review_queue == 4


def test_errors_by_type_in_the_last_day(history, django_assert_num_queries) -> None:
    # The watermark, tool calls from the roll-up and from the raw rows, fact runs, arXiv runs.
    with django_assert_num_queries(5):
        rows = selectors.errors_by_type(now=NOW)
    assert rows == [
        ErrorCount("arXiv runs", "rate_limited", 1),
        ErrorCount("fact runs", "terminal", 1),
        ErrorCount("fact runs", "timeout", 1),
        ErrorCount("tool calls", "rate_limited", 1),
        ErrorCount("tool calls", "upstream_error", 1),
    ]


def test_selectors_on_an_empty_database(db) -> None:
    Connector.objects.all().delete()
    assert all(row.sent == 0 for row in selectors.upstream_budget(now=NOW))
    activity = selectors.tool_call_activity(now=NOW)
    assert activity.tools == [] and sum(h.calls for h in activity.hours) == 0
    assert selectors.errors_by_type(now=NOW) == []
