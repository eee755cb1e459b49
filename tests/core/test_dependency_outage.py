"""A stalled Redis gets a 503 with Retry-After from every edge, within the configured socket timeout.

The Redis here is a real TCP listener that accepts connections and never answers: what a stopped
(SIGSTOP) or overloaded server looks like to a client. The SIGSTOP test of the real embedded
servers, Postgres included, is ``test_dependency_faults.py``.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import pytest
from django.test import Client, override_settings

from apps.core.redis import get_redis

pytestmark = pytest.mark.django_db

TIMEOUT = 0.5  # REDIS_SOCKET_TIMEOUT and REDIS_SOCKET_CONNECT_TIMEOUT while stalled
BOUND = TIMEOUT + 1.5  # every answer arrives within the timeout plus this process's own work
REDIS_DOWN = {
    "code": "service_unavailable",
    "message": "The Redis server is not answering; retry in 5 s.",
    "details": {"dependency": "Redis server", "retryAfter": 5},
}


@contextlib.contextmanager
def stalled_redis() -> Iterator[None]:
    """Every Redis client built from settings talks to a server that never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)  # the kernel completes the handshakes; nobody ever reads
        stalled = override_settings(
            REDIS_URL=f"redis://127.0.0.1:{listener.getsockname()[1]}/0",
            REDIS_SOCKET_TIMEOUT=TIMEOUT,
            REDIS_SOCKET_CONNECT_TIMEOUT=TIMEOUT,
        )
        get_redis.cache_clear()
        try:
            with stalled:
                yield
        finally:
            get_redis.cache_clear()  # the next call builds a client from the restored settings


def _timed(call) -> tuple[object, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_both_apis_answer_503_with_retry_after_in_the_error_shape(make_token) -> None:
    _, raw = make_token("admin")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    plan = {"intent": "fact_query", "query": "Douglas Adams"}
    calls = {
        "POST /v1/agents/plan": lambda: client.post("/v1/agents/plan", plan, content_type="application/json"),
        "GET /api/connectors/": lambda: client.get("/api/connectors/"),
        "POST /api/connectors/": lambda: client.post(
            "/api/connectors/",
            {"slug": "during-outage", "name": "x", "version": "1", "transport": "native"},
            content_type="application/json",
        ),
    }
    with stalled_redis():
        for name, call in calls.items():
            response, elapsed = _timed(call)
            assert response.status_code == 503, (name, response.content)
            assert response["Retry-After"] == "5"
            assert response.json() == {"error": REDIS_DOWN}
            assert elapsed < BOUND, (name, elapsed)
    # Refused before any work: nothing was written.
    assert client.get("/api/connectors/during-outage/").status_code == 404


def test_readyz_says_not_ready_within_the_timeout() -> None:
    with stalled_redis():
        response, elapsed = _timed(lambda: Client().get("/readyz"))
    assert response.status_code == 503
    body = response.json()
    assert (body["status"], body["failed"]) == ("unavailable", ["celery", "redis"])
    assert body["checks"]["redis"]["error"] == "TimeoutError: Timeout reading from socket"
    assert body["checks"]["celery"]["error"] == "skipped: Redis (the broker) is unreachable"
    assert elapsed < BOUND


def test_settings_bound_every_redis_client_and_postgres(settings) -> None:
    """The timeouts reach each client: ours, Django's cache, Celery's broker and result backend, and
    Postgres (connect timeout, and the statement timeout sent as a server option)."""
    from django.core.cache import caches
    from django.db import connection

    from cortexweb.celery import app

    assert settings.REDIS_SOCKET_TIMEOUT == 5.0 and settings.REDIS_SOCKET_CONNECT_TIMEOUT == 2.0
    pool = get_redis().connection_pool.connection_kwargs
    assert (pool["socket_timeout"], pool["socket_connect_timeout"]) == (5.0, 2.0)
    assert caches["default"]._options == {"socket_connect_timeout": 2.0, "socket_timeout": 5.0}
    transport = app.conf.broker_transport_options
    assert (transport["socket_timeout"], transport["socket_connect_timeout"]) == (5.0, 2.0)
    assert (app.conf.redis_socket_timeout, app.conf.redis_socket_connect_timeout) == (5.0, 2.0)
    options = connection.settings_dict["OPTIONS"]
    assert options["connect_timeout"] == 5
    assert options["options"] == (
        "-c statement_timeout=30000 -c hnsw.iterative_scan=strict_order -c hnsw.ef_search=100"
    )
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone() == ("30s",)
