"""CortexWeb as an OAuth protected resource (RFC 9728; the MCP authorization specification): the
metadata documents and the challenge of a 401 on ``/mcp`` that points an MCP host to them."""

from __future__ import annotations

import httpx
from django.test import Client

SCOPES = ["read", "write", "upstream", "verify"]


def test_the_mcp_resource_metadata_names_the_resource_its_server_scopes_and_header_bearer(db) -> None:
    response = Client().get("/.well-known/oauth-protected-resource/mcp", HTTP_HOST="localhost")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Access-Control-Allow-Origin"] == "*"
    assert response.json() == {
        "resource": "http://localhost/mcp",
        "authorization_servers": ["http://localhost"],
        "scopes_supported": SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": "CortexWeb MCP",
    }


def test_the_root_metadata_names_the_server_as_the_resource(db) -> None:
    response = Client().get("/.well-known/oauth-protected-resource", HTTP_HOST="localhost")
    assert response.status_code == 200
    assert response.json() == {
        "resource": "http://localhost",
        "authorization_servers": ["http://localhost"],
        "scopes_supported": SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": "CortexWeb",
    }


def test_behind_a_tls_proxy_the_metadata_names_the_https_urls(settings, db) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    response = Client().get(
        "/.well-known/oauth-protected-resource/mcp", HTTP_HOST="localhost", HTTP_X_FORWARDED_PROTO="https"
    )
    assert response.json()["resource"] == "https://localhost/mcp"
    assert response.json()["authorization_servers"] == ["https://localhost"]


def test_the_metadata_is_read_only(db) -> None:
    response = Client().post("/.well-known/oauth-protected-resource/mcp", HTTP_HOST="localhost")
    assert response.status_code == 405


def test_a_401_on_mcp_points_to_the_metadata_and_the_document_names_that_resource(
    cortex_server, transactional_db
) -> None:
    """What an MCP host does from nothing but the server URL: the tool call's 401 names the
    metadata document, which names the URL it called as the resource."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "knowledge.search"}}
    headers = {"Accept": "application/json, text/event-stream"}
    refused = httpx.post(cortex_server.mcp_url, json=body, headers=headers, timeout=30)
    assert refused.status_code == 401
    challenge = refused.headers["WWW-Authenticate"]
    metadata_url = f"{cortex_server.url}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith('Bearer realm="cortexweb", error_description="')
    assert challenge.endswith(f', resource_metadata="{metadata_url}"')
    metadata = httpx.get(metadata_url, timeout=30).json()
    assert metadata["resource"] == cortex_server.mcp_url
    assert metadata["authorization_servers"] == [cortex_server.url]


def test_an_oauth_token_without_the_scope_a_tool_needs_gets_403_insufficient_scope(
    cortex_server, registry
) -> None:
    """The MCP step-up: the challenge names the scope to ask the user for."""
    from apps.oauth import services as oauth_services
    from tests.oauth.flow import Host, make_user

    oauth_services.registration_limiter(address="127.0.0.1").reset()
    token = Host.registered(make_user()).tokens(granted=("read",))["access_token"]
    body = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    response = httpx.post(cortex_server.mcp_url, json=body, headers=headers, timeout=30)
    description = (
        "Tool 'wikidata.get_claims' needs the 'upstream' scope, which this authorization did not grant; "
        "authorize again asking for it."
    )
    assert response.status_code == 403
    assert response.headers["WWW-Authenticate"] == (
        f'Bearer realm="cortexweb", error="insufficient_scope", scope="upstream", '
        f'error_description="{description}", '
        f'resource_metadata="{cortex_server.url}/.well-known/oauth-protected-resource/mcp"'
    )
    assert response.json()["error"]["data"] == {
        "error": {"code": "permission_denied", "message": description, "details": {"required": "upstream"}}
    }
