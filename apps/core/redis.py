"""One Redis client per process, from ``settings.REDIS_URL``."""

from __future__ import annotations

import functools

import redis
from django.conf import settings


@functools.cache
def get_redis() -> redis.Redis:
    # The connection pool inside is thread-safe; forked Celery children get a
    # fresh pool because redis-py checks the pid before reusing a connection.
    # Bounded socket timeouts: a stalled Redis fails a call in seconds (a 503 at the edge), never hangs it.
    return redis.Redis.from_url(
        settings.REDIS_URL,
        health_check_interval=30,
        socket_connect_timeout=settings.REDIS_SOCKET_CONNECT_TIMEOUT,
        socket_timeout=settings.REDIS_SOCKET_TIMEOUT,
    )
