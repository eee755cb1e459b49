"""Chunked request bodies (``Transfer-Encoding: chunked``, no ``Content-Length``) work on ``/api/``
as on ``/v1/``, under the same size limit and text check.

Only a real server can receive one (Django's test client always sends a length): CortexWeb's Django
application under uvicorn in a thread of this process, so it sees the test database.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from apps.connectors.models import Connector
from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401 - the planner's registry

pytestmark = pytest.mark.django_db(transaction=True)  # the server's threads see committed rows only

CONNECTOR = {
    "slug": "openalex",
    "name": "OpenAlex",
    "version": "1.0.0",
    "transport": "native",
    "endpoint": "https://api.openalex.org",
}


@pytest.fixture(scope="module")
def django_server(django_db_setup: None, django_db_blocker) -> Iterator[str]:
    from cortexweb.asgi import django_application

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(django_application, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    with django_db_blocker.unblock():
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        server.should_exit = True
        thread.join(timeout=15)


def _chunked(data: bytes, size: int = 7) -> Iterator[bytes]:
    """An iterator body: httpx sends it chunked, without a Content-Length."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def _post(url: str, token: str, data: bytes, content_type: str = "application/json") -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
    request = httpx.Request("POST", url, content=_chunked(data), headers=headers)
    assert request.headers["Transfer-Encoding"] == "chunked" and "Content-Length" not in request.headers
    with httpx.Client(timeout=30) as client:
        return client.send(request)


def test_a_chunked_json_body_creates_a_row_on_api(django_server: str, make_token) -> None:
    _, raw = make_token("admin")
    response = _post(f"{django_server}/api/connectors/", raw, json.dumps(CONNECTOR).encode())
    assert response.status_code == 201, response.text
    assert response.json()["slug"] == "openalex"
    assert Connector.objects.get(slug="openalex").name == "OpenAlex"


def test_a_chunked_form_body_works_on_api_too(django_server: str, make_token) -> None:
    _, raw = make_token("admin")
    form = (
        b"slug=openalex&name=OpenAlex&version=1.0.0&transport=native&endpoint=https%3A%2F%2Fapi.openalex.org"
    )
    response = _post(f"{django_server}/api/connectors/", raw, form, "application/x-www-form-urlencoded")
    assert response.status_code == 201, response.text
    assert Connector.objects.filter(slug="openalex").count() == 1


@pytest.mark.usefixtures("default_registry")
def test_a_chunked_json_body_works_on_v1(django_server: str, make_token) -> None:
    _, raw = make_token("read")
    body = json.dumps({"intent": "fact_query", "query": "Douglas Adams"}).encode()
    response = _post(f"{django_server}/v1/agents/plan", raw, body)
    assert response.status_code == 200, response.text
    assert response.json()["query"] == "Douglas Adams"


@pytest.mark.parametrize("path", ["/api/connectors/", "/v1/agents/plan"])
def test_a_chunked_body_over_the_limit_gets_413(django_server: str, make_token, path: str) -> None:
    _, raw = make_token("admin")
    body = json.dumps({"name": "x" * (1024 * 1024)}).encode()
    response = _post(f"{django_server}{path}", raw, body)
    assert response.status_code == 413
    assert response.json() == {
        "error": {
            "code": "payload_too_large",
            "message": "The chunked request body is larger than the limit of 1048576 bytes.",
            "details": {"limitBytes": 1048576},
        }
    }


def test_a_chunked_body_is_checked_for_nul_like_any_other(django_server: str, make_token) -> None:
    _, raw = make_token("admin")
    response = _post(
        f"{django_server}/api/connectors/", raw, json.dumps({**CONNECTOR, "name": "a\x00"}).encode()
    )
    assert response.status_code == 422
    assert response.json()["error"]["details"] == {
        "fields": [{"path": "body.name", "message": "contains a NUL character", "type": "unstorable_text"}]
    }
    assert not Connector.objects.filter(slug="openalex").exists()
