"""Rate limiter figures: the cost of one decision when no wait is needed (real Redis)."""

from __future__ import annotations

import uuid

from apps.core.ratelimit import RateLimiter
from bench import timed


def run(report) -> None:
    # An interval far below the call rate, so no acquire ever waits: this measures the Lua round trip.
    limiter = RateLimiter(f"bench-{uuid.uuid4().hex[:8]}", interval=1e-6, burst=1_000_000)
    limiter.acquire()
    report("ratelimit.acquire_no_wait", timed(limiter.acquire, 2000))
    report("ratelimit.try_acquire", timed(limiter.try_acquire, 2000))
    limiter.reset()
