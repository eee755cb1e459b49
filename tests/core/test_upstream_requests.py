"""Each upstream gate records its request with how it ended (the dashboard's budget chart reads them)."""

from __future__ import annotations

import contextlib

import pytest

from apps.core.errors import RateLimited, UpstreamError
from apps.core.models import UpstreamRequest
from apps.core.ratelimit import RateLimiter
from apps.core.services import upstream_request_recorded

pytestmark = pytest.mark.django_db


def _record(error: Exception | None, waited: float = 0.0) -> UpstreamRequest:
    expected = pytest.raises(type(error)) if error else contextlib.nullcontext()
    with expected, upstream_request_recorded(upstream="u", budget_per_hour=1200.0) as tally:
        tally.waited_seconds = waited
        if error:
            raise error
    return UpstreamRequest.objects.get()


@pytest.mark.parametrize(
    ("error", "outcome", "status"),
    [
        (None, "ok", None),
        (UpstreamError("busy", details={"status": 429}, retryable=True), "throttled", 429),
        (UpstreamError("busy", details={"httpStatus": 429}, retryable=True), "throttled", 429),
        (UpstreamError("down", details={"status": 503}, retryable=True), "failed", 503),
        (RateLimited("saturated", retry_after=3.0), "refused", None),
        (ValueError("bug"), "failed", None),
    ],
)
def test_the_outcome_follows_how_the_request_ended(error, outcome, status) -> None:
    row = _record(error, waited=1.25)
    assert (row.upstream, row.outcome, row.http_status, row.waited_ms, row.budget_per_hour) == (
        "u",
        outcome,
        status,
        1250.0,
        1200.0,
    )


def test_a_limiter_says_its_hourly_budget() -> None:
    assert RateLimiter("x", interval=3.0).per_hour == 1200.0
    assert RateLimiter("x", interval=60.0 / 20, burst=20).per_hour == 1219.0


def test_records_older_than_the_retention_are_pruned_in_batches(settings, monkeypatch) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from apps.core import services
    from apps.core.tasks import upstream_requests_prune_task

    settings.CORTEX_UPSTREAM_REQUEST_DAYS = 30
    monkeypatch.setattr(services, "PRUNE_BATCH", 2)  # several batches out of five old rows
    now = timezone.now()
    ages = [31, 31, 40, 60, 365, 29, 1]
    UpstreamRequest.objects.bulk_create(
        UpstreamRequest(upstream="u", outcome="ok", duration_ms=1.0, created_at=now - timedelta(days=days))
        for days in ages
    )
    assert services.upstream_requests_prune(now=now) == 5
    kept = sorted((now - row.created_at).days for row in UpstreamRequest.objects.all())
    assert kept == [1, 29]
    upstream_requests_prune_task()  # what beat runs: nothing more to delete
    assert UpstreamRequest.objects.count() == 2
