"""Who may call what over both transports, the per-token limit, and bad input: every refusal is an
HTTP 401, a protocol error or an ``isError`` result naming what to fix; never a 500, never a trace."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from mcp import MCPError

from apps.connectors.models import ToolCall
from tests.connectors.mcp_server import Q42_STATEMENTS
from tests.mcp_server.conftest import http_session, stdio_session, text_of

pytestmark = pytest.mark.django_db(transaction=True)

READ_TOOL = ("knowledge.search", {"query": "password hashing"})
WRITE_TOOL = ("wikidata.get_claims", {"entity_id": "Q42"})
ACCEPT = {"Accept": "application/json, text/event-stream"}

# token kind × tool → what the caller gets: "ok", an isError code, or (HTTP only) "401".
MATRIX = [
    ("none", READ_TOOL, "401", "authentication_required"),
    ("none", WRITE_TOOL, "401", "authentication_required"),
    ("bad", READ_TOOL, "401", "authentication_required"),
    ("bad", WRITE_TOOL, "401", "authentication_required"),
    ("read", READ_TOOL, "ok", "ok"),
    ("read", WRITE_TOOL, "permission_denied", "permission_denied"),
    ("read+upstream", READ_TOOL, "ok", "ok"),
    ("read+upstream", WRITE_TOOL, "ok", "ok"),
]


@pytest.fixture
def tokens(make_token) -> dict[str, str | None]:
    return {
        "none": None,
        "bad": "cw_not-a-real-token",
        "read": make_token("read", name="reader")[1],
        "read+upstream": make_token("read", "upstream", name="writer")[1],
    }


def _http_outcome(url: str, token: str | None, tool: tuple[str, dict[str, Any]]) -> str:
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool[0], "arguments": tool[1]},
    }
    response = httpx.post(url, json=body, headers=headers, timeout=60)
    if response.status_code == 401:
        assert response.headers["WWW-Authenticate"].startswith('Bearer realm="cortexweb"')
        assert response.json()["error"]["data"]["error"]["code"] == "authentication_required"
        return "401"
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    return result["content"][0]["text"].split(":")[0] if result["isError"] else "ok"


def _stdio_outcomes(token: str | None, tools: list[tuple[str, dict[str, Any]]]) -> list[str]:
    async def go() -> list[str]:
        async with stdio_session(token) as client:
            outcomes = []
            for name, arguments in tools:
                result = await client.call_tool(name, arguments)
                outcomes.append(text_of(result).split(":")[0] if result.is_error else "ok")
            return outcomes

    return asyncio.run(go())


def test_the_permission_matrix_over_http(cortex_server, registry, pack, wikidata_mcp, tokens) -> None:
    found = [
        (kind, tool[0], _http_outcome(cortex_server.mcp_url, tokens[kind], tool))
        for kind, tool, _, _ in MATRIX
    ]
    assert found == [(kind, tool[0], http) for kind, tool, http, _ in MATRIX]
    assert wikidata_mcp.calls == [
        ("get_statements", {"entity_id": "Q42"})
    ]  # only the permitted call went out


def test_the_permission_matrix_over_stdio(registry, pack, wikidata_mcp, tokens) -> None:
    for kind in tokens:
        expected = [stdio for matrix_kind, _, _, stdio in MATRIX if matrix_kind == kind]
        assert _stdio_outcomes(tokens[kind], [READ_TOOL, WRITE_TOOL]) == expected, kind
    assert wikidata_mcp.calls == [("get_statements", {"entity_id": "Q42"})]


def test_a_permitted_catalogue_call_goes_through_the_gateway(
    cortex_server, registry, wikidata_mcp, tokens
) -> None:
    async def go() -> Any:
        async with http_session(cortex_server.mcp_url, tokens["read+upstream"]) as client:
            return await client.call_tool(*WRITE_TOOL)

    result = asyncio.run(go())
    assert result.is_error is False
    assert text_of(result) == Q42_STATEMENTS
    assert (result.structured_content["tool"], result.structured_content["upstreamTool"]) == (
        "wikidata.get_claims",
        "get_statements",
    )
    call = ToolCall.objects.get(tool_name="wikidata.get_claims")
    assert (call.transport, call.status, call.token.name) == ("mcp-http", "ok", "writer")


def test_over_the_per_token_limit_a_call_is_refused_with_the_wait(
    cortex_server, registry, pack, tokens, settings
):
    settings.CORTEX_TOKEN_REQUESTS_PER_MINUTE = 1
    settings.CORTEX_TOKEN_BURST = 1
    first = _http_outcome(cortex_server.mcp_url, tokens["read"], READ_TOOL)
    headers = {**ACCEPT, "Authorization": f"Bearer {tokens['read']}"}
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": READ_TOOL[0], "arguments": {}},
    }
    second = httpx.post(cortex_server.mcp_url, json=body, headers=headers, timeout=30).json()["result"]
    assert first == "ok"
    assert second["isError"] is True
    assert second["content"][0]["text"].startswith("rate_limited: Rate limit 'token:")
    assert json.loads(second["content"][1]["text"])["error"]["details"]["retryAfter"] > 50


BAD_ARGUMENTS = [
    ({}, "validation_error: Invalid arguments for tool 'knowledge.search': query: Field required."),
    (
        {"query": "password hashing", "extra": 1},
        "validation_error: Invalid arguments for tool 'knowledge.search': extra: Extra inputs are not "
        "permitted.",
    ),
    (
        {"query": "password hashing", "limit": "many"},
        "validation_error: Invalid arguments for tool 'knowledge.search': limit: Input should be a valid "
        "integer.",
    ),
    (
        {"query": "x" * 100_000},
        "validation_error: Invalid arguments for tool 'knowledge.search': query: String should have at most "
        "1000 characters.",
    ),
    (
        {"query": "nul \u0000 byte"},
        "validation_error: Strings may not contain NUL characters or unpaired surrogates; fix: "
        "arguments.query.",
    ),
]


NO_TOKEN = "Send 'Authorization: Bearer <token>'."
UNKNOWN_TOKEN = "The bearer token is unknown, expired or revoked."


def _unauthorised(request_id: int, description: str, scope: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": -32010,
            "message": description,
            "data": {
                "error": {
                    "code": "authentication_required",
                    "message": description,
                    "details": {"required": scope},
                }
            },
        },
    }


# token sent, method, params → the problem with the token, the challenge's error attribute, what, scope
UNAUTHORISED = [
    (
        (None, "tools/call", {"name": READ_TOOL[0], "arguments": READ_TOOL[1]}),
        (NO_TOKEN, "", "Tool 'knowledge.search'", "read"),
    ),
    (
        ("cw_not-a-real-token", "tools/call", {"name": WRITE_TOOL[0], "arguments": WRITE_TOOL[1]}),
        (UNKNOWN_TOKEN, 'error="invalid_token", ', "Tool 'wikidata.get_claims'", "upstream"),
    ),
    (
        (None, "resources/read", {"uri": "cortexweb://knowledge/owasp-a02"}),
        (NO_TOKEN, "", "Resource 'cortexweb://knowledge/owasp-a02'", "read"),
    ),
]


@pytest.mark.parametrize(("request_sent", "expected"), UNAUTHORISED, ids=["none", "unknown", "resource"])
def test_a_401_says_what_to_send_in_its_body_and_challenge(
    cortex_server, registry, request_sent: tuple[Any, ...], expected: tuple[str, ...]
) -> None:
    token, method, params = request_sent
    problem, challenge_error, what, scope = expected
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    response = httpx.post(cortex_server.mcp_url, json=body, headers=headers, timeout=60)
    description = (
        f"{problem} {what} needs an API token with the '{scope}' scope; an operator creates one with: "
        f"manage.py tokens create --name <agent> --scopes {scope}"
    )
    assert response.status_code == 401
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["WWW-Authenticate"] == (
        f'Bearer realm="cortexweb", {challenge_error}error_description="{description}", '
        f'resource_metadata="{cortex_server.url}/.well-known/oauth-protected-resource/mcp"'
    )
    assert response.json() == _unauthorised(7, description, scope)


def test_the_sdk_client_raises_the_401s_explanation(cortex_server, registry) -> None:
    """The official SDK client without a token: the call raises with the 401's words, not "Server
    returned an error response"."""

    async def go() -> Any:
        async with http_session(cortex_server.mcp_url) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool(*READ_TOOL)
            return refused.value

    error = asyncio.run(go())
    assert (error.error.code, error.error.message) == (
        -32010,
        f"{NO_TOKEN} Tool 'knowledge.search' needs an API token with the 'read' scope; an operator "
        "creates one with: manage.py tokens create --name <agent> --scopes read",
    )
    assert error.error.data == {
        "error": {
            "code": "authentication_required",
            "message": error.error.message,
            "details": {"required": "read"},
        }
    }


@pytest.mark.parametrize(
    ("arguments", "message"), BAD_ARGUMENTS, ids=["missing", "extra", "type", "100kB", "nul"]
)
def test_bad_arguments_are_an_is_error_result_naming_the_field(
    cortex_server, registry, tokens, arguments, message
):
    headers = {**ACCEPT, "Authorization": f"Bearer {tokens['read']}"}
    params = {"name": "knowledge.search", "arguments": arguments}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    response = httpx.post(
        cortex_server.mcp_url,
        content=body,
        headers={**headers, "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == message
    assert "Traceback" not in response.text


def test_protocol_level_bad_input_is_answered_by_the_protocol(cortex_server, registry, tokens) -> None:
    url = cortex_server.mcp_url
    headers = {**ACCEPT, "Content-Type": "application/json"}
    unknown = httpx.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope", "arguments": {}}},
        headers=ACCEPT,
    )
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == -32602
    assert unknown.json()["error"]["message"].startswith("Unknown tool: nope.")
    malformed = httpx.post(url, content=b"{not json", headers=headers)
    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == -32700
    not_rpc = httpx.post(url, json={"hello": "world"}, headers=headers)
    assert 400 <= not_rpc.status_code < 500
    unknown_method = httpx.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "tools/nope"}, headers=ACCEPT)
    assert unknown_method.json()["error"]["code"] == -32601
    wrong_accept = httpx.post(
        url, json={"jsonrpc": "2.0", "id": 4, "method": "ping"}, headers={"Accept": "text/html"}
    )
    assert wrong_accept.status_code == 406
    wrong_type = httpx.post(url, content=b"ping", headers={**ACCEPT, "Content-Type": "text/plain"})
    assert 400 <= wrong_type.status_code < 500
    too_big = httpx.post(url, content=b"x" * (1024 * 1024 + 1), headers=headers)
    assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "payload_too_large"
    # A lone surrogate cannot be decoded: the SDK's JSON parser refuses the message.
    surrogate = httpx.post(
        url,
        content=b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"x": "\\ud800"}}',
        headers=headers,
    )
    assert surrogate.status_code == 400 and surrogate.json()["error"]["code"] == -32700
    wrong_params = httpx.post(
        url,
        json={"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"arguments": {}}},
        headers=ACCEPT,
    )
    assert wrong_params.json()["error"]["code"] == -32602
    for response in (
        unknown,
        malformed,
        not_rpc,
        unknown_method,
        wrong_accept,
        wrong_type,
        too_big,
        wrong_params,
    ):
        assert response.status_code < 500 and "Traceback" not in response.text


def test_dns_rebinding_is_refused_with_django_host_rules(cortex_server, registry) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    evil_host = httpx.post(cortex_server.mcp_url, json=body, headers={**ACCEPT, "Host": "evil.example"})
    assert evil_host.status_code == 421
    evil_origin = httpx.post(
        cortex_server.mcp_url, json=body, headers={**ACCEPT, "Origin": "http://evil.example"}
    )
    assert evil_origin.status_code == 403
    local_origin = httpx.post(
        cortex_server.mcp_url, json=body, headers={**ACCEPT, "Origin": "http://localhost:3000"}
    )
    assert local_origin.status_code == 200 and local_origin.json()["result"] == {}


def test_over_stdio_a_call_without_a_token_is_a_result_saying_what_to_set(registry) -> None:
    """What Claude Desktop or VS Code shows as the tool's output when CORTEX_API_TOKEN is not set."""

    async def go() -> Any:
        async with stdio_session() as client:
            return await client.call_tool(*READ_TOOL)

    result = asyncio.run(go())
    assert result.is_error is True
    assert text_of(result).splitlines()[0] == (
        "authentication_required: This needs an API token: set CORTEX_API_TOKEN in the server's environment."
    )
