"""OAuth's JSON endpoints under the hostile bodies every page gets (tests/core/test_hostile_sweep.py):
never a 500; a refusal is the RFCs' ``{"error": "<code>", "error_description": …}``, or the edge's
400 page for a body it refuses before any view (NUL, invalid UTF-8: apps/core/middleware.py)."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.oauth import services
from tests.core.test_hostile_sweep import RAW_PROBES

pytestmark = pytest.mark.django_db

ENDPOINTS = ["/oauth/register/", "/oauth/token/", "/oauth/revoke/"]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_every_hostile_body_is_an_rfc_error_never_a_500(path: str) -> None:
    services.registration_limiter(address="127.0.0.1").reset()
    client = Client(raise_request_exception=False, HTTP_HOST="localhost")
    broken = []
    for name, body, content_type in RAW_PROBES:
        extra = {} if content_type is not None else {"CONTENT_TYPE": ""}
        response = client.generic("POST", path, body, content_type=content_type or "", **extra)
        if response.status_code >= 500:
            broken.append((name, response.status_code))
            continue
        if response.status_code >= 400 and response["Content-Type"].startswith("text/html"):
            if response.status_code != 400:
                broken.append((name, response.status_code, "page"))
        elif response.status_code >= 400:
            answer = response.json()
            if not (isinstance(answer.get("error"), str) and answer["error"]):
                broken.append((name, response.status_code, answer))
    assert broken == []


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ],
)
def test_the_metadata_takes_only_get(path: str) -> None:
    for method in ("post", "put", "delete"):
        assert getattr(Client(HTTP_HOST="localhost"), method)(path).status_code == 405
