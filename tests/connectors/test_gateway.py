"""``POST /v1/tools/call`` and ``tool_call`` against a real MCP server (no network)."""

from __future__ import annotations

import asyncio
import json
import re
import threading

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client

from apps.connectors import adapters, mcp_client
from apps.connectors.gateway import connector_sync, tool_call
from apps.connectors.models import Connector, ToolCall, ToolCallStatus
from apps.core.errors import UpstreamError
from apps.core.metrics import render_metrics
from apps.core.models import Event
from tests.connectors.mcp_server import (  # noqa: F401
    EMPTY_ID_TEXT,
    Q42_STATEMENTS,
    UNAVAILABLE,
    free_port,
    mcp_servers_fixture,
    wikidata_mcp_fixture,
)

URL = "/v1/tools/call"


@pytest.fixture
def write_client(make_token) -> Client:
    """A token that may call registry tools (the upstream scope, docs/security.md)."""
    _, raw = make_token("read", "upstream")
    return Client(headers={"Authorization": f"Bearer {raw}"})


def _post(client: Client, body: dict) -> tuple[int, dict]:
    response = client.post(URL, data=json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def _text(text: str) -> dict:
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"result": text},
        "isError": False,
    }


def _wikidata() -> Connector:
    return Connector.objects.get(slug="wikidata")


def _sample(name: str, labels: dict[str, str]) -> float:
    """One sample's value in the /metrics text (0 when absent)."""
    text = render_metrics()[0].decode()
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(rf"{re.escape(name)}\{{(.*)\}} (\S+)", line)
        if match and ",".join(sorted(match.group(1).split(","))) == wanted:
            return float(match.group(2))
    return 0.0


# --- success -------------------------------------------------------------------------------


@pytest.mark.parametrize("wikidata_mcp", ["stateless", "stateful"], indirect=True)
def test_call_by_canonical_name(wikidata_mcp, write_client, make_token) -> None:
    status, body = _post(write_client, {"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}})

    assert status == 200
    assert set(body) == {"tool", "upstreamTool", "connector", "result", "durationMs"}
    assert body["tool"] == "wikidata.get_claims"
    assert body["upstreamTool"] == "get_statements"
    assert body["connector"] == "wikidata"
    assert body["result"] == _text(Q42_STATEMENTS)
    assert body["durationMs"] > 0
    assert wikidata_mcp.calls == [("get_statements", {"entity_id": "Q42"})]
    if wikidata_mcp.stateless:
        assert wikidata_mcp.session_ids == [None, None, None]
    else:
        assert wikidata_mcp.session_ids[0] is None
        assert len(set(wikidata_mcp.session_ids[1:])) == 1


def test_call_by_old_alias_answers_under_the_canonical_name(wikidata_mcp, write_client) -> None:
    status, body = _post(write_client, {"name": "get_entity_claims", "arguments": {"entity_id": "Q42"}})

    assert status == 200
    assert body["tool"] == "wikidata.get_claims"
    assert body["upstreamTool"] == "get_statements"
    assert body["result"] == _text(Q42_STATEMENTS)
    call = ToolCall.objects.get()
    assert (call.tool_name, call.requested_name, call.upstream_name, call.connector_slug) == (
        "wikidata.get_claims",
        "get_entity_claims",
        "get_statements",
        "wikidata",
    )
    assert (call.status, call.retryable, call.error) == (ToolCallStatus.OK, False, "")
    assert call.duration_ms == body["durationMs"]
    assert call.token is not None and call.token.has_scope("upstream")
    event = Event.objects.get(name="tool.call.completed")
    assert event.payload == {
        "tool": "wikidata.get_claims",
        "connector": "wikidata",
        "status": "ok",
        "durationMs": body["durationMs"],
        "transport": "rest",
    }
    assert call.transport == "rest"


def test_upstream_rename_is_followed_after_sync(wikidata_mcp) -> None:
    wikidata_mcp.rename_tool("get_statements", "get_entity_claims")
    connector_sync(slug="wikidata")

    result = tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})

    assert result["upstreamTool"] == "get_entity_claims"
    assert result["result"] == _text(Q42_STATEMENTS)
    assert wikidata_mcp.calls == [("get_entity_claims", {"entity_id": "Q42"})]


def test_metrics_count_calls(wikidata_mcp, client) -> None:
    labels = {"connector": "wikidata", "tool": "wikidata.sparql", "status": "ok"}
    before = _sample("cortex_tool_calls_total", labels)
    wikidata_before = _sample("wikidata_tool_calls_total", {"tool": "wikidata.sparql"})
    histogram_before = _sample(
        "cortex_tool_call_duration_seconds_count", {"connector": "wikidata", "tool": "wikidata.sparql"}
    )

    result = tool_call(name="sparql", arguments={"sparql": "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"})

    assert result["result"] == _text(";human\n0;Q42\n1;Q820")
    assert _sample("cortex_tool_calls_total", labels) == before + 1
    assert _sample("wikidata_tool_calls_total", {"tool": "wikidata.sparql"}) == wikidata_before + 1
    assert (
        _sample(
            "cortex_tool_call_duration_seconds_count", {"connector": "wikidata", "tool": "wikidata.sparql"}
        )
        == histogram_before + 1
    )
    response = client.get("/metrics")
    assert response.status_code == 200
    assert 'cortex_tool_calls_total{connector="wikidata",status="ok",tool="wikidata.sparql"}' in (
        response.content.decode()
    )


# --- failures that arrive as text ---------------------------------------------------------


def test_retryable_text_error_is_a_502(wikidata_mcp, write_client) -> None:
    wikidata_mcp.unavailable = True

    status, body = _post(write_client, {"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}})

    assert status == 502
    assert body == {
        "error": {
            "code": "upstream_error",
            "message": "Tool 'wikidata.get_claims' of connector 'wikidata' reported a failure: "
            f"{UNAVAILABLE}",
            "details": {
                "connector": "wikidata",
                "tool": "wikidata.get_claims",
                "upstreamMessage": UNAVAILABLE,
                "retryable": True,
            },
        }
    }
    call = ToolCall.objects.get()
    assert (call.status, call.retryable, call.error) == (
        ToolCallStatus.UPSTREAM_ERROR,
        True,
        body["error"]["message"],
    )
    event = Event.objects.get(name="tool.call.failed")
    assert event.payload["status"] == "upstream_error"
    assert event.payload["tool"] == "wikidata.get_claims"
    assert event.payload["durationMs"] == call.duration_ms
    assert not Event.objects.filter(name="tool.call.completed").exists()


def test_terminal_text_error_is_a_502_not_worth_retrying(wikidata_mcp, write_client) -> None:
    status, body = _post(write_client, {"name": "wikidata.get_claims", "arguments": {"entity_id": ""}})

    assert status == 502
    assert body["error"]["details"] == {
        "connector": "wikidata",
        "tool": "wikidata.get_claims",
        "upstreamMessage": EMPTY_ID_TEXT,
        "retryable": False,
    }
    assert EMPTY_ID_TEXT == "Entity ID cannot be empty."
    assert ToolCall.objects.get().retryable is False


def test_is_error_result_is_a_terminal_502(wikidata_mcp, write_client) -> None:
    Connector.objects.filter(slug="wikidata").update(text_error_patterns=[])
    wikidata_mcp.remove_tool("get_statements")  # renamed upstream, not synced yet

    status, body = _post(write_client, {"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}})

    assert status == 502
    assert body["error"] == {
        "code": "upstream_error",
        "message": "Tool 'wikidata.get_claims' of connector 'wikidata' failed: Unknown tool: get_statements",
        "details": {
            "connector": "wikidata",
            "tool": "wikidata.get_claims",
            "upstreamMessage": "Unknown tool: get_statements",
            "retryable": False,
        },
    }


# --- bad requests ----------------------------------------------------------------------------


def test_schema_violation_is_a_422_naming_each_argument(wikidata_mcp, write_client) -> None:
    connector_sync(slug="wikidata")  # the upstream's input schemas
    wikidata_mcp.requests.clear()

    status, body = _post(
        write_client, {"name": "wikidata.get_claims", "arguments": {"include_external_ids": "yes", "lang": 5}}
    )

    assert status == 422
    assert body["error"] == {
        "code": "validation_error",
        "message": "Invalid arguments for tool 'wikidata.get_claims': "
        "$.entity_id: 'entity_id' is a required property; "
        "$.include_external_ids: 'yes' is not of type 'boolean'; "
        "$.lang: 5 is not of type 'string'.",
        "details": {
            "tool": "wikidata.get_claims",
            "errors": [
                {"path": "$.entity_id", "message": "'entity_id' is a required property"},
                {"path": "$.include_external_ids", "message": "'yes' is not of type 'boolean'"},
                {"path": "$.lang", "message": "5 is not of type 'string'"},
            ],
        },
    }
    assert wikidata_mcp.requests == []  # never sent upstream
    call = ToolCall.objects.get()
    assert (call.status, call.retryable) == (ToolCallStatus.INVALID_ARGUMENTS, False)


def test_arguments_must_be_an_object(wikidata_mcp, write_client) -> None:
    status, body = _post(write_client, {"name": "wikidata.get_claims", "arguments": ["Q42"]})
    assert status == 422
    assert body["error"]["code"] == "validation_error"
    assert body["error"]["details"]["fields"][0]["path"] == "body.payload.arguments"


def test_unknown_tool_is_a_404(wikidata_mcp, write_client) -> None:
    status, body = _post(write_client, {"name": "wikidata.nope"})
    assert status == 404
    assert body["error"] == {
        "code": "not_found",
        "message": "No tool is called 'wikidata.nope'; GET /v1/tools lists the tools and their names.",
        "details": {"name": "wikidata.nope"},
    }


def test_disabled_connector_is_a_409(wikidata_mcp, write_client) -> None:
    connector = _wikidata()
    connector.enabled = False
    connector.save()

    status, body = _post(write_client, {"name": "get_statements", "arguments": {"entity_id": "Q42"}})

    assert status == 409
    assert body["error"] == {
        "code": "conflict",
        "message": "Tool 'wikidata.get_claims' belongs to connector 'wikidata', which is disabled.",
        "details": {"tool": "wikidata.get_claims", "connector": "wikidata"},
    }
    assert wikidata_mcp.requests == []


def test_read_only_token_is_a_403_and_no_token_a_401(wikidata_mcp, read_client, client) -> None:
    body = {"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}}
    status, answer = _post(read_client, body)
    assert status == 403
    assert answer["error"]["code"] == "permission_denied"
    status, answer = _post(client, body)
    assert status == 401
    assert answer["error"]["code"] == "authentication_required"
    assert wikidata_mcp.requests == []


def test_unknown_body_field_is_a_422(wikidata_mcp, write_client) -> None:
    status, body = _post(write_client, {"name": "wikidata.get_claims", "args": {}})
    assert status == 422
    assert body["error"]["details"]["fields"][0]["path"] == "body.payload.args"


# --- transport failures ------------------------------------------------------------------------


def test_connection_refused_is_a_retryable_502(wikidata_mcp, write_client, monkeypatch) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp/"
    monkeypatch.setenv("WIKIDATA_MCP_URL", url)

    status, body = _post(write_client, {"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}})

    assert status == 502
    assert body["error"] == {
        "code": "upstream_error",
        "message": "MCP server 'wikidata' could not be reached: All connection attempts failed.",
        # Where the upstream lives is for admin-scope tokens only (its log line keeps it).
        "details": {"connector": "wikidata", "retryable": True},
    }
    call = ToolCall.objects.get()
    assert (call.status, call.retryable) == (ToolCallStatus.UPSTREAM_ERROR, True)
    assert Event.objects.filter(name="tool.call.failed").count() == 1


@pytest.mark.parametrize(("http_status", "retryable"), [(503, True), (429, True), (500, True), (401, False)])
def test_http_errors_are_classified(wikidata_mcp, http_status, retryable) -> None:
    wikidata_mcp.fail_status = http_status
    with pytest.raises(UpstreamError) as raised:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
    assert raised.value.retryable is retryable
    assert raised.value.message == f"MCP server 'wikidata' answered HTTP {http_status}."
    assert raised.value.details == {
        "connector": "wikidata",
        "endpoint": wikidata_mcp.url,
        "httpStatus": http_status,
        "retryable": retryable,
    }


def test_timeout_is_retryable(wikidata_mcp) -> None:
    Connector.objects.filter(slug="wikidata").update(timeout_seconds=0.5)
    wikidata_mcp.delay = 3.0
    with pytest.raises(UpstreamError) as raised:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
    assert raised.value.retryable is True
    assert raised.value.message == "MCP server 'wikidata' did not answer within 0.5 s."


def test_rate_limit_refuses_calls_past_the_timeout(wikidata_mcp, write_client) -> None:
    Connector.objects.filter(slug="wikidata").update(
        rate_limit_interval=60, rate_limit_burst=1, timeout_seconds=1
    )
    assert _post(write_client, {"name": "sparql", "arguments": {"sparql": "ASK {}"}})[0] == 200

    status, body = _post(write_client, {"name": "sparql", "arguments": {"sparql": "ASK {}"}})

    assert status == 429
    assert body["error"]["code"] == "rate_limited"
    assert body["error"]["details"]["limiter"] == "connector:wikidata"
    assert [call.status for call in ToolCall.objects.order_by("pk")] == ["ok", "rate_limited"]
    assert len(wikidata_mcp.calls) == 1


def test_bearer_and_api_key_auth_come_from_the_environment(wikidata_mcp, monkeypatch) -> None:
    monkeypatch.setenv("CORTEX_CONNECTOR_WIKIDATA_TOKEN", "s3cret")
    Connector.objects.filter(slug="wikidata").update(
        auth_type="bearer", auth_secret_env="CORTEX_CONNECTOR_WIKIDATA_TOKEN"
    )
    tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
    assert {request["headers"].get("authorization") for request in wikidata_mcp.requests} == {"Bearer s3cret"}

    wikidata_mcp.requests.clear()
    Connector.objects.filter(slug="wikidata").update(auth_type="api_key", auth_header="X-Api-Key")
    tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
    assert {request["headers"].get("x-api-key") for request in wikidata_mcp.requests} == {"s3cret"}

    monkeypatch.delenv("CORTEX_CONNECTOR_WIKIDATA_TOKEN")
    with pytest.raises(UpstreamError) as raised:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
    assert raised.value.message == (
        "Connector 'wikidata' needs a secret in the environment variable 'CORTEX_CONNECTOR_WIKIDATA_TOKEN', "
        "which is not set."
    )


# --- native adapters ----------------------------------------------------------------------------


@pytest.fixture
def arxiv_adapter_slot():
    """Frees ``arxiv.search`` for the test and puts back whatever adapter the app registered."""
    registered = adapters.adapter_for("arxiv.search")
    model = adapters.adapter_input_model("arxiv.search")
    adapters.unregister_adapter("arxiv.search")
    yield
    adapters.unregister_adapter("arxiv.search")
    if registered is not None:
        adapters.register_adapter("arxiv.search", input_model=model)(registered)


def test_native_tool_without_adapter_is_a_501(wikidata_mcp, write_client, arxiv_adapter_slot) -> None:
    status, body = _post(write_client, {"name": "arxiv.search", "arguments": {"query": "graphs"}})
    assert status == 501
    assert body["error"] == {
        "code": "not_implemented",
        "message": "Tool 'arxiv.search' is served by a native adapter, and none is registered for it in this "
        "deployment.",
        "details": {"tool": "arxiv.search"},
    }


def test_native_tool_dispatches_to_its_adapter(wikidata_mcp, write_client, arxiv_adapter_slot) -> None:
    seen = []

    @adapters.register_adapter("arxiv.search")
    def search(tool, arguments):
        seen.append((tool.name, arguments))
        return {"papers": [{"id": "1605.08386v1"}]}

    status, body = _post(write_client, {"name": "arxiv.search", "arguments": {"query": "graphs"}})

    assert status == 200
    assert body["result"] == {"papers": [{"id": "1605.08386v1"}]}
    assert (body["tool"], body["upstreamTool"], body["connector"]) == (
        "arxiv.search",
        "arxiv.search",
        "arxiv",
    )
    assert seen == [("arxiv.search", {"query": "graphs"})]
    with pytest.raises(ValueError, match="already has an adapter"):
        adapters.register_adapter("arxiv.search")(lambda tool, arguments: {})


# --- how the sync code runs the async client ---------------------------------------------------


def test_sync_view_under_asgi(wikidata_mcp, make_token) -> None:
    _, raw = make_token("upstream")
    response = async_to_sync(AsyncClient().post)(
        URL,
        data={"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}},
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert response.status_code == 200, response.json()
    assert response.json()["result"] == _text(Q42_STATEMENTS)


def test_client_runs_in_a_worker_thread_and_inside_a_running_loop(wikidata_mcp) -> None:
    connector = _wikidata()
    results: list[dict] = []
    worker = threading.Thread(
        target=lambda: results.append(mcp_client.call_tool(connector, "get_statements", {"entity_id": "Q42"}))
    )
    worker.start()
    worker.join(timeout=30)

    async def from_a_coroutine() -> dict:
        return mcp_client.call_tool(connector, "get_statements", {"entity_id": "Q42"})

    results.append(asyncio.run(from_a_coroutine()))
    assert results == [_text(Q42_STATEMENTS), _text(Q42_STATEMENTS)]
