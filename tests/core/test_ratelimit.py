"""The shared limiter on real Redis, across real OS processes."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import signal
import threading
import time
import uuid

import pytest
import redis
from django.conf import settings

from apps.core.errors import RateLimited
from apps.core.ratelimit import ConnectionLock, MinimumSpacing, RateLimiter, WindowLimiter

SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def name() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


def _acquire_in_child(redis_url: str, name: str, count: int, start, results) -> None:
    limiter = RateLimiter(name, interval=0.2, redis_client=redis.Redis.from_url(redis_url))
    start.wait()
    for _ in range(count):
        asked = time.time()
        # acquire() is reserve() then a sleep; split here to know when the request had surely
        # reached Redis (the reservation answered) as well as when it left.
        reservation = limiter.reserve()
        answered = time.time()
        time.sleep(reservation.wait)
        results.put((os.getpid(), asked, answered, time.time()))


def test_two_processes_share_one_limit_in_arrival_order(name: str) -> None:
    start, results = SPAWN.Event(), SPAWN.Queue()
    children = [
        SPAWN.Process(target=_acquire_in_child, args=(settings.REDIS_URL, name, 10, start, results))
        for _ in range(2)
    ]
    for child in children:
        child.start()
    time.sleep(1.0)  # both children imported and waiting on the event
    start.set()
    grants = sorted((results.get(timeout=30) for _ in range(20)), key=lambda grant: grant[3])
    for child in children:
        child.join(timeout=10)
        assert child.exitcode == 0

    assert len(grants) == 20
    assert {grant[0] for grant in grants} == {child.pid for child in children}
    gaps = [later[3] - earlier[3] for earlier, later in itertools.pairwise(grants)]
    assert min(gaps) >= 0.19, gaps
    # Served in arrival order: no grant went to a request that surely reached Redis after a
    # request granted later (its call had finished before the other's began).
    for index, (_, asked, _, _) in enumerate(grants):
        later_but_surely_earlier = [grant for grant in grants[index + 1 :] if grant[2] < asked]
        assert not later_but_surely_earlier, (grants[index], later_but_surely_earlier)
    # Nothing is spaced more than needed (a starved process may add idle time, hence the slack).
    assert grants[-1][3] - grants[0][3] <= 19 * 0.2 + 0.5, grants


def test_waiting_threads_are_granted_in_the_order_they_arrived(name: str) -> None:
    limiter = RateLimiter(name, interval=0.05)
    limiter.reserve()  # the limiter is busy: everyone below queues
    granted: list[int] = []
    lock = threading.Lock()

    def caller(number: int) -> None:
        limiter.acquire()
        with lock:
            granted.append(number)

    threads = []
    for number in range(6):
        thread = threading.Thread(target=caller, args=(number,))
        thread.start()
        threads.append(thread)
        time.sleep(0.01)
    for thread in threads:
        thread.join(timeout=5)
    assert granted == list(range(6))


def test_a_deadline_shorter_than_the_queue_is_refused_at_once_with_retry_after(name: str) -> None:
    limiter = RateLimiter(name, interval=0.2)
    for _ in range(5):
        limiter.reserve()  # the fifth slot is 0.8 s away, so the next is 1.0 s away
    started = time.monotonic()
    with pytest.raises(RateLimited) as caught:
        limiter.acquire(max_wait=0.3)
    assert time.monotonic() - started < 0.05
    assert 0.9 <= caught.value.retry_after <= 1.0
    assert caught.value.details == {"retryAfter": round(caught.value.retry_after, 3), "limiter": name}
    assert caught.value.headers() == {"Retry-After": "1"}

    # The refusal took no slot, and retry_after is exact: retrying then is granted without waiting.
    time.sleep(caught.value.retry_after)
    assert limiter.try_acquire()


def test_absolute_deadline_behaves_like_max_wait(name: str) -> None:
    limiter = RateLimiter(name, interval=0.5)
    limiter.reserve()
    with pytest.raises(RateLimited):
        limiter.acquire(deadline=time.monotonic() + 0.2)
    assert limiter.acquire(deadline=time.monotonic() + 2) == pytest.approx(0.5, abs=0.05)


def test_burst_grants_at_once_then_spaces(name: str) -> None:
    limiter = RateLimiter(name, interval=1.0, burst=3)
    assert [limiter.try_acquire() for _ in range(4)] == [True, True, True, False]
    with pytest.raises(RateLimited) as caught:
        limiter.check()
    assert 0.9 < caught.value.retry_after <= 1.0
    limiter.reset()
    assert limiter.try_acquire()


def test_state_expires_from_redis_once_idle(name: str, redis_client) -> None:
    limiter = RateLimiter(name, interval=0.1)
    limiter.reserve()
    assert 0 < redis_client.pttl(limiter.key) <= 1100


@pytest.mark.parametrize(("interval", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_nonsense_configuration_is_refused(interval: float, burst: int) -> None:
    with pytest.raises(ValueError):
        RateLimiter("x", interval=interval, burst=burst)


def test_async_acquire_waits_without_blocking_the_loop(name: str) -> None:
    asyncio.run(_acquire_three_while_ticking(name))


async def _acquire_three_while_ticking(name: str) -> None:
    limiter = RateLimiter(name, interval=0.2)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    waits = [await limiter.acquire_async() for _ in range(3)]
    task.cancel()
    assert waits[0] == 0
    assert waits[1:] == [pytest.approx(0.2, abs=0.03)] * 2
    assert ticks >= 25


def _hold_lock_in_child(redis_url: str, name: str, hold_for: float, ttl: float, held) -> None:
    lock = ConnectionLock(name, ttl=ttl, redis_client=redis.Redis.from_url(redis_url))
    with lock.hold():
        held.set()
        time.sleep(hold_for)


def test_connection_lock_admits_one_process_at_a_time(name: str) -> None:
    held = SPAWN.Event()
    child = SPAWN.Process(target=_hold_lock_in_child, args=(settings.REDIS_URL, name, 1.0, 30, held))
    child.start()
    assert held.wait(timeout=20)
    lock = ConnectionLock(name, ttl=30)
    with pytest.raises(RateLimited) as caught, lock.hold(max_wait=0.1):
        pass
    assert 28 < caught.value.retry_after <= 30  # the holder's remaining TTL
    started = time.monotonic()
    with lock.hold(max_wait=5):
        waited = time.monotonic() - started
    assert 0.5 < waited < 2  # until the child's second of holding was over
    child.join(timeout=5)
    assert child.exitcode == 0


def test_a_crashed_holder_frees_the_lock_by_ttl(name: str) -> None:
    held = SPAWN.Event()
    child = SPAWN.Process(target=_hold_lock_in_child, args=(settings.REDIS_URL, name, 60, 0.5, held))
    child.start()
    assert held.wait(timeout=20)
    os.kill(child.pid, signal.SIGKILL)
    child.join(timeout=5)
    started = time.monotonic()
    with ConnectionLock(name, ttl=5).hold(max_wait=3):
        assert time.monotonic() - started < 0.7


def test_an_expired_holder_does_not_release_the_next_holders_lock(name: str, redis_client) -> None:
    first, second = ConnectionLock(name, ttl=0.1), ConnectionLock(name, ttl=30)
    first_holding = first.hold()
    first_holding.__enter__()
    time.sleep(0.2)  # first's TTL lapses while it still runs
    with second.hold(max_wait=1):
        first_holding.__exit__(None, None, None)  # first finishes late
        assert redis_client.get(second.key) is not None  # and has not released second's lock
    assert redis_client.get(second.key) is None


def test_minimum_spacing_holds_between_actual_sends(name: str) -> None:
    spacing = MinimumSpacing(name, interval=0.2)
    assert spacing.claim() == 0
    started = time.monotonic()
    waited = spacing.claim()
    assert 0.15 <= waited <= 0.2
    assert time.monotonic() - started >= 0.19


def test_a_window_limiter_never_grants_more_than_its_limit_within_the_window() -> None:
    limiter = WindowLimiter("test:window", limit=3, window=0.5)
    limiter.reset()
    for _ in range(3):
        limiter.check()
    with pytest.raises(RateLimited) as refused:
        limiter.check()
    assert 0 < refused.value.retry_after <= 0.5
    time.sleep(0.55)
    limiter.check()  # the first grants left the window
