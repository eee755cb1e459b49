"""A small, known history for the dashboard: two connectors, upstream requests, tool calls, fact
runs, an arXiv run and verifications, at fixed times before ``NOW``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from apps.arxiv.models import SearchRun
from apps.connectors.models import Connector, DriftState, RemoteTool, ToolCall
from apps.core.models import RunStatus, UpstreamRequest
from apps.grounding.models import ReviewStatus, Verdict, Verification
from apps.wikidata.models import FactRun

NOW = datetime(2026, 3, 10, 12, 30, tzinfo=UTC)


def _at(row_model, rows: list, **times: datetime) -> None:
    """auto_now_add fields ignore the value given at creation: set the times afterwards."""
    for row in rows:
        row_model.objects.filter(pk=row.pk).update(**times)


@pytest.fixture
def history(db) -> dict:
    Connector.objects.all().delete()
    synced = NOW - timedelta(hours=2)
    wiki = Connector.objects.create(slug="wiki-mcp", name="Wikidata MCP", version="1", transport="mcp",
                                    endpoint="https://wd.example/mcp", position=0,
                                    undeclared_upstream_tools=["new"], last_synced_at=synced)  # fmt: skip
    native = Connector.objects.create(slug="arxiv", name="arXiv", version="1", transport="native",
                                      endpoint="https://export.arxiv.org", position=1,
                                      last_sync_error="no MCP server <b>here</b>")  # fmt: skip
    for name, drift in (
        ("a.one", DriftState.IN_SYNC),
        ("a.two", DriftState.IN_SYNC),
        ("a.three", DriftState.SCHEMA_CHANGED),
        ("a.four", DriftState.MISSING_UPSTREAM),
    ):
        RemoteTool.objects.create(connector=wiki, name=name, drift=drift)
    RemoteTool.objects.create(connector=native, name="arxiv.search")

    UpstreamRequest.objects.bulk_create([
        UpstreamRequest(upstream="arxiv", outcome="ok", waited_ms=1500, duration_ms=1800,
                        budget_per_hour=1200, created_at=NOW - timedelta(minutes=5)),
        UpstreamRequest(upstream="arxiv", outcome="ok", waited_ms=0, duration_ms=300,
                        budget_per_hour=1200, created_at=NOW - timedelta(minutes=50)),
        UpstreamRequest(upstream="arxiv", outcome="throttled", http_status=429, waited_ms=2500,
                        duration_ms=2600, budget_per_hour=1200, created_at=NOW - timedelta(minutes=20)),
        UpstreamRequest(upstream="arxiv", outcome="refused", waited_ms=0, duration_ms=1,
                        budget_per_hour=1200, created_at=NOW - timedelta(minutes=19)),
        UpstreamRequest(upstream="arxiv", outcome="ok", duration_ms=300, budget_per_hour=1200,
                        created_at=NOW - timedelta(minutes=61)),  # outside the hour
        UpstreamRequest(upstream="wikidata-action-api", outcome="failed", http_status=503, duration_ms=90,
                        budget_per_hour=18000, created_at=NOW - timedelta(minutes=1)),
    ])  # fmt: skip

    calls = []
    for minutes, tool, status, ms in (
        (10, "a.one", "ok", 100.0),
        (20, "a.one", "ok", 200.0),
        (30, "a.one", "ok", 300.0),
        (40, "a.one", "upstream_error", 400.0),
        (65, "a.two", "ok", 50.0),
        (60 * 23 + 10, "a.two", "rate_limited", 10.0),
        (60 * 25, "a.two", "ok", 999.0),
    ):
        call = ToolCall.objects.create(
            tool_name=tool,
            requested_name=tool,
            upstream_name=tool,
            connector_slug="wiki-mcp",
            status=status,
            duration_ms=ms,
        )
        _at(ToolCall, [call], created_at=NOW - timedelta(minutes=minutes))
        calls.append(call)  # fmt: skip

    def fact_run(days: float, status: str, degraded: bool = False, error_type: str = "") -> FactRun:
        run = FactRun.objects.create(question="q", status=status, degraded=degraded, error_type=error_type)
        _at(FactRun, [run], created_at=NOW - timedelta(days=days))
        return run

    fact_run(0.1, RunStatus.SUCCEEDED)
    fact_run(0.2, RunStatus.DEGRADED, degraded=True, error_type="timeout")
    fact_run(0.3, RunStatus.FAILED, error_type="terminal")
    fact_run(1, RunStatus.SUCCEEDED)
    fact_run(0.01, RunStatus.RUNNING)
    fact_run(20, RunStatus.FAILED, error_type="terminal")  # outside the window

    search = SearchRun.objects.create(
        kind="search",
        cache_key="k",
        parameters={},
        arxiv_params=[],
        status="rate_limited",
        error_type="rate_limited",
    )
    _at(SearchRun, [search], created_at=NOW - timedelta(hours=3))  # fmt: skip

    def verification(days: float, verdict: str, review: str = ReviewStatus.PENDING) -> None:
        row = Verification.objects.create(
            claim="c", verdict=verdict, confidence=0.5, latency_ms=1.0, review_status=review
        )
        _at(Verification, [row], created_at=NOW - timedelta(days=days))  # fmt: skip

    verification(0.1, Verdict.SUPPORTED, ReviewStatus.APPROVED)
    verification(0.2, Verdict.CONTRADICTED)
    verification(2, Verdict.UNVERIFIED)
    verification(2, Verdict.UNVERIFIED)
    verification(30, Verdict.SUPPORTED)  # pending, outside the window: still in the queue
    return {"wiki": wiki, "native": native}
