"""CortexWeb's OAuth authorization server: RFC 8414 metadata and RFC 7591 dynamic registration."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.oauth import services

pytestmark = pytest.mark.django_db

HOST = {"HTTP_HOST": "localhost"}


@pytest.fixture(autouse=True)
def _fresh_registration_limit() -> None:
    services.registration_limiter(address="127.0.0.1").reset()


def register(body: object, client: Client | None = None):
    return (client or Client()).post("/oauth/register/", body, content_type="application/json", **HOST)


def test_the_authorization_server_metadata_offers_code_with_s256_only() -> None:
    response = Client().get("/.well-known/oauth-authorization-server", **HOST)
    assert response.status_code == 200
    assert response.json() == {
        "issuer": "http://localhost",
        "authorization_endpoint": "http://localhost/oauth/authorize/",
        "token_endpoint": "http://localhost/oauth/token/",
        "revocation_endpoint": "http://localhost/oauth/revoke/",
        "registration_endpoint": "http://localhost/oauth/register/",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "scopes_supported": ["read", "upstream", "verify", "write"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": False,
        "authorization_response_iss_parameter_supported": True,
    }


def test_a_client_registers_as_a_public_code_client_with_a_loopback_redirect() -> None:
    response = register(
        {
            "client_name": "MCP Inspector",
            "redirect_uris": [
                "http://localhost:6274/oauth/callback",
                "https://claude.ai/api/mcp/auth_callback",
            ],
            "token_endpoint_auth_method": "client_secret_post",
            "grant_types": ["authorization_code", "refresh_token"],
            "scope": "read write",
        }
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["client_name"] == "MCP Inspector"
    assert body["redirect_uris"] == [
        "http://localhost:6274/oauth/callback",
        "https://claude.ai/api/mcp/auth_callback",
    ]
    # A public client whatever it asked for: PKCE protects the code, there is no secret to keep.
    assert body["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in body
    assert body["grant_types"] == ["authorization_code", "refresh_token"]


@pytest.mark.parametrize(
    ("uris", "problem"),
    [
        (["http://evil.example/cb"], "'http://evil.example/cb' must be https, or http on a loopback address"),
        (["javascript:alert(1)"], "'javascript:alert(1)' has no host."),
        (["https://a.example/cb#x"], "'https://a.example/cb#x' has a fragment; a redirect URI may not."),
        (["https://user:pw@a.example/cb"], "'https://user:pw@a.example/cb' carries credentials"),
        ([], "redirect_uris must be a non-empty array of URLs."),
    ],
    ids=["http-remote", "javascript", "fragment", "credentials", "none"],
)
def test_a_redirect_uri_that_is_not_https_or_loopback_is_refused(uris: list[str], problem: str) -> None:
    response = register({"redirect_uris": uris})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"
    assert response.json()["error_description"].startswith(problem)


@pytest.mark.parametrize(
    ("body", "description"),
    [
        (
            {"redirect_uris": ["https://a.example/cb"], "scope": "read admin"},
            "Unknown or not grantable scopes: admin",
        ),
        (
            {"redirect_uris": ["https://a.example/cb"], "grant_types": ["password"]},
            "grant_types may only be authorization_code and refresh_token.",
        ),
        (
            {"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]},
            "response_types may only be ['code'].",
        ),
        (["not", "an", "object"], "The request body must be a JSON object."),
    ],
    ids=["admin-scope", "password-grant", "implicit", "array"],
)
def test_metadata_this_server_does_not_grant_is_invalid_client_metadata(body: object, description: str):
    response = register(body)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"
    assert response.json()["error_description"].startswith(description)


def test_a_body_that_is_not_json_is_invalid_client_metadata() -> None:
    response = Client().post("/oauth/register/", "{", content_type="application/json", **HOST)
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_client_metadata",
        "error_description": "The request body must be JSON.",
    }


def test_a_registration_flood_from_one_address_is_limited(settings) -> None:
    settings.CORTEX_OAUTH_REGISTRATIONS_PER_MINUTE = 3
    body = {"redirect_uris": ["http://127.0.0.1/cb"]}
    statuses = [register(body).status_code for _ in range(4)]
    assert statuses == [201, 201, 201, 429]
    refused = register(body)
    assert refused.status_code == 429
    assert refused.json()["error"] == "slow_down"
    assert refused.json()["error_description"].startswith("Too many client registrations from this address;")
    assert 1 <= int(refused["Retry-After"]) <= 20


def test_a_registration_cannot_be_updated_past_the_redirect_rules() -> None:
    created = register({"redirect_uris": ["https://a.example/cb"]}).json()
    response = Client().put(
        f"/oauth/register/{created['client_id']}/",
        {"redirect_uris": ["http://evil.example/cb"]},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {created['registration_access_token']}",
        **HOST,
    )
    assert response.status_code == 405
