"""The dashboard's roll-ups of tool calls (``apps.dashboard.services.tool_calls_roll_up``).

The tool-call panel covers 24 hours; read from ``ToolCall`` rows it aggregates every call of the
day (100k calls: about 200 ms). Completed hours are rolled up once, two minutes after they end, by
Celery beat; the panel reads them from here and only the hours not rolled up yet (the current one)
from ``ToolCall``. Both tables are derived and can be deleted at any time: the next roll-up refills
the last day, and until then the panel reads the raw rows.
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models


class ToolCallHour(models.Model):
    """Calls and failed calls of one completed hour (UTC). Every rolled-up hour has a row, calls or
    none, so the rows run without a gap up to the last rolled-up hour: the watermark."""

    hour = models.DateTimeField(unique=True)
    calls = models.PositiveIntegerField()
    failed = models.PositiveIntegerField()

    class Meta:
        ordering = ["hour"]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}:00 {self.calls} calls"


class ToolLatencyWindow(models.Model):
    """One tool's calls, failed calls and latency histogram (``apps.dashboard.latency``: buckets
    with a call and their counts) over the completed hours ``[first_hour, end_hour)``.

    The panel needs the window that starts 23 hours before the current hour and ends at the
    watermark; the roll-up writes the two it can ask for (ending at the new watermark, starting 23
    or 22 hours before it), so reading the day's latency is reading one row per tool.
    """

    first_hour = models.DateTimeField()
    end_hour = models.DateTimeField()
    connector_slug = models.CharField(max_length=64)
    tool_name = models.CharField(max_length=64)
    calls = models.PositiveIntegerField()
    failed = models.PositiveIntegerField()
    buckets = ArrayField(models.PositiveSmallIntegerField())
    counts = ArrayField(models.PositiveIntegerField())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["first_hour", "end_hour", "connector_slug", "tool_name"],
                name="dashboard_latency_window",
            )
        ]

    def __str__(self) -> str:
        return f"{self.connector_slug}/{self.tool_name} {self.first_hour:%H}–{self.end_hour:%H}"
