"""Each dashboard selector over the known history (tests/dashboard/conftest.py), with its query count."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from apps.dashboard import selectors
from apps.dashboard.selectors import ErrorCount
from tests.dashboard.conftest import NOW

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


def test_upstream_budget_counts_the_last_hour(history, django_assert_num_queries) -> None:
    with django_assert_num_queries(1):
        rows = selectors.upstream_budget(now=NOW)
    assert [
        (r.upstream, r.sent, r.budget_per_hour, r.waits, r.waited_seconds, r.throttled, r.refused, r.failed)
        for r in rows
    ] == [
        ("arxiv", 3, 1200.0, 2, 4.0, 1, 1, 0),
        ("wikidata-action-api", 1, 18000.0, 0, 0.0, 0, 0, 1),
    ]
    assert rows[0].share == 3 / 1200


def test_tool_call_activity_per_hour_and_per_tool(history, django_assert_num_queries) -> None:
    with django_assert_num_queries(2):
        activity = selectors.tool_call_activity(now=NOW)
    assert len(activity.hours) == 24
    assert activity.hours[0].hour == datetime(2026, 3, 9, 13, tzinfo=UTC)
    assert activity.hours[-1].hour == datetime(2026, 3, 10, 12, tzinfo=UTC)
    busy = [(h.hour.hour, h.ok, h.failed) for h in activity.hours if h.calls]
    assert busy == [(13, 0, 1), (11, 1, 1), (12, 3, 0)]
    assert [(t.tool, t.connector, t.calls, t.failed, t.p50_ms, t.p95_ms) for t in activity.tools] == [
        ("a.one", "wiki-mcp", 4, 1, 250.0, 385.0),
        ("a.two", "wiki-mcp", 2, 1, 30.0, 48.0),
    ]


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
    with django_assert_num_queries(3):
        rows = selectors.errors_by_type(now=NOW)
    assert rows == [
        ErrorCount("arXiv runs", "rate_limited", 1),
        ErrorCount("fact runs", "terminal", 1),
        ErrorCount("fact runs", "timeout", 1),
        ErrorCount("tool calls", "rate_limited", 1),
        ErrorCount("tool calls", "upstream_error", 1),
    ]


def test_selectors_on_an_empty_database(db) -> None:
    assert selectors.upstream_budget(now=NOW) == []
    activity = selectors.tool_call_activity(now=NOW)
    assert activity.tools == [] and sum(h.calls for h in activity.hours) == 0
    assert selectors.errors_by_type(now=NOW) == []
