"""The one retry loop (apps/core/retries.py) and the one Retry-After parser, as every upstream
client uses them: Wikidata, arXiv, the embeddings service (and the MCP client's parser)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
import respx

from apps.core.errors import RateLimited, UpstreamError
from apps.core.http import full_jitter_delay, parse_retry_after
from apps.core.retries import RetryPolicy, call_with_retries
from apps.embeddings.backends import HttpEmbeddingBackend


class Flaky:
    """Fails with the given errors in turn, then answers "ok"; records how often it was called."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


@pytest.fixture
def slept(monkeypatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    return waits


def _retryable(retry_after: float | None = None) -> UpstreamError:
    return UpstreamError("HTTP 503", retryable=True, retry_after=retry_after)


POLICY = RetryPolicy(max_retries=2, backoff_base=0.01)


def test_retryable_errors_are_retried_then_the_call_answers(slept) -> None:
    call = Flaky(_retryable(), _retryable())
    assert call_with_retries(call, policy=POLICY, what="test") == "ok"
    assert call.calls == 3 and len(slept) == 2


def test_retries_are_bounded_and_the_last_error_is_raised(slept) -> None:
    last = _retryable()
    call = Flaky(_retryable(), _retryable(), last)
    with pytest.raises(UpstreamError) as raised:
        call_with_retries(call, policy=POLICY, what="test")
    assert raised.value is last and call.calls == 3


def test_terminal_errors_and_our_own_limiter_are_not_retried(slept) -> None:
    for error in (UpstreamError("HTTP 400", retryable=False), RateLimited("busy", retry_after=3)):
        call = Flaky(error)
        with pytest.raises(type(error)):
            call_with_retries(call, policy=POLICY, what="test")
        assert call.calls == 1
    assert slept == []


def test_the_wait_is_never_shorter_than_retry_after(slept) -> None:
    call_with_retries(Flaky(_retryable(retry_after=2.5)), policy=POLICY, what="test")
    assert slept[0] >= 2.5


def test_a_wait_past_the_deadline_gives_up_with_the_callers_error(slept) -> None:
    deadline = time.monotonic() + 1
    with pytest.raises(UpstreamError):
        call_with_retries(Flaky(_retryable(retry_after=5)), policy=POLICY, what="test", deadline=deadline)
    with pytest.raises(RateLimited) as raised:
        call_with_retries(
            Flaky(_retryable(retry_after=5)),
            policy=POLICY,
            what="test",
            deadline=deadline,
            past_deadline=lambda error, delay: RateLimited(f"wait {delay:.0f} s", retry_after=delay),
        )
    assert raised.value.message == "wait 5 s" and slept == []


def test_a_wait_longer_than_max_wait_is_not_waited_for(slept) -> None:
    policy = RetryPolicy(max_retries=2, backoff_base=0.01, max_wait=10)
    with pytest.raises(UpstreamError):
        call_with_retries(Flaky(_retryable(retry_after=60)), policy=policy, what="test")
    assert slept == []


def test_waits_are_reported_before_they_are_slept(slept) -> None:
    told: list[float] = []
    call_with_retries(Flaky(_retryable(retry_after=1)), policy=POLICY, what="test", on_wait=told.append)
    assert told == slept and told[0] >= 1


def test_backoff_is_full_jitter_capped_and_never_before_retry_after() -> None:
    delays = [full_jitter_delay(attempt=3, base=1.0, cap=5.0, retry_after=None) for _ in range(200)]
    assert min(delays) >= 0 and max(delays) <= 5.0
    assert max(delays) > 2.5  # uniform over [0, 5], not a fixed delay
    assert all(full_jitter_delay(attempt=0, base=1.0, cap=5.0, retry_after=2.0) >= 2.0 for _ in range(50))


def test_retry_after_in_both_forms() -> None:
    now = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("7", now=now) == 7.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now=now) == 90.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=90), usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon", now=now) is None
    assert parse_retry_after("nan", now=now) is None
    assert parse_retry_after(None) is None


@respx.mock
def test_the_embeddings_service_is_retried_honouring_an_http_date_retry_after(slept, settings) -> None:
    settings.EMBEDDINGS_MAX_RETRY_WAIT_SECONDS = 60
    settings.CORTEX_OUTBOUND_ALLOW_HOSTS = ["embeddings.test"]
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    vector = [1.0] + [0.0] * 383
    route = respx.post("https://embeddings.test/v1/embeddings").mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": later}),
            httpx.Response(200, json={"data": [{"index": 0, "embedding": vector}]}),
        ]
    )
    backend = HttpEmbeddingBackend(base_url="https://embeddings.test/v1", model="m")
    assert backend.embed(["hello"]).shape == (1, 384)
    assert route.call_count == 2
    assert 25 <= slept[0] <= 31
