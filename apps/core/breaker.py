"""A circuit breaker for upstreams that cannot be reached at all, shared by every process in Redis.

Without it, every call to an unreachable upstream (its name does not resolve, its port refuses)
pays the whole bounded retry loop: a verification that asks Wikidata while Wikidata is unreachable
spent 3 s in backoff per claim, and a grounded message of ten claims half a minute, to learn each
time what the previous call had just learned.

The rule: ``CORTEX_UPSTREAM_UNREACHABLE_AFTER`` connection failures in a row (across processes;
a success in between starts the count again) **open** the breaker for
``CORTEX_UPSTREAM_UNREACHABLE_SECONDS``. While open, a call is refused before a limiter slot is
taken or anything is sent, with ``UpstreamUnreachable`` naming the last error and when the upstream
will be tried again (retryable later, never retried within the call: ``apps.core.retries``).
When the window ends, the next call is sent (half-open): its success closes the breaker, its
failure opens it again at once (the count still stands).

Only connection failures count (``httpx.ConnectError``, ``httpx.ConnectTimeout``: no connection was
made). A read timeout, a 5xx or a 429 means the upstream is there, answering slowly or refusing,
which the retry policy and the limiters already handle; any answer closes the breaker.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import redis
from django.conf import settings

from apps.core.errors import UpstreamUnreachable
from apps.core.logging import get_logger
from apps.core.redis import get_redis

logger = get_logger(__name__)

KEY = "cortex:upstream:unreachable:"  # + "failures:<upstream>@<at>" (a count) or "open:<upstream>@<at>" (why)


def refuse_if_open(upstream: str, *, at: str, name: str) -> None:
    """``UpstreamUnreachable`` when the breaker of ``upstream`` at ``at`` (the host and port it is
    configured at now: pointed elsewhere, it starts afresh) is open. Without Redis the call goes
    ahead: the breaker only saves time, it must never be why a call fails."""
    try:
        raw = get_redis().get(f"{KEY}open:{upstream}@{at}")
    except redis.RedisError:
        return
    if raw is None:
        return
    opened = json.loads(raw)
    retry_at = datetime.fromtimestamp(opened["until"], tz=UTC)
    raise UpstreamUnreachable(
        f"{name} could not be reached {opened['failures']} times in a row (last: {opened['error']}); "
        f"not tried again before {retry_at:%H:%M:%S} UTC",
        details={
            "upstream": upstream,
            "reason": "unreachable",
            "lastError": opened["error"],
            "retryAt": retry_at.isoformat(),
        },
        retryable=True,
        retry_after=max(0.0, opened["until"] - time.time()),
    )


def record_failure(upstream: str, *, at: str, error: str) -> None:
    """Count one connection failure (no address, the connection refused, or not made in time;
    ``error`` says which); open the breaker when the count reaches the threshold."""
    failures_key = f"{KEY}failures:{upstream}@{at}"
    window = settings.CORTEX_UPSTREAM_UNREACHABLE_SECONDS
    try:
        r = get_redis()
        pipe = r.pipeline()
        pipe.incr(failures_key)
        # The count outlives the window, so that a failed half-open call reopens at once.
        pipe.expire(failures_key, int(window * 4) + 60)
        failures = int(pipe.execute()[0])
        if failures >= settings.CORTEX_UPSTREAM_UNREACHABLE_AFTER and window > 0:
            until = time.time() + window
            opened = {"failures": failures, "error": error, "until": until}
            r.set(f"{KEY}open:{upstream}@{at}", json.dumps(opened), px=int(window * 1000))
            logger.warning("upstream.unreachable", upstream=upstream, at=at, failures=failures, error=error)
    except redis.RedisError as failure:
        logger.warning("upstream.breaker_unrecorded", upstream=upstream, error=str(failure))


def record_reached(upstream: str, *, at: str) -> None:
    """An answer came (any answer: a 503 too says the upstream is there): the count starts again and
    the breaker closes."""
    try:
        get_redis().delete(f"{KEY}failures:{upstream}@{at}", f"{KEY}open:{upstream}@{at}")
    except redis.RedisError as failure:
        logger.warning("upstream.breaker_unrecorded", upstream=upstream, error=str(failure))


def forget_all() -> None:
    """Close every breaker (operators after fixing a network, tests between cases)."""
    r = get_redis()
    keys = list(r.scan_iter(f"{KEY}*"))
    if keys:
        r.delete(*keys)
