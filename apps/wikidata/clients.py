"""The Wikidata clients as the fact workflow and the native tools use them: each request
passes its upstream's shared Redis limiter (budgets in settings, reasons in each client
module), is timed and counted per upstream, and retryable failures are retried a bounded
number of times, never sooner than the upstream asked (``Retry-After``, maxlag) and never
past the caller's deadline.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from apps.core import breaker
from apps.core.errors import DeadlineReached, RateLimited, UpstreamError
from apps.core.http import deadline_check
from apps.core.logging import get_logger
from apps.core.ratelimit import ConnectionLock, RateLimiter
from apps.core.retries import RetryPolicy, call_with_retries
from apps.core.services import upstream_request_recorded
from apps.wikidata import action_api, sparql, vectordb
from apps.wikidata import metrics as wikidata_metrics
from apps.wikidata.action_api import MAX_IDS_PER_REQUEST, ActionApiClient, EntitiesResult
from apps.wikidata.sparql import SparqlClient
from apps.wikidata.vectordb import VectorDbClient

logger = get_logger(__name__)

T = TypeVar("T")

# Upstream name → (limiter name, budget function). The limiter names are shared with every process.
_BUDGETS: dict[str, tuple[str, Callable[[], tuple[float, int]]]] = {
    action_api.UPSTREAM: (action_api.LIMITER_NAME, action_api.action_api_budget),
    vectordb.UPSTREAM: (vectordb.LIMITER_NAME, vectordb.vector_budget),
    sparql.UPSTREAM: (sparql.LIMITER_NAME, sparql.sparql_budget),
}


def upstream_budgets() -> dict[str, float]:
    """Each Wikidata upstream's hourly budget under today's settings (the dashboard lists them all,
    quiet or not)."""
    return {upstream: upstream_limiter(upstream).per_hour for upstream in _BUDGETS}


def upstream_limiter(upstream: str) -> RateLimiter:
    name, budget = _BUDGETS[upstream]
    interval, burst = budget()
    return RateLimiter(name, interval=interval, burst=burst)


_NAMES = {
    action_api.UPSTREAM: action_api.NAME,
    vectordb.UPSTREAM: vectordb.NAME,
    sparql.UPSTREAM: sparql.NAME,
}


_URLS: dict[str, Callable[[], str]] = {
    action_api.UPSTREAM: action_api.action_api_url,
    vectordb.UPSTREAM: vectordb.vector_url,
    sparql.UPSTREAM: sparql.sparql_url,
}


def _configured_at(upstream: str) -> str:
    """The host and port ``upstream`` is configured at now: what its breaker judges."""
    return urlsplit(_URLS[upstream]()).netloc


@contextlib.contextmanager
def _gate(upstream: str, deadline: float | None, *, wait_for_slot: bool = True) -> Iterator[None]:
    """The limiter's slot (refused with ``RateLimited`` if it comes after ``deadline``, or if it is
    not free now and ``wait_for_slot`` is false); for WDQS also the one-query-at-a-time lock. Times
    the whole request, the wait included. Past ``deadline`` it refuses at once with
    ``DeadlineReached``, taking no slot: a limiter grants a free slot even to a caller out of time."""
    deadline_check(deadline, upstream=upstream, name=_NAMES[upstream])
    at = _configured_at(upstream)
    breaker.refuse_if_open(upstream, at=at, name=_NAMES[upstream])
    limiter = upstream_limiter(upstream)
    if not wait_for_slot:
        _slot_taken_now(upstream, limiter)
    started = time.perf_counter()
    outcome = "ok"
    try:
        with upstream_request_recorded(upstream=upstream, budget_per_hour=limiter.per_hour) as tally:
            tally.waited_seconds = limiter.acquire(deadline=deadline) if wait_for_slot else 0.0
            if tally.waited_seconds > 0:
                wikidata_metrics.rate_limit_waits_total.labels(upstream=upstream).inc()
            if upstream == sparql.UPSTREAM:
                lock = ConnectionLock(sparql.LIMITER_NAME, ttl=sparql.WDQS_HARD_TIMEOUT_SECONDS + 5)
                # Waiting for the lock never passes the deadline (the client refuses to send then).
                with lock.hold(deadline=deadline if deadline is not None else time.monotonic() + 60):
                    yield
            else:
                yield
        breaker.record_reached(upstream, at=at)
    except RateLimited:
        outcome = "rate_limited"
        raise
    except DeadlineReached:  # the limiter's wait took what was left: not sent
        outcome = "deadline"
        raise
    except UpstreamError as error:
        outcome = "retryable" if error.retryable else "terminal"
        breaker.record_reached(upstream, at=at)  # it answered, with an error
        raise
    except httpx.TransportError as error:  # the clients turn these into UpstreamErrors outside the gate
        outcome = "retryable"
        if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout):  # no connection was made
            breaker.record_failure(upstream, at=at, error=f"{type(error).__name__}: {error}")
        raise
    finally:
        wikidata_metrics.upstream_calls_total.labels(upstream=upstream, outcome=outcome).inc()
        wikidata_metrics.upstream_duration_seconds.labels(upstream=upstream).observe(
            time.perf_counter() - started
        )


def _slot_taken_now(upstream: str, limiter: RateLimiter) -> None:
    """Take a slot free now, or raise ``RateLimited`` saying the caller does not wait for one. Not
    recorded as a refusal (the rate-limit alert counts those): the caller goes another way."""
    try:
        limiter.reserve(max_wait=0)
    except RateLimited as busy:
        raise RateLimited(
            f"{_NAMES[upstream]} had no free slot (the next in {busy.retry_after:.1f} s), and a caller "
            "who is waiting for an answer does not wait for one",
            retry_after=busy.retry_after,
            details={"limiter": limiter.name, "reason": "no_free_slot"},
        ) from busy


def action_api_client(*, deadline: float | None = None) -> ActionApiClient:
    return ActionApiClient(gate=lambda: _gate(action_api.UPSTREAM, deadline), deadline=deadline)


def vector_db_client(*, deadline: float | None = None, wait_for_slot: bool = True) -> VectorDbClient:
    return VectorDbClient(
        gate=lambda: _gate(vectordb.UPSTREAM, deadline, wait_for_slot=wait_for_slot), deadline=deadline
    )


def sparql_client(*, deadline: float | None = None) -> SparqlClient:
    return SparqlClient(gate=lambda: _gate(sparql.UPSTREAM, deadline), deadline=deadline)


def with_retries(call: Callable[[], T], *, what: str, deadline: float | None = None) -> T:
    """``call()`` under Wikidata's retry policy (``apps.core.retries``): at most
    ``WIKIDATA_MAX_RETRIES`` retries, never waiting past ``deadline`` or longer than
    ``WIKIDATA_MAX_RETRY_WAIT_SECONDS``."""
    policy = RetryPolicy(
        max_retries=settings.WIKIDATA_MAX_RETRIES,
        backoff_base=settings.WIKIDATA_BACKOFF_BASE_SECONDS,
        max_wait=settings.WIKIDATA_MAX_RETRY_WAIT_SECONDS,
    )
    return call_with_retries(call, policy=policy, what=f"wikidata {what}", deadline=deadline)


def entities_fetch(
    ids: Sequence[str], *, props: Sequence[str], language: str, deadline: float
) -> EntitiesResult:
    """``wbgetentities`` in batches of ≤ 50, each retried on its own; raises with ``partial`` kept."""
    client = action_api_client(deadline=deadline)
    result = EntitiesResult()
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), MAX_IDS_PER_REQUEST):
        batch = unique[start : start + MAX_IDS_PER_REQUEST]
        try:
            result.merge(
                with_retries(
                    functools.partial(client.fetch_entities_batch, batch, props=props, languages=[language]),
                    what="wbgetentities",
                    deadline=deadline,
                )
            )
        except (UpstreamError, RateLimited) as error:
            error.partial = result  # type: ignore[union-attr]
            raise
    return result
