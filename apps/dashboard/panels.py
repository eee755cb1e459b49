"""The dashboard's panels: each calls its one selector and draws its chart from the same rows its
table shows (``apps.core.charts``), so the picture and the data cannot disagree."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings

from apps.connectors import health
from apps.core.charts import Bar, ColumnChart, Series, bar_chart, column_chart, count_label
from apps.dashboard import latency, selectors

OK, WARN, ERROR, MUTED, ACCENT = "s-ok", "s-warn", "s-error", "s-muted", "s-accent"


def connectors_panel(now: datetime | None = None) -> dict[str, Any]:
    rows = selectors.connector_health()
    series = [
        Series("in_sync", "in sync", OK),
        Series("schema_changed", "schema changed upstream", WARN),
        Series("description_changed", "description changed upstream", WARN),
        Series("missing_upstream", "missing upstream", ERROR),
        Series("unsynced", "not synced yet", MUTED),
    ]
    chart = bar_chart(
        bars=[
            Bar(
                row.slug,
                {s.key: float(getattr(row, s.key)) for s in series},
                f"{row.drifted} drifted" if row.drifted else f"{row.tools} tools",
            )
            for row in rows
        ],
        series=series,
        title="Tools per connector by drift state",
    )
    return {
        "rows": rows,
        "chart": chart,
        "drift": selectors.connector_drift(),
        # Live health first (apps/connectors/health.py): the drift table alone showed "never synced"
        # while every call failed.
        "health": health.health_report(now=now),
        "health_window_minutes": round(settings.CORTEX_HEALTH_WINDOW_SECONDS / 60),
    }


def _percent(value: float) -> str:
    return f"{value:.0%}"


def upstreams_panel(now: datetime | None = None) -> dict[str, Any]:
    rows = selectors.upstream_budget(now=now)
    series = [Series("used", "of the hourly budget used", ACCENT)]
    chart = bar_chart(
        bars=[
            Bar(
                row.upstream,
                {"used": row.share if row.share is not None else 0.0},
                f"{row.sent} / {count_label(row.budget_per_hour)}" if row.budget_per_hour else f"{row.sent}",
            )
            for row in rows
        ],
        series=series,
        title="Requests in the last hour against each upstream's hourly budget",
        scale_max=1.0,
        tick_label=_percent,
    )
    return {"rows": rows, "chart": chart}


def tool_calls_panel(now: datetime | None = None) -> dict[str, Any]:
    activity = selectors.tool_call_activity(now=now)
    calls_chart = column_chart(
        categories=[f"{hour.hour:%H}:00" for hour in activity.hours],
        series=[Series("ok", "OK", OK), Series("failed", "failed", ERROR)],
        values={
            "ok": [float(hour.ok) for hour in activity.hours],
            "failed": [float(hour.failed) for hour in activity.hours],
        },
        title="Tool calls per hour, last 24 hours",
        label_every=4,
    )
    latency_chart = bar_chart(
        bars=[
            Bar(tool.tool, {"p50": tool.p50_ms, "p95": max(tool.p95_ms - tool.p50_ms, 0.0)},
                f"{tool.p50_ms:.0f} / {tool.p95_ms:.0f} ms")
            for tool in activity.tools
        ],
        series=[Series("p50", "ms (p50)", ACCENT), Series("p95", "ms more to p95", MUTED)],
        title="Latency per tool, p50 and p95 (within 5 %), last 24 hours",
    )  # fmt: skip
    return {
        "activity": activity,
        "calls_chart": calls_chart,
        "latency_chart": latency_chart,
        "latency_error_percent": f"{latency.RELATIVE_ERROR:.1%}",
    }


def _per_day_chart(days: list[Any], series: list[Series], title: str) -> ColumnChart:
    """Stacked columns of the last 14 days, each series an attribute of the day's row."""
    return column_chart(
        categories=[row.day.isoformat() for row in days],
        series=series,
        values={s.key: [float(getattr(row, s.key)) for row in days] for s in series},
        title=f"{title}, last {len(days)} days",
        label_every=2,
        tick_label=lambda iso: iso[5:],  # MM-DD
    )


FACT_RUN_SERIES = [Series("succeeded", "succeeded", OK), Series("degraded", "degraded", WARN),
                   Series("failed", "failed", ERROR)]  # fmt: skip
VERDICT_SERIES = [Series("supported", "supported", OK), Series("contradicted", "contradicted", ERROR),
                  Series("unverified", "unverified", MUTED)]  # fmt: skip


def fact_runs_panel(now: datetime | None = None) -> dict[str, Any]:
    outcomes = selectors.fact_run_outcomes(now=now)
    return {
        "outcomes": outcomes,
        "chart": _per_day_chart(outcomes.days, FACT_RUN_SERIES, "Fact runs per day"),
    }


def verdicts_panel(now: datetime | None = None) -> dict[str, Any]:
    activity = selectors.verdict_activity(now=now)
    return {"activity": activity, "chart": _per_day_chart(activity.days, VERDICT_SERIES, "Verdicts per day")}


def errors_panel(now: datetime | None = None) -> dict[str, Any]:
    rows = selectors.errors_by_type(now=now)
    chart = bar_chart(
        bars=[Bar(f"{row.source}: {row.type}", {"count": float(row.count)}, str(row.count)) for row in rows],
        series=[Series("count", "errors", ERROR)],
        title="Errors by type, last 24 hours",
    )
    return {"rows": rows, "chart": chart}


@dataclass(frozen=True)
class Panel:
    slug: str
    title: str
    build: Callable[[datetime | None], dict[str, Any]]

    @property
    def template(self) -> str:
        return f"dashboard/partials/_{self.slug.replace('-', '_')}.html"


PANELS: dict[str, Panel] = {
    panel.slug: panel
    for panel in (
        Panel("connectors", "Connectors and their health", connectors_panel),
        Panel("upstreams", "Upstream budget use, last hour", upstreams_panel),
        Panel("tool-calls", "Tool calls, last 24 hours", tool_calls_panel),
        Panel("fact-runs", "Fact runs, last 14 days", fact_runs_panel),
        Panel("verdicts", "Verdicts and the review queue", verdicts_panel),
        Panel("errors", "Errors by type, last 24 hours", errors_panel),
    )
}
