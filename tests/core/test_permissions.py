"""The permission matrix: every operation of ``apps.core.security``'s table, called with every kind of
credential on every surface, gets the outcome the table predicts (which docs/security.md shows).

Each probe is built so that, once authorised, the operation refuses at once or answers from what is
stored (an invalid body, an unknown id): an allowed cell starts no upstream work, except the one
registry tool call the fake Wikidata MCP server answers. Each allowed cell's exact answer is in the
probe, so "allowed" means the operation really ran past authorisation.

Also here: the table lists every operation there is; a read token with valid input starts nothing;
page submissions are rate-limited per user; /metrics follows CORTEX_METRICS_ALLOW_NETWORKS.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from django.contrib.messages import get_messages
from django.core.checks import run_checks
from django.test import Client

from apps.arxiv.models import SearchRun
from apps.connectors.models import CallTransport
from apps.core import security
from apps.core.security import (
    ALLOWED,
    HTTP_OPERATIONS,
    MCP_OPERATIONS,
    PAGE_COLUMNS,
    PAGE_OPERATIONS,
    TOKEN_COLUMNS,
    Operation,
    page_outcome,
    session_outcome,
    token_outcome,
)
from apps.grounding.models import Verification
from apps.mcp_server import services as mcp_services
from apps.mcp_server.tools import CORTEX_TOOLS
from apps.wikidata import tasks
from apps.wikidata.models import FactRun
from tests.conftest import make_user
from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401 - for wikidata_mcp
from tests.connectors.mcp_server import mcp_servers_fixture, wikidata_mcp_fixture  # noqa: F401 - the fake MCP
from tests.mcp_server.conftest import stdio_session, text_of

BAD_TOKEN = "cwt_not-a-real-token"
UNKNOWN_UUID = "6b1f7c1e-5d0b-4a47-9f55-2f0c3f4b1a11"
OUTSIDE = "192.0.2.10"  # TEST-NET-1: outside the default CORTEX_METRICS_ALLOW_NETWORKS
ACCEPT = {"Accept": "application/json, text/event-stream"}


# --- Probes: how each operation is called, and its exact answer once authorised ----------------------


@dataclass(frozen=True)
class Probe:
    method: str
    path: str
    allowed: int
    body: dict[str, Any] | None = None
    remote_addr: str = "127.0.0.1"


HTTP_PROBES: dict[str, Probe] = {
    "GET /v1/connectors/service-map": Probe("GET", "/v1/connectors/service-map", 200),
    "GET /v1/tools": Probe("GET", "/v1/tools", 200),
    "POST /v1/tools/call": Probe("POST", "/v1/tools/call", 404, {"name": "no.such_tool", "arguments": {}}),
    "POST /v1/agents/plan": Probe("POST", "/v1/agents/plan", 422, {}),
    "POST /v1/embeddings": Probe("POST", "/v1/embeddings", 422, {}),
    "POST /v1/arxiv/search": Probe("POST", "/v1/arxiv/search", 422, {}),
    "POST /v1/arxiv/lookup": Probe("POST", "/v1/arxiv/lookup", 422, {}),
    "GET /v1/arxiv/runs/{run_id}": Probe("GET", f"/v1/arxiv/runs/{UNKNOWN_UUID}", 404),
    "POST /v1/facts/query": Probe("POST", "/v1/facts/query", 422, {}),
    "GET /v1/facts/runs/{run_id}": Probe("GET", f"/v1/facts/runs/{UNKNOWN_UUID}", 404),
    "GET /v1/facts/runs/{run_id}/prov.ttl": Probe("GET", f"/v1/facts/runs/{UNKNOWN_UUID}/prov.ttl", 404),
    "GET /v1/facts/runs/{run_id}/prov.jsonld": Probe(
        "GET", f"/v1/facts/runs/{UNKNOWN_UUID}/prov.jsonld", 404
    ),
    "POST /v1/knowledge/search": Probe("POST", "/v1/knowledge/search", 422, {}),
    "POST /v1/knowledge/verify": Probe("POST", "/v1/knowledge/verify", 422, {}),
    "POST /v1/grounding/ground": Probe("POST", "/v1/grounding/ground", 422, {}),
    "GET /v1/memory": Probe("GET", "/v1/memory", 200),  # the token's memories: none
    "POST /v1/memory/forget-all": Probe("POST", "/v1/memory/forget-all", 422, {}),  # no confirm: true
    "POST /v1/memory/tell": Probe("POST", "/v1/memory/tell", 422, {}),
    "POST /v1/memory/tell/batch": Probe("POST", "/v1/memory/tell/batch", 422, {}),
    "POST /v1/memory/ask": Probe("POST", "/v1/memory/ask", 422, {}),
    "GET /v1/memory/export": Probe("GET", "/v1/memory/export", 200),  # the token's memories: none
    "POST /v1/memory/import": Probe("POST", "/v1/memory/import", 422, {}),  # JSON-LD holding no memory
    "GET /v1/memory/{memory_id}": Probe("GET", f"/v1/memory/{UNKNOWN_UUID}", 404),
    "PATCH /v1/memory/{memory_id}": Probe("PATCH", f"/v1/memory/{UNKNOWN_UUID}", 404, {"importance": 0.9}),
    "GET /v1/memory/{memory_id}/history": Probe("GET", f"/v1/memory/{UNKNOWN_UUID}/history", 404),
    "DELETE /v1/memory/{memory_id}": Probe("DELETE", f"/v1/memory/{UNKNOWN_UUID}", 404),
    "POST /v1/memory/{memory_id}/forget": Probe("POST", f"/v1/memory/{UNKNOWN_UUID}/forget", 404, {}),
    "POST /v1/memory/{memory_id}/pin": Probe("POST", f"/v1/memory/{UNKNOWN_UUID}/pin", 404, {}),
    "GET /api/": Probe("GET", "/api/", 200),
    "GET /api/events/": Probe("GET", "/api/events/", 200),
    "GET /api/events/{id}/": Probe("GET", "/api/events/999999999/", 404),
    "GET /api/connectors/": Probe("GET", "/api/connectors/", 200),
    "GET /api/connectors/{id}/": Probe("GET", "/api/connectors/nope/", 404),
    "POST /api/connectors/": Probe("POST", "/api/connectors/", 400, {}),
    "PUT /api/connectors/{id}/": Probe("PUT", "/api/connectors/nope/", 404, {}),
    "PATCH /api/connectors/{id}/": Probe("PATCH", "/api/connectors/nope/", 404, {}),
    "DELETE /api/connectors/{id}/": Probe("DELETE", "/api/connectors/nope/", 404),
    "GET /api/tools/": Probe("GET", "/api/tools/", 200),
    "GET /api/tools/{id}/": Probe("GET", "/api/tools/no.such_tool/", 404),
    "POST /api/tools/": Probe("POST", "/api/tools/", 400, {}),
    "PUT /api/tools/{id}/": Probe("PUT", "/api/tools/no.such_tool/", 404, {}),
    "PATCH /api/tools/{id}/": Probe("PATCH", "/api/tools/no.such_tool/", 404, {}),
    "DELETE /api/tools/{id}/": Probe("DELETE", "/api/tools/no.such_tool/", 404),
    "GET /api/facts/": Probe("GET", "/api/facts/", 200),
    "GET /api/facts/{id}/": Probe("GET", "/api/facts/999999999/", 404),
    "GET /api/fact-runs/": Probe("GET", "/api/fact-runs/", 200),
    "GET /api/fact-runs/{id}/": Probe("GET", f"/api/fact-runs/{UNKNOWN_UUID}/", 404),
    "GET /api/memories/": Probe("GET", "/api/memories/", 200),
    "GET /api/memories/{id}/": Probe("GET", f"/api/memories/{UNKNOWN_UUID}/", 404),
    "GET /api/knowledge/": Probe("GET", "/api/knowledge/", 200),
    "GET /api/knowledge/{id}/": Probe("GET", "/api/knowledge/NOPE-999/", 404),
    "GET /api/verifications/": Probe("GET", "/api/verifications/", 200),
    "GET /api/verifications/{id}/": Probe("GET", "/api/verifications/999999999/", 404),
    "POST /api/verifications/{id}/review/": Probe(
        "POST", "/api/verifications/999999999/review/", 404, {"decision": "approve"}
    ),
    "GET /api/papers/": Probe("GET", "/api/papers/", 200),
    "GET /api/papers/{id}/": Probe("GET", "/api/papers/9999.99999/", 404),
    "POST /ontology-agent/discover": Probe("POST", "/ontology-agent/discover", 422, {}),
    "POST /ontology-agent/read": Probe("POST", "/ontology-agent/read", 404, {"iri": "cw:NoSuchClass"}),
    "POST /ontology-agent/traverse": Probe(
        "POST", "/ontology-agent/traverse", 422, {"startIri": "cw:X", "depth": 9}
    ),
    "POST /ontology-agent/validate": Probe("POST", "/ontology-agent/validate", 422, {"axioms": []}),
    "GET /ontology-agent/status": Probe("GET", "/ontology-agent/status", 200),
    "POST /ontology-agent/query": Probe("POST", "/ontology-agent/query", 422, {}),
    # An empty body is refused before the handler, so probes do not spend the proposal limit.
    "POST /ontology-agent/propose": Probe("POST", "/ontology-agent/propose", 422, {}),
    "GET /metrics from CORTEX_METRICS_ALLOW_NETWORKS": Probe("GET", "/metrics", 200),
    "GET /metrics from any other address": Probe("GET", "/metrics", 200, remote_addr=OUTSIDE),
    "GET /healthz": Probe("GET", "/healthz", 200),
    "GET /readyz": Probe("GET", "/readyz", 200),
    "GET /.well-known/oauth-protected-resource": Probe("GET", "/.well-known/oauth-protected-resource", 200),
    "GET /.well-known/oauth-protected-resource/mcp": Probe(
        "GET", "/.well-known/oauth-protected-resource/mcp", 200
    ),
    "GET /.well-known/oauth-authorization-server": Probe(
        "GET", "/.well-known/oauth-authorization-server", 200
    ),
    # No redirect URI: refused (invalid_redirect_uri) before a client is made or the limit is counted.
    "POST /oauth/register/": Probe("POST", "/oauth/register/", 400, {}),
    "POST /oauth/token/": Probe("POST", "/oauth/token/", 400, {}),
}


@dataclass(frozen=True)
class McpProbe:
    method: str  # tools/call or resources/read
    target: str  # tool name or URI
    allowed: str  # the outcome code once authorised ("ok" or the error code)
    arguments: dict[str, Any] = field(default_factory=dict)


REGISTRY_TOOL = "wikidata.get_claims"  # answered by the fake Wikidata MCP server

MCP_PROBES: dict[str, McpProbe] = {
    "tools/call facts.query": McpProbe("tools/call", "facts.query", "validation_error"),
    "tools/call facts.run": McpProbe("tools/call", "facts.run", "not_found", {"runId": UNKNOWN_UUID}),
    "tools/call arxiv.search": McpProbe("tools/call", "arxiv.search", "validation_error"),
    "tools/call arxiv.lookup": McpProbe("tools/call", "arxiv.lookup", "validation_error"),
    "tools/call knowledge.search": McpProbe("tools/call", "knowledge.search", "validation_error"),
    "tools/call knowledge.verify": McpProbe("tools/call", "knowledge.verify", "validation_error"),
    "tools/call grounding.ground": McpProbe("tools/call", "grounding.ground", "validation_error"),
    "tools/call connectors.service_map": McpProbe("tools/call", "connectors.service_map", "ok"),
    "tools/call agents.plan": McpProbe("tools/call", "agents.plan", "validation_error"),
    "tools/call tell": McpProbe("tools/call", "tell", "validation_error"),
    "tools/call ask": McpProbe("tools/call", "ask", "validation_error"),
    "tools/call memory.forget": McpProbe("tools/call", "memory.forget", "not_found", {"id": UNKNOWN_UUID}),
    "tools/call memory.list": McpProbe("tools/call", "memory.list", "ok"),
    "tools/call memory.get": McpProbe("tools/call", "memory.get", "not_found", {"id": UNKNOWN_UUID}),
    "tools/call memory.update": McpProbe(
        "tools/call", "memory.update", "not_found", {"id": UNKNOWN_UUID, "importance": 0.9}
    ),
    "tools/call memory.history": McpProbe("tools/call", "memory.history", "not_found", {"id": UNKNOWN_UUID}),
    "tools/call memory.pin": McpProbe("tools/call", "memory.pin", "not_found", {"id": UNKNOWN_UUID}),
    "tools/call memory.forget_all": McpProbe("tools/call", "memory.forget_all", "validation_error"),
    "tools/call memory.export": McpProbe("tools/call", "memory.export", "ok"),
    "tools/call ontology_discover": McpProbe("tools/call", "ontology_discover", "validation_error"),
    "tools/call ontology_read": McpProbe(
        "tools/call", "ontology_read", "not_found", {"iri": "cw:NoSuchClass"}
    ),
    "tools/call ontology_traverse": McpProbe("tools/call", "ontology_traverse", "validation_error"),
    "tools/call ontology_validate": McpProbe("tools/call", "ontology_validate", "validation_error"),
    "tools/call ontology_status": McpProbe("tools/call", "ontology_status", "ok"),
    "tools/call ontology_query": McpProbe("tools/call", "ontology_query", "validation_error"),
    "tools/call ontology_propose": McpProbe("tools/call", "ontology_propose", "validation_error"),
    security.CATALOGUE_TOOL: McpProbe("tools/call", REGISTRY_TOOL, "ok", {"entity_id": "Q42"}),
    "resources/read cortexweb://service-map": McpProbe("resources/read", "cortexweb://service-map", "ok"),
    "resources/read cortexweb://facts/runs/{id}": McpProbe(
        "resources/read", f"cortexweb://facts/runs/{UNKNOWN_UUID}", "not_found"
    ),
    "resources/read cortexweb://facts/runs/{id}/prov.ttl": McpProbe(
        "resources/read", f"cortexweb://facts/runs/{UNKNOWN_UUID}/prov.ttl", "not_found"
    ),
    "resources/read cortexweb://knowledge/{entryId}": McpProbe(
        "resources/read", "cortexweb://knowledge/NOPE-999", "not_found"
    ),
}

PAGE_PROBES: dict[str, Probe] = {
    "GET /connectors": Probe("GET", "/connectors", 200),
    "GET /connectors/<slug>": Probe("GET", "/connectors/nope", 404),
    "POST /connectors/<slug>/sync": Probe("POST", "/connectors/nope/sync", 404, {}),
    "GET /connectors/tools/<name>": Probe("GET", "/connectors/tools/nope.nope", 404),
    "POST /connectors/tools/<name>/try": Probe("POST", "/connectors/tools/nope.nope/try", 404, {}),
    "GET /papers": Probe("GET", "/papers", 200),
    "GET /papers/<id>": Probe("GET", "/papers/2401.99999", 404),
    "GET /papers/live": Probe("GET", "/papers/live", 200),
    "POST /papers/live": Probe("POST", "/papers/live", 422, {}),  # an empty form: nothing is sent
    "GET /papers/runs/<id>": Probe("GET", f"/papers/runs/{UNKNOWN_UUID}", 404),
    "GET /facts": Probe("GET", "/facts", 200),
    "POST /facts": Probe("POST", "/facts", 400, {}),  # an empty form: nothing is queued
    "GET /facts/runs/<id>": Probe("GET", f"/facts/runs/{UNKNOWN_UUID}", 404),
    "GET /facts/runs/<id>/prov.ttl": Probe("GET", f"/facts/runs/{UNKNOWN_UUID}/prov.ttl", 404),
    "GET /facts/runs/<id>/prov.jsonld": Probe("GET", f"/facts/runs/{UNKNOWN_UUID}/prov.jsonld", 404),
    "GET /facts/<id>": Probe("GET", "/facts/999999999", 404),
    "GET /verifications": Probe("GET", "/verifications", 200),
    "GET /verifications/<id>": Probe("GET", "/verifications/999999999", 404),
    "POST /verifications/<id>/review": Probe("POST", "/verifications/999999999/review", 404, {}),
    "GET /verifications/messages/<id>": Probe("GET", f"/verifications/messages/{UNKNOWN_UUID}", 404),
    "GET /knowledge": Probe("GET", "/knowledge", 200),
    "GET /knowledge/<entry_id>": Probe("GET", "/knowledge/NOPE-999", 404),
    "GET /memories": Probe("GET", "/memories", 200),
    "GET /memories/<id>": Probe("GET", f"/memories/{UNKNOWN_UUID}", 404),
    "POST /memories/<id>/pin": Probe("POST", f"/memories/{UNKNOWN_UUID}/pin", 404, {"pinned": "true"}),
    "POST /memories/<id>/forget mode=fade": Probe(
        "POST", f"/memories/{UNKNOWN_UUID}/forget", 404, {"mode": "fade"}
    ),
    "POST /memories/<id>/forget mode=remove": Probe(
        "POST", f"/memories/{UNKNOWN_UUID}/forget", 404, {"mode": "remove"}
    ),
    "GET /ontology": Probe("GET", "/ontology", 200),
    "GET /ontology/<LocalName>": Probe("GET", "/ontology/NoSuchClass", 404),
    "GET /ontology/export.ttl": Probe("GET", "/ontology/export.ttl", 200),
    "GET /ontology/export.zip": Probe("GET", "/ontology/export.zip", 200),
    "GET /ontology/proposals": Probe("GET", "/ontology/proposals", 200),
    "POST /ontology/proposals/<id>/approve": Probe(
        "POST", f"/ontology/proposals/{UNKNOWN_UUID}/approve", 404, {}
    ),
    "POST /ontology/proposals/<id>/reject": Probe(
        "POST", f"/ontology/proposals/{UNKNOWN_UUID}/reject", 404, {"note": "no"}
    ),
    "GET /events": Probe("GET", "/events", 200),
    "GET /changes": Probe("GET", "/changes", 200),
    "GET /": Probe("GET", "/", 200),
    "GET /dashboard/<panel>": Probe("GET", "/dashboard/tool-calls", 200),
}


# --- Callers -------------------------------------------------------------------------------------


@pytest.fixture
def raw_tokens(make_token) -> dict[str, str | None]:
    """Each column's token: none, one no row matches, or a fresh token with exactly its scopes."""
    tokens: dict[str, str | None] = {}
    for column in TOKEN_COLUMNS:
        if not column.presented:
            tokens[column.label] = None
        elif not column.valid:
            tokens[column.label] = BAD_TOKEN
        else:
            tokens[column.label] = make_token(*column.scopes, name=f"matrix-{column.label}")[1]
    return tokens


def _error_code(response: Any) -> str:
    try:
        return response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return ""


def _http_outcome(response: Any) -> str:
    """401/403 only in the error shape with their codes; anything else is past authorisation."""
    if response.status_code == 401:
        assert response["WWW-Authenticate"] == 'Bearer realm="cortexweb"'
        return "401" if _error_code(response) == "authentication_required" else "401 without the shape"
    if response.status_code == 403:
        return "403" if _error_code(response) == "permission_denied" else "403 without the shape"
    return f"{ALLOWED} {response.status_code}"


def _http_grid(raw_tokens: dict[str, str | None]) -> list[tuple[str, str, str]]:
    grid = []
    for operation in HTTP_OPERATIONS:
        probe = HTTP_PROBES[operation.name]
        for column in TOKEN_COLUMNS:
            token = raw_tokens[column.label]
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            client = Client(headers=headers, REMOTE_ADDR=probe.remote_addr)
            kwargs: dict[str, Any] = {}
            if probe.body is not None:
                kwargs = {"data": json.dumps(probe.body), "content_type": "application/json"}
            response = getattr(client, probe.method.lower())(probe.path, **kwargs)
            grid.append((operation.name, column.label, _http_outcome(response)))
    return grid


def _expected(operations: tuple[Operation, ...], allowed: dict[str, Any]) -> list[tuple[str, str, str]]:
    grid = []
    for operation in operations:
        for column in TOKEN_COLUMNS:
            outcome = token_outcome(operation, column)
            if outcome == ALLOWED:
                outcome = f"{ALLOWED} {allowed[operation.name]}"
            grid.append((operation.name, column.label, outcome))
    return grid


def _mcp_error_outcome(code: str) -> str:
    return {"authentication_required": "401", "permission_denied": "403"}.get(code, f"{ALLOWED} {code}")


def _mcp_http_outcome(url: str, token: str | None, probe: McpProbe) -> str:
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    params = (
        {"name": probe.target, "arguments": probe.arguments}
        if probe.method == "tools/call"
        else {"uri": probe.target}
    )
    body = {"jsonrpc": "2.0", "id": 1, "method": probe.method, "params": params}
    response = httpx.post(url, json=body, headers=headers, timeout=60)
    if response.status_code == 401:
        assert response.headers["WWW-Authenticate"].startswith('Bearer realm="cortexweb"')
        error = response.json()["error"]  # a JSON-RPC error, so that SDK clients show its message
        return "401" if error["data"]["error"]["code"] == "authentication_required" else "401?"
    assert response.status_code == 200, response.text
    answer = response.json()
    if "error" in answer:  # a resource read refused or not found: a JSON-RPC error
        error = answer["error"]
        if error["code"] == mcp_services_not_authorised():
            return _mcp_error_outcome(error["data"]["error"]["code"])
        return f"{ALLOWED} not_found" if error["code"] == -32602 else f"{ALLOWED} {error['code']}"
    result = answer["result"]
    if probe.method == "tools/call" and result["isError"]:
        return _mcp_error_outcome(result["content"][0]["text"].split(":")[0])
    return f"{ALLOWED} ok"


def mcp_services_not_authorised() -> int:
    from apps.mcp_server.server import NOT_AUTHORISED

    return NOT_AUTHORISED


async def _mcp_stdio_outcomes(token: str | None) -> list[str]:
    """Every MCP operation, in order, in one stdio session whose CORTEX_API_TOKEN is ``token``."""
    outcomes = []
    async with stdio_session(token) as client:
        for operation in MCP_OPERATIONS:
            probe = MCP_PROBES[operation.name]
            if probe.method == "tools/call":
                result = await client.call_tool(probe.target, probe.arguments)
                outcomes.append(
                    _mcp_error_outcome(text_of(result).split(":")[0]) if result.is_error else f"{ALLOWED} ok"
                )
                continue
            try:
                await client.read_resource(probe.target)
            except Exception as error:  # the SDK raises MCPError for a JSON-RPC error
                outcomes.append(_resource_error_outcome(error))
            else:
                outcomes.append(f"{ALLOWED} ok")
    return outcomes


def _mcp_stdio_columns(raw_tokens: dict[str, str | None]) -> dict[str, list[str]]:
    """One stdio server process per column, all at once (each one's start-up is most of the time)."""

    async def go() -> list[list[str]]:
        return await asyncio.gather(*(_mcp_stdio_outcomes(raw_tokens[c.label]) for c in TOKEN_COLUMNS))

    return dict(zip([column.label for column in TOKEN_COLUMNS], asyncio.run(go()), strict=True))


def _resource_error_outcome(error: Exception) -> str:
    code = getattr(error, "code", None)
    if code == mcp_services_not_authorised():
        data = getattr(error, "data", None) or getattr(getattr(error, "error", None), "data", None)
        return _mcp_error_outcome(data["error"]["code"])
    return f"{ALLOWED} not_found" if code == -32602 else f"{ALLOWED} {code}"


def _page_grid() -> list[tuple[str, str, str]]:
    clients = {}
    for index, role in enumerate(PAGE_COLUMNS):
        client = Client()
        if role.signed_in:
            client.force_login(
                make_user(f"role{index}", *role.perms, is_staff=role.staff, is_superuser=role.superuser)
            )
        clients[role.label] = client
    grid = []
    for operation in PAGE_OPERATIONS:
        probe = PAGE_PROBES[operation.name]
        for role in PAGE_COLUMNS:
            client = clients[role.label]
            if probe.method == "POST":
                response = client.post(probe.path, probe.body or {})
            else:
                response = client.get(probe.path)
            if response.status_code == 302 and response["Location"].startswith("/admin/login/?next="):
                outcome = security.LOGIN
            elif response.status_code == 403:
                outcome = "403"
            else:
                outcome = f"{ALLOWED} {response.status_code}"
            grid.append((operation.name, role.label, outcome))
    return grid


def _role_clients() -> dict[str, Client]:
    clients = {}
    for index, role in enumerate(PAGE_COLUMNS):
        client = Client()
        if role.signed_in:
            client.force_login(
                make_user(f"session{index}", *role.perms, is_staff=role.staff, is_superuser=role.superuser)
            )
        clients[role.label] = client
    return clients


def _session_grid() -> list[tuple[str, str, str]]:
    """Every /api/ operation with each role's session and no token (the test client skips CSRF
    checks; ``test_api_sessions`` checks them)."""
    clients = _role_clients()
    grid = []
    for operation in security.API_SESSION_OPERATIONS:
        probe = HTTP_PROBES[operation.name]
        for role in PAGE_COLUMNS:
            kwargs: dict[str, Any] = {}
            if probe.body is not None:
                kwargs = {"data": json.dumps(probe.body), "content_type": "application/json"}
            response = getattr(clients[role.label], probe.method.lower())(probe.path, **kwargs)
            grid.append((operation.name, role.label, _http_outcome(response)))
    return grid


def _expected_sessions() -> list[tuple[str, str, str]]:
    grid = []
    for operation in security.API_SESSION_OPERATIONS:
        for role in PAGE_COLUMNS:
            outcome = session_outcome(operation, role)
            if outcome == ALLOWED:
                outcome = f"{ALLOWED} {HTTP_PROBES[operation.name].allowed}"
            grid.append((operation.name, role.label, outcome))
    return grid


def _expected_pages() -> list[tuple[str, str, str]]:
    grid = []
    for operation in PAGE_OPERATIONS:
        for role in PAGE_COLUMNS:
            outcome = page_outcome(operation, role)
            if outcome == ALLOWED:
                outcome = f"{ALLOWED} {PAGE_PROBES[operation.name].allowed}"
            grid.append((operation.name, role.label, outcome))
    return grid


# --- The matrix ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("surface", ["http", "mcp-http", "mcp-stdio", "pages", "api-sessions"])
def test_the_permission_matrix(surface: str, request, raw_tokens, monkeypatch) -> None:
    """Every cell of the table, on each surface, exactly as apps/core/security.py predicts."""
    if surface == "http":
        monkeypatch.setattr("apps.core.views.readiness", lambda: {"postgres": {"ok": True}})
        found = _http_grid(raw_tokens)
        expected = _expected(HTTP_OPERATIONS, {name: probe.allowed for name, probe in HTTP_PROBES.items()})
    elif surface == "pages":
        found, expected = _page_grid(), _expected_pages()
    elif surface == "api-sessions":
        found, expected = _session_grid(), _expected_sessions()
    else:
        wikidata_mcp = request.getfixturevalue("wikidata_mcp")  # the default registry and a fake server
        allowed = {name: probe.allowed for name, probe in MCP_PROBES.items()}
        found = []
        if surface == "mcp-http":
            url = request.getfixturevalue("cortex_server").mcp_url
            for operation in MCP_OPERATIONS:
                for column in TOKEN_COLUMNS:
                    outcome = _mcp_http_outcome(url, raw_tokens[column.label], MCP_PROBES[operation.name])
                    found.append((operation.name, column.label, outcome))
        else:
            by_column = _mcp_stdio_columns(raw_tokens)
            found = [
                (operation.name, column.label, by_column[column.label][row])
                for row, operation in enumerate(MCP_OPERATIONS)
                for column in TOKEN_COLUMNS
            ]
        expected = _expected(MCP_OPERATIONS, allowed)
        # Only the permitted registry-tool calls (upstream, admin) reached the upstream.
        assert wikidata_mcp.calls == [("get_statements", {"entity_id": "Q42"})] * 2
    assert [cell for cell in found if cell not in expected] == []
    assert found == expected


# --- The table lists every operation there is -----------------------------------------------------


def test_the_table_lists_every_v1_and_api_operation() -> None:
    from cortexweb.api import api

    v1 = {
        f"{method.upper()} {path}"
        for path, operations in api.get_openapi_schema()["paths"].items()
        for method in operations
    }
    from cortexweb.resources import router

    actions = {
        "list": ("GET", ""),
        "create": ("POST", ""),
        "retrieve": ("GET", "{id}/"),
        "update": ("PUT", "{id}/"),
        "partial_update": ("PATCH", "{id}/"),
        "destroy": ("DELETE", "{id}/"),
    }
    drf = {"GET /api/"} | {
        f"{method} /api/{prefix}/{suffix}"
        for prefix, viewset, _ in router.registry
        for action, (method, suffix) in actions.items()
        if hasattr(viewset, action)
    }
    # A viewset's own actions (``@action``, e.g. a verification's review).
    extra = {
        f"{method.upper()} /api/{prefix}/{{id}}/{action.url_path}/"
        for prefix, viewset, _ in router.registry
        for action in viewset.get_extra_actions()
        for method in action.mapping
    }
    listed = {
        operation.name for operation in HTTP_OPERATIONS if operation.surface in (security.V1, security.API)
    }
    assert listed == v1 | drf | extra
    assert set(HTTP_PROBES) == {operation.name for operation in HTTP_OPERATIONS}
    # What a session reads each resource with (the view's ``session_read_perms``) is the table's.
    reads = {operation.name: operation.session for operation in security.API_SESSION_OPERATIONS}
    assert {prefix: tuple(viewset.session_read_perms) for prefix, viewset, _ in router.registry} == {
        prefix: reads[f"GET /api/{prefix}/"] for prefix, _, _ in router.registry
    }
    assert {operation.name for operation in HTTP_OPERATIONS if operation.surface == security.API} == {
        operation.name for operation in security.API_SESSION_OPERATIONS
    }


def test_the_table_lists_every_ontology_agent_operation() -> None:
    from cortexweb.api import ontology_api

    served = {
        f"{method.upper()} {path}"
        for path, operations in ontology_api.get_openapi_schema()["paths"].items()
        for method in operations
    }
    listed = {operation.name for operation in HTTP_OPERATIONS if operation.surface == security.ONTOLOGY}
    assert listed == served


def test_the_table_lists_every_mcp_tool_and_resource() -> None:
    listed = {operation.name for operation in MCP_OPERATIONS}
    tools = {f"tools/call {tool.name}" for tool in CORTEX_TOOLS} | {security.CATALOGUE_TOOL}
    resources = {f"resources/read {item['uri']}" for item in mcp_services.mcp_resources_list()}
    templates = {f"resources/read {item['uriTemplate']}" for item in mcp_services.RESOURCE_TEMPLATES}
    assert listed == tools | resources | templates
    assert set(MCP_PROBES) == listed
    # The scope each own tool declares (and tools/list and docs/mcp.md show) is the table's.
    needs = {operation.name: operation.needs for operation in MCP_OPERATIONS}
    assert {tool.name: tool.scope for tool in CORTEX_TOOLS} == {
        tool.name: needs[f"tools/call {tool.name}"] for tool in CORTEX_TOOLS
    }


def test_the_table_lists_every_page() -> None:
    from apps.arxiv import urls as arxiv_urls
    from apps.changes import urls as changes_urls
    from apps.connectors import urls as connector_urls
    from apps.core import urls_pages
    from apps.dashboard import urls as dashboard_urls
    from apps.grounding import knowledge_urls
    from apps.grounding import urls as grounding_urls
    from apps.memory import urls as memory_urls
    from apps.ontology import urls as ontology_urls
    from apps.wikidata import urls as wikidata_urls

    names = {
        f"{module.app_name}:{pattern.name}"
        for module in (
            connector_urls,
            arxiv_urls,
            wikidata_urls,
            grounding_urls,
            knowledge_urls,
            memory_urls,
            ontology_urls,
            urls_pages,
            dashboard_urls,
            changes_urls,
        )
        for pattern in module.urlpatterns
    }
    assert {operation.url_name for operation in PAGE_OPERATIONS} == names
    assert set(PAGE_PROBES) == {operation.name for operation in PAGE_OPERATIONS}


def test_the_matrix_size() -> None:
    assert security.matrix_size() == {
        "http": (72, 7),
        "mcp": (31, 7),
        "pages": (38, 16),
        "api sessions": (28, 16),
    }


# --- A read token with valid input starts nothing ---------------------------------------------------


@pytest.mark.django_db
def test_a_read_token_starts_no_upstream_work_and_creates_no_verification(make_token, settings) -> None:
    _, raw = make_token("read")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    valid = {
        "/v1/facts/query": {"query": "Who wrote Dune?", "waitSeconds": 0},
        "/v1/arxiv/search": {"query": "graph neural networks"},
        "/v1/arxiv/lookup": {"ids": ["1706.03762"]},
        "/v1/tools/call": {"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}},
        "/v1/knowledge/verify": {"claim": "Passwords should be hashed with MD5"},
        "/v1/grounding/ground": {"message": "Passwords should be hashed with MD5."},
    }
    answers = {path: client.post(path, body, content_type="application/json") for path, body in valid.items()}
    assert {path: (answer.status_code, answer.json()["error"]) for path, answer in answers.items()} == {
        path: (
            403,
            {
                "code": "permission_denied",
                "message": f"This operation needs a token with the '{scope}' scope.",
                "details": {"required": scope, "granted": ["read"]},
            },
        )
        for path, scope in (
            ("/v1/facts/query", "upstream"),
            ("/v1/arxiv/search", "upstream"),
            ("/v1/arxiv/lookup", "upstream"),
            ("/v1/tools/call", "upstream"),
            ("/v1/knowledge/verify", "verify"),
            ("/v1/grounding/ground", "verify"),
        )
    }
    caller = mcp_services.Caller(transport=CallTransport.MCP_STDIO, raw_token=raw)
    texts = {
        name: mcp_services.mcp_tool_call(name=name, arguments=arguments, caller=caller).text
        for name, arguments in (
            ("facts.query", {"query": "Who wrote Dune?", "waitSeconds": 0}),
            ("arxiv.search", {"query": "graph neural networks"}),
            ("knowledge.verify", {"claim": "Passwords should be hashed with MD5"}),
            ("grounding.ground", {"message": "Passwords should be hashed with MD5."}),
        )
    }
    assert texts == {
        name: f"permission_denied: Tool '{name}' needs a token with the '{scope}' scope."
        for name, scope in (
            ("facts.query", "upstream"),
            ("arxiv.search", "upstream"),
            ("knowledge.verify", "verify"),
            ("grounding.ground", "verify"),
        )
    }
    assert (FactRun.objects.count(), SearchRun.objects.count(), Verification.objects.count()) == (0, 0, 0)


# --- Page submissions are rate-limited per user ---------------------------------------------------------


@pytest.mark.django_db
def test_page_submissions_are_limited_per_user(settings) -> None:
    settings.CORTEX_PAGE_SUBMISSIONS_PER_MINUTE = 1
    settings.CORTEX_PAGE_SUBMISSION_BURST = 2
    asker = Client()
    asker.force_login(make_user("asker", "wikidata.add_factrun", "arxiv.add_searchrun"))
    other = Client()
    other.force_login(make_user("other", "wikidata.add_factrun"))

    # Two submissions (the burst), on either page, then the third is refused with the wait.
    assert asker.post("/facts", {}).status_code == 400  # an empty form, counted all the same
    assert asker.post("/papers/live", {}).status_code == 422
    refused = asker.post("/facts", {"query": "Who wrote Dune?"})
    assert refused.status_code == 429
    retry_after = int(refused["Retry-After"])
    assert 55 <= retry_after <= 60
    message = (
        "Too many searches and questions from this account (each user may start 1 a minute); "
        f"retry after {retry_after} s."
    )
    assert message in refused.content.decode()
    assert FactRun.objects.count() == 0

    live = asker.post("/papers/live", {"query": "graph neural networks"})
    assert live.status_code == 429
    assert int(live["Retry-After"]) in (retry_after - 1, retry_after, retry_after + 1)
    # An HTMX fragment is 200 (htmx swaps only 2xx) and carries the message and Retry-After too.
    fragment = asker.post("/facts", {"query": "Who wrote Dune?"}, headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert fragment["Retry-After"]
    assert "Too many searches and questions from this account" in fragment.content.decode()
    assert SearchRun.objects.count() == 0

    # The limit is the user's own.
    assert other.post("/facts", {}).status_code == 400


@pytest.mark.django_db
@pytest.mark.usefixtures("default_registry")  # the re-runs are planned from it
def test_an_admin_rerun_counts_each_run_against_the_limit(settings, monkeypatch) -> None:
    settings.CORTEX_PAGE_SUBMISSIONS_PER_MINUTE = 1
    settings.CORTEX_PAGE_SUBMISSION_BURST = 2
    monkeypatch.setattr(tasks.fact_run_execute_task, "delay", lambda run_id: None)
    runs = [FactRun.objects.create(question=f"Who wrote Dune {n}?", status="succeeded") for n in range(3)]
    operator = Client()
    operator.force_login(make_user("operator", "wikidata.view_factrun", "wikidata.add_factrun"))
    response = operator.post(
        "/admin/wikidata/factrun/", {"action": "rerun", "_selected_action": [str(run.pk) for run in runs]}
    )
    assert response.status_code == 302
    messages = [str(message) for message in get_messages(response.wsgi_request)]
    assert len(messages) == 2
    assert messages[0].startswith(
        "1 run(s) not queued: Too many searches and questions from this account (each user may start 1 a "
        "minute); retry after "
    )
    assert messages[1] == "Queued 2 new run(s)."
    assert FactRun.objects.filter(rerun_of__isnull=False).count() == 2


@pytest.mark.django_db
def test_without_the_asking_permission_a_fact_reader_may_read_but_not_ask() -> None:
    reader = Client()
    reader.force_login(make_user("reader", "wikidata.view_factrun"))
    page = reader.get("/facts")
    assert page.status_code == 200
    assert 'hx-post="/facts"' not in page.content.decode()  # no question form for a reader
    assert "it needs the permission to ask" in page.content.decode()
    assert reader.post("/facts", {"query": "Who wrote Dune?"}).status_code == 403
    assert FactRun.objects.count() == 0


@pytest.mark.django_db
def test_the_live_search_form_and_found_by_runs_are_shown_only_to_roles() -> None:
    anonymous = Client().get("/papers").content.decode()
    assert 'hx-post="/papers/live"' not in anonymous
    assert 'href="/admin/login/?next=/papers">sign in</a>' in anonymous
    searcher = Client()
    searcher.force_login(make_user("searcher", "arxiv.add_searchrun"))
    assert 'hx-post="/papers/live"' in searcher.get("/papers").content.decode()


# --- /metrics -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_metrics_networks_are_configurable(settings, make_token) -> None:
    settings.CORTEX_METRICS_ALLOW_NETWORKS = ["10.1.0.0/16", "2001:db8::/32"]
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="::ffff:10.1.2.3").get("/metrics").status_code == 200  # IPv4-mapped
    assert Client(REMOTE_ADDR="2001:db8::5").get("/metrics").status_code == 200
    refused = Client(REMOTE_ADDR="127.0.0.1").get("/metrics")  # loopback is no longer listed
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "authentication_required")
    # A forwarded header is not the peer.
    assert Client(REMOTE_ADDR="192.0.2.1", HTTP_X_FORWARDED_FOR="10.1.2.3").get("/metrics").status_code == 401
    _, raw = make_token("verify")
    denied = Client(REMOTE_ADDR="192.0.2.1", headers={"Authorization": f"Bearer {raw}"}).get("/metrics")
    assert denied.status_code == 403
    assert denied.json()["error"]["details"] == {"required": "read", "granted": ["verify"]}


def test_an_entry_that_is_not_a_network_is_a_check_error(settings) -> None:
    settings.CORTEX_METRICS_ALLOW_NETWORKS = ["127.0.0.0/8", "not-a-network"]
    errors = [message for message in run_checks() if message.id == "cortex.E030"]
    assert [error.msg for error in errors] == [
        "CORTEX_METRICS_ALLOW_NETWORKS has entries that are not networks: not-a-network."
    ]
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200  # the valid entry applies
