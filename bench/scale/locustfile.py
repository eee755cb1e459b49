"""The users ``bench/scale/load.py`` runs under ``locust --headless`` (a subprocess of its own: gevent
patches the process it runs in, and the bench's process runs Django).

Each user is a closed loop with no think time (the load is as high as the stack lets it be), picking
one of three calls at random, equally often, through the load balancer given as ``--host``:

- ``POST /v1/knowledge/search`` over the default knowledge packs;
- ``POST /v1/memory/ask`` over the token's memories;
- an MCP ``tools/call`` of ``knowledge.search`` (streamable HTTP, plain JSON-RPC over POST): each
  user initializes once when it starts, then sends every call with the negotiated protocol version
  (and the session id, if the server gave one: CortexWeb's server is stateless and gives none).

A call counts as a failure unless it answers 200 with what was asked for: results for a search,
memories for an ask, a JSON-RPC result that is not a tool error for ``tools/call``. Configured by
the bench through the environment: ``BENCH_LOAD_TOKEN`` (the raw API token) and
``BENCH_LOAD_CORRELATION_ID`` (sent as ``X-Request-Id`` on every request, so the bench finds and
deletes the events and tool calls the load recorded), ``BENCH_LOAD_QUERIES`` and
``BENCH_LOAD_QUESTIONS`` (what to search for and what to ask, separated by ``|``).
"""

from __future__ import annotations

import itertools
import json
import os
import random

from locust import FastHttpUser, constant, task
from locust.exception import StopUser

KNOWLEDGE_SEARCH = "POST /v1/knowledge/search"
MEMORY_ASK = "POST /v1/memory/ask"
MCP_TOOLS_CALL = "MCP tools/call knowledge.search"
MCP_INITIALIZE = "MCP initialize"

PROTOCOL_VERSION = "2025-11-25"

_request_ids = itertools.count(1)


class StackUser(FastHttpUser):
    wait_time = constant(0)
    # A stuck call fails after this long instead of holding its user past the run.
    network_timeout = connection_timeout = 60.0

    def on_start(self) -> None:
        self.questions = os.environ["BENCH_LOAD_QUESTIONS"].split("|")
        self.queries = os.environ["BENCH_LOAD_QUERIES"].split("|")
        token = os.environ["BENCH_LOAD_TOKEN"]
        self.headers = {
            "Authorization": f"Bearer {token}",
            "X-Request-Id": os.environ["BENCH_LOAD_CORRELATION_ID"],
        }
        self.mcp_headers = {**self.headers, "Accept": "application/json, text/event-stream"}
        initialize = {
            "jsonrpc": "2.0",
            "id": next(_request_ids),
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench-scale-load", "version": "1"},
            },
        }
        with self.client.post(
            "/mcp", json=initialize, headers=self.mcp_headers, name=MCP_INITIALIZE, catch_response=True
        ) as response:
            result = _rpc_result(response)
            if result is None:
                raise StopUser
            self.mcp_headers["MCP-Protocol-Version"] = result["protocolVersion"]
            session = response.headers.get("Mcp-Session-Id")
            if session:
                self.mcp_headers["Mcp-Session-Id"] = session
            response.success()
        self.client.post(
            "/mcp",
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=self.mcp_headers,
            name="MCP notifications/initialized",
        )

    @task
    def knowledge_search(self) -> None:
        body = {"query": random.choice(self.queries), "limit": 10}
        with self.client.post(
            "/v1/knowledge/search",
            json=body,
            headers=self.headers,
            name=KNOWLEDGE_SEARCH,
            catch_response=True,
        ) as response:
            _expect_list(response, "results")

    @task
    def memory_ask(self) -> None:
        body = {"question": random.choice(self.questions)}
        with self.client.post(
            "/v1/memory/ask", json=body, headers=self.headers, name=MEMORY_ASK, catch_response=True
        ) as response:
            _expect_list(response, "memories")

    @task
    def mcp_tools_call(self) -> None:
        call = {
            "jsonrpc": "2.0",
            "id": next(_request_ids),
            "method": "tools/call",
            "params": {
                "name": "knowledge.search",
                "arguments": {"query": random.choice(self.queries), "limit": 10},
            },
        }
        with self.client.post(
            "/mcp", json=call, headers=self.mcp_headers, name=MCP_TOOLS_CALL, catch_response=True
        ) as response:
            result = _rpc_result(response)
            if result is None:
                return
            if result.get("isError"):
                response.failure(f"tool error: {json.dumps(result.get('content'))[:200]}")
            elif not (result.get("structuredContent") or {}).get("results"):
                response.failure("tools/call found no knowledge")
            else:
                response.success()


def _body(response) -> dict | None:
    if response.status_code != 200:
        response.failure(f"HTTP {response.status_code}: {(response.text or '')[:200]}")
        return None
    try:
        return json.loads(response.text)
    except ValueError:
        response.failure(f"not JSON: {(response.text or '')[:200]}")
        return None


def _expect_list(response, key: str) -> None:
    body = _body(response)
    if body is None:
        return
    if body.get(key):
        response.success()
    else:
        response.failure(f"no {key} in the answer")


def _rpc_result(response) -> dict | None:
    """The JSON-RPC result, or None after marking the response failed (HTTP or JSON-RPC error)."""
    body = _body(response)
    if body is None:
        return None
    if "error" in body or not isinstance(body.get("result"), dict):
        response.failure(f"JSON-RPC error: {json.dumps(body.get('error'))[:200]}")
        return None
    return body["result"]
