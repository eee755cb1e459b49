"""The cost the arXiv rules add to one request when nothing has to wait: a limiter slot, the
single-connection lock and the send-time spacing claim, all in Redis (real Redis)."""

from __future__ import annotations

import uuid

from apps.core.ratelimit import ConnectionLock, MinimumSpacing, RateLimiter
from bench import timed


def run(report) -> None:
    name = f"bench-arxiv-{uuid.uuid4().hex[:8]}"
    limiter = RateLimiter(name, interval=1e-6, burst=1_000_000)
    lock = ConnectionLock(name, ttl=30)
    spacing = MinimumSpacing(name, interval=1e-6)

    def one_request_gate() -> None:
        limiter.acquire()
        with lock.hold():
            spacing.claim()

    one_request_gate()
    report("arxiv.gate_per_request(no wait)", timed(one_request_gate, 1000))
    limiter.reset()
