"""The shared rate limiter (DESIGN §5.3): one limit across every process on every host.

Celery's ``rate_limit`` is per worker, and a process-local token bucket is per
process; upstream budgets (arXiv: one request every 3 s) are global. So all
state lives in Redis and every decision is one atomic Lua script that reads the
Redis server's clock, never the caller's.

The algorithm is GCRA with reservations. The key holds the *theoretical arrival
time* (TAT): when the limiter will next be idle. A caller arriving at ``now``
takes the slot ``max(TAT, now) + interval - burst * interval`` and moves TAT on by
one interval, in the same script. Slots are therefore handed out in the order
callers reach Redis (arrival order) and are spaced ``interval`` apart once the
burst is spent; each caller then sleeps until its own slot. A caller whose slot
is further away than its deadline allows takes nothing and gets
:class:`~apps.core.errors.RateLimited` with the exact ``retry_after`` at once.

``ConnectionLock`` is the other half of "one connection at a time": a Redis lock
with a random owner token and a TTL, so a crashed holder frees it by expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass

import redis

from apps.core import metrics
from apps.core.errors import RateLimited
from apps.core.redis import get_redis

KEY_PREFIX = "cortex:ratelimit:"
LOCK_PREFIX = "cortex:lock:"

# KEYS[1] = TAT key. ARGV = interval_us, burst, max_wait_us (-1 = unbounded).
# Returns {granted (1/0), wait_us}: for a grant, how long to sleep until the slot;
# for a refusal, how long until a retry would be granted without waiting.
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local max_wait = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local wait = new_tat - burst * interval - now
if wait < 0 then wait = 0 end
if max_wait >= 0 and wait > max_wait then
  return {0, wait}
end
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil((new_tat - now) / 1000) + 1000)
return {1, wait}
"""

# KEYS[1] = last-send key, ARGV = interval_us. Claims "now" if the last claim is at least interval old;
# otherwise returns how long to wait. Returns {claimed (1/0), wait_us}.
_SPACE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or 0)
if now < last + interval then
  return {0, last + interval - now}
end
redis.call('SET', KEYS[1], now, 'PX', math.ceil(interval / 1000) + 1000)
return {1, 0}
"""

# KEYS[1] = window log (a sorted set of grant times), ARGV = window_us, limit, member suffix.
# Grants when fewer than ``limit`` grants lie within the last window. Returns {granted, wait_us}:
# for a refusal, how long until the oldest grant in the window leaves it.
_WINDOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, now .. ':' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + 1000)
  return {1, 0}
end
local oldest = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
return {0, oldest + window - now}
"""

# KEYS[1] = lock key, KEYS[2] = the same name's MinimumSpacing last-send key, ARGV[1] = owner token.
# Deletes only the caller's own lock. While a spacing claim is live, the release moves it to now: the
# upstream received the request before its answer came back, so spacing the next send from the end
# of this one holds the interval at the upstream's side whatever delayed this request between its
# claim and its arrival (a loaded sending host was measured 42 ms late, tests/deploy). An expired
# claim is left alone: the request then outlasted interval + 1 s already.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local last = tonumber(redis.call('GET', KEYS[2]) or 0)
  local ttl = redis.call('PTTL', KEYS[2])
  if last > 0 and ttl > 0 then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if now > last then
      redis.call('SET', KEYS[2], now, 'PX', ttl + math.ceil((now - last) / 1000))
    end
  end
  return redis.call('DEL', KEYS[1])
end
return 0
"""


@dataclass(frozen=True)
class Reservation:
    """A slot taken from a limiter: the caller may proceed after ``wait`` seconds."""

    limiter: str
    wait: float


class RateLimiter:
    """At most ``burst`` grants at once, then one per ``interval`` seconds, for every process.

    ``RateLimiter("arxiv", interval=3.0)`` is arXiv's 1 request / 3 s;
    ``RateLimiter(f"propose:{token_id}", interval=3.0, burst=20)`` is 20 per minute.
    """

    def __init__(
        self,
        name: str,
        *,
        interval: float,
        burst: int = 1,
        redis_client: redis.Redis | None = None,
        key_prefix: str = KEY_PREFIX,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, not {interval}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, not {burst}")
        self.name = name
        self.interval = interval
        self.burst = burst
        self.key = f"{key_prefix}{name}"
        self._redis = redis_client
        self._interval_us = round(interval * 1_000_000)

    @property
    def redis(self) -> redis.Redis:
        return self._redis or get_redis()

    @property
    def per_hour(self) -> float:
        """The most grants an hour can see: the burst, then one every interval."""
        return 3600.0 / self.interval + (self.burst - 1)

    def reserve(self, *, max_wait: float | None = None) -> Reservation:
        """Take the next slot, or raise ``RateLimited`` if it is more than ``max_wait`` s away.

        Does not sleep: the caller waits ``reservation.wait`` seconds itself.
        """
        limit_us = -1 if max_wait is None else max(0, round(max_wait * 1_000_000))
        granted, wait_us = self.redis.eval(_RESERVE, 1, self.key, self._interval_us, self.burst, limit_us)
        wait = int(wait_us) / 1_000_000
        if not granted:
            metrics.rate_limited_total.labels(limiter=self.name).inc()
            raise RateLimited(
                f"Rate limit '{self.name}' is saturated; retry after {wait:.1f} s.",
                retry_after=wait,
                details={"limiter": self.name},
            )
        if wait > 0:
            metrics.rate_limit_waits_total.labels(limiter=self.name).inc()
        return Reservation(limiter=self.name, wait=wait)

    def acquire(self, *, max_wait: float | None = None, deadline: float | None = None) -> float:
        """Block until this caller's slot; returns the seconds waited.

        ``max_wait`` is relative (seconds), ``deadline`` absolute (``time.monotonic()``);
        the nearer of the two applies, and neither means wait as long as the queue needs.
        """
        reservation = self.reserve(max_wait=_remaining(max_wait, deadline))
        if reservation.wait > 0:
            time.sleep(reservation.wait)
        return reservation.wait

    async def acquire_async(self, *, max_wait: float | None = None, deadline: float | None = None) -> float:
        """``acquire`` for coroutines: the reservation runs in a thread, the wait is ``asyncio.sleep``."""
        reservation = await asyncio.to_thread(self.reserve, max_wait=_remaining(max_wait, deadline))
        if reservation.wait > 0:
            await asyncio.sleep(reservation.wait)
        return reservation.wait

    def try_acquire(self) -> bool:
        """Take a slot only if it is free now (for per-token API limits that never queue)."""
        try:
            self.reserve(max_wait=0)
        except RateLimited:
            return False
        return True

    def check(self) -> None:
        """Take a slot free now or raise ``RateLimited`` with when to retry (an HTTP 429)."""
        self.reserve(max_wait=0)

    def reset(self) -> None:
        """Forget all reservations (operators, tests)."""
        self.redis.delete(self.key)


class WindowLimiter:
    """At most ``limit`` grants in any ``window`` seconds, for every process (a sliding log in Redis).

    Where a contract says "N a minute" and means it to the request — ``ontology_propose``'s 20 a
    minute per token — a token bucket (``RateLimiter``) admits more: its burst, then a slot per
    interval as the minute goes on. This never admits the (N+1)th within the window.
    """

    def __init__(
        self, name: str, *, limit: int, window: float, redis_client: redis.Redis | None = None
    ) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("limit must be at least 1 and window positive")
        self.name = name
        self.limit = limit
        self.window = window
        self.key = f"{KEY_PREFIX}window:{name}"
        self._redis = redis_client

    @property
    def redis(self) -> redis.Redis:
        return self._redis or get_redis()

    def check(self) -> None:
        """Take a grant now or raise ``RateLimited`` with when one frees up (an HTTP 429)."""
        granted, wait_us = self.redis.eval(
            _WINDOW, 1, self.key, round(self.window * 1_000_000), self.limit, secrets.token_hex(6)
        )
        if not granted:
            metrics.rate_limited_total.labels(limiter=self.name).inc()
            wait = int(wait_us) / 1_000_000
            raise RateLimited(
                f"Rate limit '{self.name}' is saturated; retry after {wait:.1f} s.",
                retry_after=wait,
                details={"limiter": self.name},
            )

    def reset(self) -> None:
        self.redis.delete(self.key)


def _remaining(max_wait: float | None, deadline: float | None) -> float | None:
    if deadline is None:
        return max_wait
    until_deadline = max(0.0, deadline - time.monotonic())
    return until_deadline if max_wait is None else min(max_wait, until_deadline)


class ConnectionLock:
    """One holder at a time across processes; the TTL frees it if the holder dies.

    ``ttl`` must exceed the longest time a holder keeps it (a request's read timeout).
    """

    poll_interval = 0.05

    def __init__(self, name: str, *, ttl: float = 60.0, redis_client: redis.Redis | None = None) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be positive, not {ttl}")
        self.name = name
        self.ttl = ttl
        self.key = f"{LOCK_PREFIX}{name}"
        self._redis = redis_client

    @property
    def redis(self) -> redis.Redis:
        return self._redis or get_redis()

    @contextlib.contextmanager
    def hold(self, *, max_wait: float | None = None, deadline: float | None = None) -> Iterator[None]:
        """Hold the lock for the ``with`` block, waiting at most until the deadline.

        Raises ``RateLimited`` (retry after the holder's remaining TTL) when the wait would pass it.
        """
        remaining = _remaining(max_wait, deadline)
        give_up_at = None if remaining is None else time.monotonic() + remaining
        token = secrets.token_hex(16)
        ttl_ms = max(1, round(self.ttl * 1000))
        while not self.redis.set(self.key, token, nx=True, px=ttl_ms):
            now = time.monotonic()
            if give_up_at is not None and now >= give_up_at:
                held_for_ms = self.redis.pttl(self.key)
                retry_after = max(held_for_ms, 0) / 1000
                metrics.rate_limited_total.labels(limiter=f"lock:{self.name}").inc()
                raise RateLimited(
                    f"'{self.name}' allows one connection at a time and it is in use; "
                    f"retry after {retry_after:.1f} s.",
                    retry_after=retry_after,
                    details={"limiter": f"lock:{self.name}"},
                )
            pause = self.poll_interval if give_up_at is None else min(self.poll_interval, give_up_at - now)
            time.sleep(max(pause, 0.001))
        try:
            yield
        finally:
            self.redis.eval(_RELEASE, 2, self.key, f"{KEY_PREFIX}{self.name}:last-send", token)


class MinimumSpacing:
    """At least ``interval`` seconds between the moments callers actually send, across processes.

    The limiter spaces *grants*; a granted caller may still be delayed a little before its
    request leaves (a slow sleep wake-up, a cold HTTP client), so two requests could arrive
    closer than the interval. Claiming the send moment right before sending, while holding
    the upstream's ``ConnectionLock``, makes the spacing hold at the upstream's side.
    """

    def __init__(self, name: str, *, interval: float, redis_client: redis.Redis | None = None) -> None:
        self.key = f"{KEY_PREFIX}{name}:last-send"
        self.interval = interval
        self._redis = redis_client

    @property
    def redis(self) -> redis.Redis:
        return self._redis or get_redis()

    def claim(self) -> float:
        """Wait until the last send is ``interval`` old, then claim now; returns the seconds waited."""
        waited = 0.0
        while True:
            claimed, wait_us = self.redis.eval(_SPACE, 1, self.key, round(self.interval * 1_000_000))
            if claimed:
                return waited
            pause = int(wait_us) / 1_000_000
            time.sleep(pause)
            waited += pause
