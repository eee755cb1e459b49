"""Correlation ids (request → response → Celery task → upstream) and the httpx factory."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
import respx
from django.test import Client

from apps.core.http import build_client
from apps.core.logging import current_correlation_id, get_logger, set_correlation_id
from cortexweb.celery import app as celery_app


@celery_app.task(name="tests.core.report_correlation_id")
def report_correlation_id() -> str | None:
    return current_correlation_id()


def test_request_id_is_echoed_or_generated() -> None:
    echoed = Client().get("/healthz", headers={"X-Request-ID": "agent-42.run:7"})
    assert echoed["X-Request-ID"] == "agent-42.run:7"
    generated = Client().get("/healthz")
    assert len(generated["X-Request-ID"]) == 32
    # A header that could forge log lines is replaced, not trusted.
    forged = Client().get("/healthz", headers={"X-Request-ID": "x\r\nlevel: critical"})
    assert forged["X-Request-ID"] != "x\r\nlevel: critical"
    assert len(forged["X-Request-ID"]) == 32


def test_log_lines_are_json_with_correlation_id_and_brand(caplog: pytest.LogCaptureFixture) -> None:
    from apps.core.logging import json_formatter

    set_correlation_id("corr-1")
    try:
        with caplog.at_level(logging.INFO):
            get_logger("tests").info("something.happened", answer=42)
    finally:
        set_correlation_id(None)
    record = next(record for record in caplog.records if "something.happened" in str(record.msg))
    line = json.loads(json_formatter().format(record))
    assert line["event"] == "something.happened"
    assert line["answer"] == 42
    assert line["correlation_id"] == "corr-1"
    assert line["brand"] == "brAInwav"
    assert line["level"] == "info"


@pytest.mark.django_db(transaction=True)
def test_correlation_id_travels_into_celery_tasks(celery_worker: object) -> None:
    set_correlation_id("from-the-request")
    try:
        result = report_correlation_id.delay()
    finally:
        set_correlation_id(None)
    assert result.get(timeout=20) == "from-the-request"


@respx.mock
def test_http_client_sends_user_agent_timeouts_and_request_id(settings) -> None:
    settings.CORTEX_USER_AGENT = "CortexWeb/test (ops@example.org)"
    route = respx.get("https://upstream.test/thing").mock(
        return_value=httpx.Response(302, headers={"Location": "/x"})
    )
    set_correlation_id("corr-up")
    try:
        with build_client(base_url="https://upstream.test", timeout=7) as client:
            response = client.get("/thing")
            assert client.timeout.connect == settings.CORTEX_HTTP_CONNECT_TIMEOUT
            assert client.timeout.read == 7
    finally:
        set_correlation_id(None)
    request = route.calls.last.request
    assert request.headers["User-Agent"] == "CortexWeb/test (ops@example.org)"
    assert request.headers["X-Request-ID"] == "corr-up"
    assert response.status_code == 302  # redirects are not followed unless asked for
