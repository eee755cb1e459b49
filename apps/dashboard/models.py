"""The dashboard's roll-ups of tool calls (``apps.dashboard.services.tool_calls_roll_up``).

The tool-call and error panels cover a day; read from ``ToolCall`` rows they aggregate every call
of it (100k calls: 130–200 ms). Ten-minute slots are rolled up once, two minutes after they end,
by Celery beat; the panels read them from here and only the calls after the watermark (at most
twelve minutes of them) from ``ToolCall``. These tables are derived and can be emptied at any
time: the next roll-up refills the last day, and until then the panels read the raw rows.
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models


class ToolCallRollUp(models.Model):
    """The watermark (one row): every ten-minute slot before it is rolled up, without a gap since
    at least a day before it."""

    watermark = models.DateTimeField()

    def __str__(self) -> str:
        return f"tool calls rolled up to {self.watermark:%Y-%m-%d %H:%M}"


class ToolCallSlot(models.Model):
    """The calls of one status in one ten-minute slot (UTC) before the watermark."""

    start = models.DateTimeField()
    status = models.CharField(max_length=20)
    calls = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["start", "status"], name="dashboard_slot_status")]

    def __str__(self) -> str:
        return f"{self.start:%Y-%m-%d %H:%M} {self.status} {self.calls}"


class ToolLatencyWindow(models.Model):
    """One tool's calls, failed calls and latency histogram (``apps.dashboard.latency``: buckets
    with a call and their counts) over ``[first_hour, end_hour)``; ``end_hour`` is the watermark.

    The panel needs the window that starts 23 hours before the current hour and ends at the
    watermark; the roll-up writes the two it can ask for (starting 23 hours before the watermark's
    hour, or 22 in the first minutes of an hour), so reading the day's latency is reading one row
    per tool.
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
