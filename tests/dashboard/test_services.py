"""The tool-call roll-up: scheduled by beat, a slot two minutes after it ends, pruned after two days."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings

from apps.dashboard import services
from apps.dashboard.models import ToolCallRollUp, ToolCallSlot, ToolLatencyWindow
from apps.dashboard.tasks import tool_calls_roll_up_task
from cortexweb.celery import app
from tests.dashboard.conftest import NOW

pytestmark = pytest.mark.django_db


def test_beat_rolls_up_every_minute() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["dashboard-tool-calls-roll-up"]
    assert entry == {"task": "dashboard.tool_calls_roll_up", "schedule": 60.0}
    assert app.tasks[entry["task"]].name == tool_calls_roll_up_task.name


def test_a_slot_waits_for_its_grace_minutes(history) -> None:
    # At 12:01, the day's slots up to 11:50: the one ending at 12:00 ended less than two minutes ago.
    assert services.tool_calls_roll_up(now=NOW.replace(minute=1)) == 143
    assert ToolCallRollUp.objects.get().watermark == datetime(2026, 3, 10, 11, 50, tzinfo=UTC)
    assert services.tool_calls_roll_up(now=NOW.replace(minute=2)) == 1
    assert list(
        ToolCallSlot.objects.filter(start__gte=datetime(2026, 3, 10, 11, tzinfo=UTC))
        .values_list("start", "status", "calls")
        .order_by("start")
    ) == [
        (datetime(2026, 3, 10, 11, 20, tzinfo=UTC), "ok", 1),
        (datetime(2026, 3, 10, 11, 50, tzinfo=UTC), "upstream_error", 1),
    ]
    # Only the two windows ending at the new watermark are kept.
    assert set(ToolLatencyWindow.objects.values_list("end_hour", flat=True)) == {
        datetime(2026, 3, 10, 12, tzinfo=UTC)
    }


def test_slots_older_than_two_days_are_deleted(history) -> None:
    services.tool_calls_roll_up(now=NOW)  # the day before 12:20, 03-10
    services.tool_calls_roll_up(now=NOW + timedelta(hours=30))  # the day before 18:20, 03-11
    watermark = datetime(2026, 3, 11, 18, 20, tzinfo=UTC)
    assert ToolCallRollUp.objects.get().watermark == watermark
    # 03-09 11:30 and 13:20 are gone (before 03-09 18:20); the four slots of 03-10 with calls stay.
    assert list(ToolCallSlot.objects.values_list("start", "status").order_by("start")) == [
        (datetime(2026, 3, 10, 11, 20, tzinfo=UTC), "ok"),
        (datetime(2026, 3, 10, 11, 50, tzinfo=UTC), "upstream_error"),
        (datetime(2026, 3, 10, 12, 0, tzinfo=UTC), "ok"),
        (datetime(2026, 3, 10, 12, 10, tzinfo=UTC), "ok"),
    ]
    assert watermark - timedelta(hours=services.KEEP_HOURS) == datetime(2026, 3, 9, 18, 20, tzinfo=UTC)
