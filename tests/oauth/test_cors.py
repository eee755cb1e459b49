"""Browser-based MCP hosts (the MCP Inspector's web UI) run the OAuth flow from their own origin:
registration, token and revocation answer their CORS preflight and carry ``Access-Control-Allow-Origin:
*`` — never with credentials, so a browser attaches none of this site's cookies."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.oauth import services

pytestmark = pytest.mark.django_db

HOST = {"HTTP_HOST": "localhost", "HTTP_ORIGIN": "http://localhost:6274"}
ENDPOINTS = ["/oauth/register/", "/oauth/token/", "/oauth/revoke/"]


@pytest.fixture(autouse=True)
def _fresh_registration_limit() -> None:
    services.registration_limiter(address="127.0.0.1").reset()


@pytest.mark.parametrize("path", ENDPOINTS)
def test_the_preflight_of_a_browser_host_is_answered(path: str) -> None:
    response = Client().options(
        path,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="content-type",
        **HOST,
    )
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert response["Access-Control-Allow-Methods"] == "POST, OPTIONS"
    assert "Content-Type" in response["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in response


def test_a_registration_and_its_refusal_are_readable_cross_origin() -> None:
    ok = Client().post(
        "/oauth/register/",
        {"client_name": "MCP Inspector", "redirect_uris": ["http://localhost:6274/oauth/callback"]},
        content_type="application/json",
        **HOST,
    )
    assert ok.status_code == 201
    assert ok["Access-Control-Allow-Origin"] == "*"
    refused = Client().post(
        "/oauth/register/",
        {"redirect_uris": ["http://evil.example/cb"]},
        content_type="application/json",
        **HOST,
    )
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_redirect_uri"
    assert refused["Access-Control-Allow-Origin"] == "*"


def test_a_token_error_is_readable_cross_origin() -> None:
    response = Client().post(
        "/oauth/token/", {"grant_type": "authorization_code", "code": "nope", "client_id": "nobody"}, **HOST
    )
    assert response.status_code in (400, 401)
    assert response.json()["error"] in ("invalid_client", "invalid_grant")
    assert response["Access-Control-Allow-Origin"] == "*"
