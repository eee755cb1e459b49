"""The seed's flow (initialize → tell → ask) with the official MCP SDK client, over stdio
(``manage.py mcp_stdio`` as a subprocess) and over streamable HTTP (the live server's ``/mcp``):
``initialize`` gives a protocol version, ``tell`` confirms storage, ``ask`` returns the told fact
and none of the unrelated memories (they are under the semantic floor); over stdio nothing but
JSON-RPC reaches stdout. A token without the ``write`` scope is refused ``tell``, and nothing is
stored."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp import Client

from apps.memory.models import Memory
from tests.mcp_server.conftest import http_session, stdio_session, text_of
from tests.mcp_server.test_stdio import RawStdio

pytestmark = pytest.mark.django_db(transaction=True)

DISTRACTORS = (
    {"content": "Alice prefers window seats on long-haul flights.", "domain": "travel"},
    {"content": "The office espresso machine is descaled every second Friday.", "domain": "office"},
    {"content": "Our football team lost the derby three goals to one.", "domain": "sport"},
)
FACT = {"content": "The staging database runs Postgres 16 in the Frankfurt region.", "domain": "infra"}
QUESTION = {"question": "Which Postgres version does the staging database run, and where?"}


async def _seed_flow(client: Client) -> dict[str, Any]:
    """Tell the fact between unrelated memories, then ask about it."""
    told = [await client.call_tool("tell", memory) for memory in (*DISTRACTORS[:2], FACT, DISTRACTORS[2])]
    return {
        "protocol": client.protocol_version,
        "server": client.server_info.name if client.server_info else None,
        "told": told,
        "asked": await client.call_tool("ask", QUESTION),
    }


def _assert_seed_flow(found: dict[str, Any], token_name: str) -> None:
    assert isinstance(found["protocol"], str) and found["protocol"].startswith("20")
    assert found["server"] == "cortexweb"
    for result in found["told"]:
        assert result.is_error is False, text_of(result)
        assert result.structured_content["status"] == "stored"
    ids = [result.structured_content["id"] for result in found["told"]]
    fact_id = ids[2]
    stored = Memory.objects.filter(token__name=token_name)
    assert sorted(str(pk) for pk in stored.values_list("pk", flat=True)) == sorted(ids)
    assert stored.get(pk=fact_id).content == FACT["content"]
    asked = found["asked"]
    assert asked.is_error is False, text_of(asked)
    memories = asked.structured_content["memories"]
    assert memories[0]["id"] == fact_id
    assert memories[0]["content"] == FACT["content"]
    assert set(memories[0]["scores"]) == {"domain", "temporal", "semantic", "frequency"}
    # The distractors are about something else: under the semantic floor, not answered from.
    assert [memory["id"] for memory in memories] == [fact_id]
    assert "Frankfurt" in asked.structured_content["answer"]["text"]
    # The memory returned first was reinforced by that ask.
    assert stored.get(pk=fact_id).access_count == 1


def _assert_refused(result: Any) -> None:
    assert result.is_error is True
    assert text_of(result).split(":")[0] == "permission_denied", text_of(result)


def test_the_seed_flow_over_stdio(make_token) -> None:
    _, token = make_token("read", "write", name="stdio-memory-agent")

    async def go() -> dict[str, Any]:
        async with stdio_session(token) as client:
            return await _seed_flow(client)

    _assert_seed_flow(asyncio.run(go()), "stdio-memory-agent")


def test_stdout_carries_only_json_rpc_through_tell_and_ask(make_token) -> None:
    _, token = make_token("read", "write", name="raw-stdio-agent")
    server = RawStdio(token, LOG_LEVEL="DEBUG")
    try:
        assert server.initialize()["result"]["protocolVersion"]
        told = server.request("tools/call", {"name": "tell", "arguments": FACT})
        assert told["result"]["isError"] is False, told
        assert told["result"]["structuredContent"]["status"] == "stored"
        asked = server.request("tools/call", {"name": "ask", "arguments": QUESTION})
        assert asked["result"]["isError"] is False, asked
        first = asked["result"]["structuredContent"]["memories"][0]
        assert first["id"] == told["result"]["structuredContent"]["id"]
    finally:
        assert server.close_stdin_and_wait() == 0
    # Every line on stdout is one JSON-RPC message; the debug logs of tell and ask went to stderr.
    assert len(server.stdout_lines) == 3
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in server.stdout_lines)
    assert '"event": "memory.told"' in server.stderr.decode(errors="replace")


def test_the_seed_flow_over_http(cortex_server, make_token) -> None:
    _, token = make_token("read", "write", name="http-memory-agent")

    async def go() -> dict[str, Any]:
        async with http_session(cortex_server.mcp_url, token) as client:
            return await _seed_flow(client)

    _assert_seed_flow(asyncio.run(go()), "http-memory-agent")


def test_a_token_without_write_is_refused_tell_on_both_transports(cortex_server, make_token) -> None:
    reader, token = make_token("read", name="memory-reader")

    async def go() -> list[Any]:
        async with http_session(cortex_server.mcp_url, token) as client:
            over_http = await client.call_tool("tell", FACT)
            asked = await client.call_tool("ask", QUESTION)
        async with stdio_session(token) as client:
            over_stdio = await client.call_tool("tell", FACT)
        return [over_http, asked, over_stdio]

    over_http, asked, over_stdio = asyncio.run(go())
    _assert_refused(over_http)
    _assert_refused(over_stdio)
    # read suffices to ask; there is nothing to find.
    assert asked.is_error is False, text_of(asked)
    assert asked.structured_content["memories"] == []
    assert not Memory.objects.filter(token=reader).exists()
