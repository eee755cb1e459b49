"""The MCP server over stdio (``manage.py mcp_stdio`` as a subprocess): the official SDK client's
flow, nothing but JSON-RPC on stdout while logs and warnings are produced, a clean exit when stdin
closes, and ``notifications/tools/list_changed`` when operators change the catalogue."""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import threading
import time
from typing import Any

import httpx
import pytest

from apps.connectors.models import Connector, ToolCall
from apps.connectors.services import registry_changed
from tests.mcp_server.conftest import PACK_ENTRY_IDS, http_session, stdio_parameters, stdio_session, text_of
from tests.mcp_server.test_http import OWN_TOOLS

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_sdk_client_flow_over_stdio(registry, pack, make_token) -> None:
    _, token = make_token("read", name="stdio-agent")

    async def go() -> dict[str, Any]:
        async with stdio_session(token) as client:
            return {
                "protocol": client.protocol_version,
                "tools": [tool.name for tool in (await client.list_tools()).tools],
                "search": await client.call_tool(
                    "knowledge.search", {"query": "password hashing", "limit": 2}
                ),
                "plan": await client.call_tool(
                    "agents.plan", {"intent": "literature_search", "query": "LLMs"}
                ),
                "map": await client.read_resource("cortexweb://service-map"),
            }

    found = asyncio.run(go())
    assert found["protocol"]
    assert found["tools"][: len(OWN_TOOLS)] == OWN_TOOLS
    search = found["search"]
    assert search.is_error is False, text_of(search)
    assert len(search.structured_content["results"]) == 2
    assert {hit["id"] for hit in search.structured_content["results"]} <= set(PACK_ENTRY_IDS)
    assert found["plan"].structured_content["steps"][0]["tool"] == "arxiv.search"
    assert json.loads(found["map"].contents[0].text)["brand"] == "brAInwav"
    calls = ToolCall.objects.filter(transport="mcp-stdio").order_by("created_at")
    assert [(call.tool_name, call.status, call.token.name) for call in calls] == [
        ("knowledge.search", "ok", "stdio-agent"),
        ("agents.plan", "ok", "stdio-agent"),
    ]


class RawStdio:
    """``manage.py mcp_stdio`` driven line by line, keeping everything it writes on each stream."""

    def __init__(self, token: str | None = None, **environment: str) -> None:
        parameters = stdio_parameters(token, **environment)
        self.process = subprocess.Popen(
            [parameters.command, *parameters.args],
            cwd=parameters.cwd,
            env=parameters.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.stdout_lines: list[bytes] = []
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()
        self.next_id = 0

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout_lines.append(line)
            try:
                self.messages.put(json.loads(line))
            except ValueError:
                self.messages.put({"unparseable": line.decode(errors="replace")})

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        self.next_id += 1
        self.send(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})}
        )
        return self.wait_for(lambda message: message.get("id") == self.next_id, timeout)

    def wait_for(self, matches: Any, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if matches(message):
                return message
        raise AssertionError(f"no matching message within {timeout} s; stderr: {self.stderr[-2000:]!r}")

    def initialize(self) -> dict[str, Any]:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close_stdin_and_wait(self, timeout: float = 30) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=timeout)
        self._stderr_thread.join(timeout=5)
        return code


def test_stdout_carries_only_json_rpc_while_logs_and_warnings_are_written(registry, pack, make_token) -> None:
    _, token = make_token("read")
    # Debug logs from every library, every warning shown, plain prints from the start-up path.
    server = RawStdio(token, LOG_LEVEL="DEBUG", PYTHONWARNINGS="always", DJANGO_DEBUG="true")
    initialized = server.initialize()
    assert initialized["result"]["protocolVersion"] == "2025-06-18"
    assert initialized["result"]["serverInfo"]["name"] == "cortexweb"
    tools = server.request("tools/list")
    assert len(tools["result"]["tools"]) >= 9
    # A failing call (warning log line) and a successful one (info log lines).
    refused = server.request(
        "tools/call", {"name": "knowledge.search", "arguments": {"query": "nul\u0000byte"}}
    )
    assert refused["result"]["isError"] is True
    answered = server.request(
        "tools/call", {"name": "knowledge.search", "arguments": {"query": "TLS versions"}}
    )
    assert answered["result"]["isError"] is False
    unknown = server.request("tools/call", {"name": "no.such.tool", "arguments": {}})
    assert unknown["error"]["code"] == -32602
    started = time.monotonic()
    assert server.close_stdin_and_wait() == 0
    assert time.monotonic() - started < 30
    # Every line on stdout is one JSON-RPC message; the logs went to stderr.
    assert server.stdout_lines and all(json.loads(line)["jsonrpc"] == "2.0" for line in server.stdout_lines)
    stderr = server.stderr.decode(errors="replace")
    assert '"event": "tool.call"' in stderr and '"level": "debug"' in stderr
    assert '"level": "warning"' in stderr


def test_a_stdio_session_is_told_when_the_catalogue_changes(registry, make_token) -> None:
    server = RawStdio(make_token("read")[1])
    try:
        assert "tools" in server.initialize()["result"]["capabilities"]
        listed = server.request("tools/list")
        names = [tool["name"] for tool in listed["result"]["tools"]]
        assert "wikidata.get_claims" in names
        Connector.objects.filter(slug="wikidata").update(enabled=False)
        registry_changed()
        notification = server.wait_for(
            lambda message: message.get("method") == "notifications/tools/list_changed", timeout=20
        )
        assert "id" not in notification
        after = server.request("tools/list")
        assert "wikidata.get_claims" not in [tool["name"] for tool in after["result"]["tools"]]
    finally:
        server.close_stdin_and_wait()


def test_stdio_advertises_list_changed_and_http_does_not(registry, make_token, cortex_server) -> None:
    server = RawStdio()
    try:
        assert server.initialize()["result"]["capabilities"]["tools"] == {"listChanged": True}
    finally:
        server.close_stdin_and_wait()
    answer = httpx.post(
        cortex_server.mcp_url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"},
            },
        },
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert answer.json()["result"]["capabilities"]["tools"] == {"listChanged": False}


def test_stdio_lists_the_tools_http_lists_with_no_feature_flag_set(registry, cortex_server) -> None:
    """Claude Desktop and VS Code start ``manage.py mcp_stdio`` with only what their configuration
    names: with no ``FEATURE_*`` in its environment, stdio has the arXiv tools ``make run`` serves."""
    environment = stdio_parameters().env or {}
    assert not [name for name in environment if name.startswith("FEATURE_")]

    async def go() -> tuple[list[str], list[str]]:
        async with stdio_session() as stdio, http_session(cortex_server.mcp_url) as http:
            return (
                [tool.name for tool in (await stdio.list_tools()).tools],
                [tool.name for tool in (await http.list_tools()).tools],
            )

    over_stdio, over_http = asyncio.run(go())
    assert {"arxiv.search", "arxiv.lookup"} <= set(over_stdio)
    assert over_stdio == over_http
