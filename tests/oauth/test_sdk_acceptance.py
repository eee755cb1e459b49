"""Acceptance (#28): the official MCP Python SDK's OAuth client connects to ``/mcp`` from nothing but
the server URL: it discovers the metadata (RFC 9728, RFC 8414), registers (RFC 7591), gets a code
through the sign-in and consent pages (driven here over HTTP as a browser would), exchanges it with
PKCE, calls a read tool, refreshes, and is refused once its token is revoked.

The MCP conformance suite (``@modelcontextprotocol/conformance`` 0.1.13, tests/mcp_server/
test_conformance.py) has no server auth scenario: its ``auth/*`` scenarios (metadata-default,
metadata-var1..3, basic-cimd, scope-from-www-authenticate, scope-from-scopes-supported,
scope-omitted-when-undefined, scope-step-up, scope-retry-limit, token-endpoint-auth-basic/post/none,
resource-mismatch, pre-registration, 2025-03-26 back-compat and fallback, client-credentials-*) are
client scenarios, run against the suite's own mock server; so none applies to this server, and its
generic server scenarios still pass with OAuth in place. This test is the server-side counterpart:
the official SDK client's flow against this server."""

from __future__ import annotations

import asyncio
import time
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin

import httpx
import httpx2
from django.contrib.auth import get_user_model
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from apps.oauth import services
from tests.oauth.flow import PASSWORD, query_of

REDIRECT = "http://127.0.0.1:51123/callback"


class MemoryStorage:
    """The SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class _Inputs(HTMLParser):
    """The named inputs of a page's form (hidden fields, the CSRF token)."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        fields = dict(attrs)
        if tag == "input" and fields.get("name") and fields.get("type") in ("hidden", None, "text"):
            self.values[str(fields["name"])] = fields.get("value") or ""


def inputs_of(html: str) -> dict[str, str]:
    parser = _Inputs()
    parser.feed(html)
    return parser.values


class Browser:
    """The person at the MCP host: follows the authorization URL, signs in, allows the scopes."""

    def __init__(self, username: str) -> None:
        self.username = username
        self.result: AuthorizationCodeResult | None = None
        self.consent_html = ""

    async def follow(self, authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=30) as browser:
            response = await browser.get(authorization_url)
            assert response.status_code == 302, response.text
            login_url = urljoin(authorization_url, response.headers["Location"])
            login_page = await browser.get(login_url)
            signed_in = await browser.post(
                login_url,
                data={**inputs_of(login_page.text), "username": self.username, "password": PASSWORD},
            )
            assert signed_in.status_code == 302, signed_in.text
            consent = await browser.get(urljoin(login_url, signed_in.headers["Location"]))
            assert consent.status_code == 200, consent.text
            self.consent_html = consent.text
            fields = inputs_of(consent.text)
            decision = await browser.post(
                urljoin(authorization_url, "/oauth/authorize/"),
                # The host asks for every scope the metadata lists; the person narrows it to read.
                data={**fields, "allow": "on", "granted": ["read"]},
            )
            assert decision.status_code == 302, decision.text
            query = query_of(decision.headers["Location"])
            assert decision.headers["Location"].startswith(REDIRECT)
            self.result = AuthorizationCodeResult(
                code=query["code"], state=query.get("state"), iss=query.get("iss")
            )

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def test_the_sdk_oauth_client_connects_from_the_server_url_alone(cortex_server, registry) -> None:
    get_user_model().objects.create_user(username="grace", password=PASSWORD)
    services.registration_limiter(address="127.0.0.1").reset()
    browser = Browser("grace")
    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=cortex_server.mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="SDK acceptance host",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope="read",
        ),
        storage=storage,
        redirect_handler=browser.follow,
        callback_handler=browser.callback,
    )

    async def session() -> tuple[Any, Any]:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=60) as http_client,
            Client(
                streamable_http_client(cortex_server.mcp_url, http_client=http_client), mode="legacy"
            ) as client,
        ):
            first = await client.call_tool("knowledge.search", {"query": "password hashing"})
            first_access, first_scope = storage.tokens.access_token, storage.tokens.scope
            # The access token is short-lived: once the client holds it for expired, it refreshes.
            provider.context.token_expiry_time = time.time() - 1
            second = await client.call_tool("knowledge.search", {"query": "password hashing"})
            return (first, first_access, first_scope), second

    (first, first_access, first_scope), second = asyncio.run(session())
    assert first_scope == "read"
    assert (
        browser.result is not None and browser.result.iss == cortex_server.url
    )  # RFC 9207, checked by the SDK
    assert first.is_error is False
    assert second.is_error is False
    assert "Authorize SDK acceptance host?" in browser.consent_html
    assert "upstream: start work against upstream sources" in browser.consent_html  # asked, not granted
    refreshed = storage.tokens
    assert refreshed is not None and refreshed.access_token != first_access
    assert refreshed.scope == "read"

    # The refreshed token works on /mcp by itself; revoked (RFC 7009), it is refused with the challenge.
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "knowledge.search", "arguments": {"query": "password hashing"}},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {refreshed.access_token}",
    }
    assert httpx.post(cortex_server.mcp_url, json=body, headers=headers, timeout=30).status_code == 200
    revoked = httpx.post(
        f"{cortex_server.url}/oauth/revoke/",
        data={"token": refreshed.access_token, "client_id": storage.client_info.client_id},
        timeout=30,
    )
    assert revoked.status_code == 200
    refused = httpx.post(cortex_server.mcp_url, json=body, headers=headers, timeout=30)
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    assert (
        f'resource_metadata="{cortex_server.url}/.well-known/oauth-protected-resource/mcp"'
        in (refused.headers["WWW-Authenticate"])
    )
