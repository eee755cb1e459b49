"""/healthz, /readyz (Postgres+pgvector, Redis, a Celery worker) and /metrics."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from django.test import Client

from cortexweb.embedded import EmbeddedServices


def test_healthz_touches_nothing() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db(transaction=True)
def test_readyz_is_ready_with_every_check_named(celery_worker: object) -> None:
    response = Client().get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ready"
    assert body["failed"] == []
    assert set(body["checks"]) == {"postgres", "redis", "celery"}
    assert body["checks"]["postgres"]["vector"].startswith("0.8")


@pytest.mark.django_db(transaction=True)
def test_readyz_names_redis_while_it_is_stopped_and_recovers(celery_worker: object) -> None:
    if not settings.EMBEDDED_SERVICES:
        pytest.skip("Redis is external (REDIS_URL): this test stops and restarts the embedded one")
    services = EmbeddedServices(settings.CORTEX_DATA_DIR)
    services._stop_redis()
    try:
        response = Client().get("/readyz")
        body = response.json()
        assert response.status_code == 503
        assert body["status"] == "unavailable"
        assert "redis" in body["failed"]
        assert body["checks"]["redis"]["ok"] is False
        assert body["checks"]["postgres"]["ok"] is True
    finally:
        services.attach()  # starts Redis again on its remembered port
    deadline = time.monotonic() + 60
    while True:
        response = Client().get("/readyz")
        if response.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert response.status_code == 200, response.json()
    assert response.json()["failed"] == []


@pytest.mark.django_db
def test_metrics_counts_requests_by_route() -> None:
    client = Client()
    client.get("/healthz")
    body = client.get("/metrics").content.decode()
    assert 'cortex_http_requests_total{method="GET",route="healthz",status="200"}' in body
    assert "cortex_http_request_duration_seconds_bucket" in body


def test_unknown_api_paths_answer_in_the_error_shape() -> None:
    for path in ("/v1/no-such-thing", "/api/no-such-thing/"):
        response = Client().get(path)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
