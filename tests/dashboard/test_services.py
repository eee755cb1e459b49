"""The tool-call roll-up: scheduled by beat, idempotent, pruned after two days."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings

from apps.dashboard import services
from apps.dashboard.models import ToolCallHour, ToolLatencyWindow
from apps.dashboard.tasks import tool_calls_roll_up_task
from cortexweb.celery import app
from tests.dashboard.conftest import NOW

pytestmark = pytest.mark.django_db


def test_beat_rolls_up_every_minute() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["dashboard-tool-calls-roll-up"]
    assert entry == {"task": "dashboard.tool_calls_roll_up", "schedule": 60.0}
    assert app.tasks[entry["task"]].name == tool_calls_roll_up_task.name


def test_an_hour_waits_for_its_grace_minutes(history) -> None:
    # At 12:01, the 24 hours before 12:00 but the last: 11:00 ended less than two minutes ago.
    assert services.tool_calls_roll_up(now=NOW.replace(minute=1)) == 23
    assert ToolCallHour.objects.latest("hour").hour == datetime(2026, 3, 10, 10, tzinfo=UTC)
    assert services.tool_calls_roll_up(now=NOW.replace(minute=2)) == 1  # 11:00 rolled up at 12:02
    assert ToolCallHour.objects.get(hour=datetime(2026, 3, 10, 11, tzinfo=UTC)).calls == 2
    # Only the two windows ending at the new watermark are kept.
    assert set(ToolLatencyWindow.objects.values_list("end_hour", flat=True)) == {
        datetime(2026, 3, 10, 12, tzinfo=UTC)
    }


def test_hours_older_than_two_days_are_deleted(history) -> None:
    services.tool_calls_roll_up(now=NOW)
    later = NOW + timedelta(hours=30)
    services.tool_calls_roll_up(now=later)
    # The second run rolls up the day before 18:00 (the hours before it are out of every window).
    watermark = datetime(2026, 3, 11, 18, tzinfo=UTC)
    assert ToolCallHour.objects.latest("hour").hour == watermark - timedelta(hours=1)
    assert ToolCallHour.objects.earliest("hour").hour == watermark - timedelta(hours=services.KEEP_HOURS)
