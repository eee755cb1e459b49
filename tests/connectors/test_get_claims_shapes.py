"""Seed 000's call shape ``callTool("wikidata.get_claims", {qids: ["Q937"]})`` and the single ``qid``,
over REST ``POST /v1/tools/call`` and MCP ``tools/call`` (issue 25, item 1), against the fake Wikidata
MCP server, whose ``get_statements`` takes one ``entity_id``: one upstream call per QID, in order."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.test import Client

from apps.connectors.models import RemoteTool, ToolCall, ToolCallStatus
from apps.mcp_server.services import mcp_tools_list
from apps.wikidata.adapters import MAX_CLAIMS_QIDS
from tests.connectors import mcp_server
from tests.connectors.mcp_server import (  # noqa: F401 - fixtures
    Q42_STATEMENTS,
    mcp_servers_fixture,
    wikidata_mcp_fixture,
)
from tests.mcp_server.conftest import http_session, text_of

pytestmark = pytest.mark.django_db(transaction=True)  # the live server sees committed rows only

Q937_STATEMENTS = "Albert Einstein (Q937): instance of (P31): human (Q5)"
URL = "/v1/tools/call"


@pytest.fixture
def upstream(wikidata_mcp, monkeypatch):
    """The fake server also knows Q937 (its recordings hold Q42 only)."""
    known = {"Q42": Q42_STATEMENTS, "Q937": Q937_STATEMENTS}
    monkeypatch.setitem(
        mcp_server.CANNED, "get_statements", lambda arguments: mcp_server._entity_text(arguments, known)
    )
    return wikidata_mcp


@pytest.fixture
def raw_token(make_token) -> str:
    return make_token("read", "upstream", name="agent")[1]


def _rest(token: str, arguments: Any) -> tuple[int, dict]:
    response = Client(headers={"Authorization": f"Bearer {token}"}).post(
        URL,
        data=json.dumps({"name": "wikidata.get_claims", "arguments": arguments}),
        content_type="application/json",
    )
    return response.status_code, response.json()


def _mcp(cortex_server, token: str, arguments: Any) -> Any:
    async def go() -> Any:
        async with http_session(cortex_server.mcp_url, token) as client:
            return await client.call_tool("wikidata.get_claims", arguments)

    return asyncio.run(go())


def _text(text: str) -> dict:
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"result": text},
        "isError": False,
    }


def _merged(*pairs: tuple[str, str]) -> dict:
    return {
        "content": [{"type": "text", "text": text} for _, text in pairs],
        "isError": False,
        "results": [{"qid": qid, "result": _text(text)} for qid, text in pairs],
    }


def test_the_seeds_qids_over_rest(upstream, raw_token) -> None:
    status, body = _rest(raw_token, {"qids": ["Q937"]})
    assert status == 200, body
    assert (body["tool"], body["upstreamTool"]) == ("wikidata.get_claims", "get_statements")
    assert body["result"] == _merged(("Q937", Q937_STATEMENTS))
    assert upstream.calls == [("get_statements", {"entity_id": "Q937"})]


def test_several_qids_are_one_upstream_call_each_in_the_given_order(upstream, raw_token) -> None:
    status, body = _rest(raw_token, {"qids": ["Q937", "Q42", "Q937"], "lang": "en"})
    assert status == 200, body
    assert body["result"] == _merged(("Q937", Q937_STATEMENTS), ("Q42", Q42_STATEMENTS))
    assert upstream.calls == [
        ("get_statements", {"lang": "en", "entity_id": "Q937"}),  # the repeated Q937 is asked once
        ("get_statements", {"lang": "en", "entity_id": "Q42"}),
    ]
    assert list(ToolCall.objects.values_list("status", "transport")) == [(ToolCallStatus.OK, "rest")]


def test_a_single_qid_is_the_upstreams_entity_id(upstream, raw_token) -> None:
    status, body = _rest(raw_token, {"qid": "Q42"})
    assert status == 200, body
    assert body["result"] == _text(Q42_STATEMENTS)
    assert upstream.calls == [("get_statements", {"entity_id": "Q42"})]


def test_one_unknown_qid_fails_the_whole_call(upstream, raw_token) -> None:
    status, body = _rest(raw_token, {"qids": ["Q42", "Q1"]})
    assert status == 502
    assert body["error"]["message"] == (
        "Tool 'wikidata.get_claims' of connector 'wikidata' reported a failure: Entity Q1 not found"
    )
    assert "result" not in body


@pytest.mark.parametrize(
    ("arguments", "path", "message"),
    [
        ({}, "$.entity_id", "'entity_id' is a required property"),  # the upstream's schema check
        (
            {"qids": ["Q42"], "qid": "Q42"},
            "$.qids",
            "give exactly one of 'entity_id', 'qid' or 'qids', not 'qid' and 'qids'",
        ),
        (
            {"entity_id": "Q42", "qid": "Q42"},
            "$.qid",
            "give exactly one of 'entity_id', 'qid' or 'qids', not 'entity_id' and 'qid'",
        ),
        ({"qids": []}, "$.qids", "must be a non-empty list of item ids such as ['Q937']"),
        ({"qids": "Q42"}, "$.qids", "must be a non-empty list of item ids such as ['Q937']"),
        ({"qids": ["Q42", "Einstein"]}, "$.qids[1]", "'Einstein' is not a Wikidata item id such as 'Q937'"),
        ({"qids": ["Q42", 937]}, "$.qids[1]", "937 is not a Wikidata item id such as 'Q937'"),
        ({"qid": "P31"}, "$.qid", "'P31' is not a Wikidata item id such as 'Q937'"),
        (
            {"qids": [f"Q{n}" for n in range(1, MAX_CLAIMS_QIDS + 2)]},
            "$.qids",
            f"at most {MAX_CLAIMS_QIDS} ids per call, not {MAX_CLAIMS_QIDS + 1}; "
            "split them over several calls",
        ),
    ],
)
def test_a_bad_shape_is_a_422_naming_the_field(upstream, raw_token, arguments, path, message) -> None:
    status, body = _rest(raw_token, arguments)
    assert status == 422
    assert body == {
        "error": {
            "code": "validation_error",
            "message": f"Invalid arguments for tool 'wikidata.get_claims': {path}: {message}.",
            "details": {"tool": "wikidata.get_claims", "errors": [{"path": path, "message": message}]},
        }
    }
    assert upstream.calls == []  # nothing sent upstream
    assert ToolCall.objects.get().status == ToolCallStatus.INVALID_ARGUMENTS


def test_both_shapes_over_mcp(cortex_server, upstream, raw_token) -> None:
    many = _mcp(cortex_server, raw_token, {"qids": ["Q937", "Q42"]})
    assert many.is_error is False
    assert text_of(many) == f"{Q937_STATEMENTS}\n{Q42_STATEMENTS}"
    assert many.structured_content["result"] == _merged(("Q937", Q937_STATEMENTS), ("Q42", Q42_STATEMENTS))

    one = _mcp(cortex_server, raw_token, {"qid": "Q937"})
    assert one.is_error is False
    assert text_of(one) == Q937_STATEMENTS
    assert upstream.calls == [
        ("get_statements", {"entity_id": "Q937"}),
        ("get_statements", {"entity_id": "Q42"}),
        ("get_statements", {"entity_id": "Q937"}),
    ]
    assert list(ToolCall.objects.order_by("pk").values_list("status", "transport")) == [
        (ToolCallStatus.OK, "mcp-http"),
        (ToolCallStatus.OK, "mcp-http"),
    ]


def test_a_bad_shape_over_mcp_names_the_field(cortex_server, upstream, raw_token) -> None:
    result = _mcp(cortex_server, raw_token, {"qids": ["Einstein"]})
    assert result.is_error is True
    message = "'Einstein' is not a Wikidata item id such as 'Q937'"
    assert result.content[0].text == (
        f"validation_error: Invalid arguments for tool 'wikidata.get_claims': $.qids[0]: {message}."
    )
    assert json.loads(result.content[1].text)["error"]["details"]["errors"] == [
        {"path": "$.qids[0]", "message": message}
    ]
    assert upstream.calls == []


def test_v1_tools_and_mcp_tools_list_publish_the_shapes(upstream) -> None:
    item_id = {"type": "string", "pattern": "^[Q][1-9][0-9]*$"}
    expected = {
        "type": "object",
        "properties": {
            "entity_id": {"type": "string"},
            "include_external_ids": {"default": False, "type": "boolean"},
            "lang": {"default": "en", "type": "string"},
            "qid": {**item_id, "description": "One Wikidata item id, in place of entity_id."},
            "qids": {
                "type": "array",
                "items": item_id,
                "minItems": 1,
                "maxItems": 10,
                "description": "Up to 10 Wikidata item ids, asked one by one; the answer lists each one's "
                "result in this order under results[{qid, result}].",
            },
        },
        "description": "Give exactly one of entity_id, qid or qids.",
    }
    rest = {tool["name"]: tool for tool in Client().get("/v1/tools").json()}
    assert rest["wikidata.get_claims"]["inputSchema"] == expected
    assert {tool["name"]: tool for tool in mcp_tools_list()}["wikidata.get_claims"]["inputSchema"] == expected
    stored = RemoteTool.objects.get(name="wikidata.get_claims")
    assert stored.input_schema["required"] == ["entity_id"]  # what the upstream is called with: unchanged
