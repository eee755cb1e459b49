"""The one retry loop for calls to upstreams (Wikidata's three APIs, arXiv, the embeddings service).

A call is retried only on a *retryable* ``UpstreamError`` (timeouts, connection errors, 429, 5xx,
maxlag — each client classifies), at most ``policy.max_retries`` times, after a full-jitter backoff
that is never shorter than the upstream's ``Retry-After`` (``apps.core.http.parse_retry_after``
reads both its forms). It gives up instead of waiting when the wait would pass the caller's
deadline or exceed ``policy.max_wait``. ``RateLimited`` from our own limiter is never retried
here: it already says when a slot comes; nor is ``UpstreamUnreachable`` (an open breaker,
``apps.core.breaker``): nothing was sent, and nothing would be until its window ends.

Remote MCP ``tools/call`` requests are not retried: a tool call may not be idempotent, and the
gateway falls back to the native path instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from apps.core.errors import ApplicationError, RateLimited, UpstreamError, UpstreamUnreachable
from apps.core.http import full_jitter_delay
from apps.core.logging import get_logger

logger = get_logger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int
    backoff_base: float
    backoff_cap: float = math.inf
    max_wait: float = math.inf  # a longer wait (e.g. a long Retry-After) is not waited for


def call_with_retries(
    call: Callable[[], T],
    *,
    policy: RetryPolicy,
    what: str,
    deadline: float | None = None,
    past_deadline: Callable[[UpstreamError, float], ApplicationError] | None = None,
    on_wait: Callable[[float], None] | None = None,
    **log_context: object,
) -> T:
    """``call()``, retried under ``policy``; the last error re-raised when retries run out.

    ``deadline`` is a ``time.monotonic()`` instant: when the next wait would end after it, the
    error ``past_deadline(error, delay)`` builds is raised (the upstream error itself by default).
    ``on_wait(delay)`` is told of every backoff before it is slept.
    """
    attempt = 0
    while True:
        try:
            return call()
        except (RateLimited, UpstreamUnreachable):
            # Neither was sent, and both say when a try could succeed: our limiter's next slot, the
            # end of an unreachable upstream's breaker window (longer than any backoff worth waiting).
            raise
        except UpstreamError as error:
            if not error.retryable or attempt >= policy.max_retries:
                raise
            delay = full_jitter_delay(
                attempt=attempt,
                base=policy.backoff_base,
                cap=policy.backoff_cap,
                retry_after=error.retry_after,
            )
            if deadline is not None and time.monotonic() + delay > deadline:
                if past_deadline is None:
                    raise
                raise past_deadline(error, delay) from error
            if delay > policy.max_wait:
                raise
            logger.warning(
                "upstream.retry",
                what=what,
                attempt=attempt + 1,
                delay_s=round(delay, 3),
                error=str(error),
                **log_context,
            )
            if on_wait is not None:
                on_wait(delay)
            time.sleep(delay)
            attempt += 1
