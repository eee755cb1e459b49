"""What the MCP server costs over the REST API it mirrors (goal: MCP adds at most 1.5x the REST time,
p50 and p95).

CortexWeb's ASGI app (``cortexweb.asgi:application``: Django and ``/mcp``) runs under a real uvicorn
on a free 127.0.0.1 port in a thread of this process, lifespan on as ``make run`` has it. Timed
against it, the same server answering both sides:

- ``tools/list`` over MCP (official SDK client, streamable HTTP, one session reused, no client-side
  cache) against ``GET /v1/tools``;
- a ``knowledge.search`` ``tools/call`` over MCP against ``POST /v1/knowledge/search`` with the
  same body.

The REST side uses ``httpx2``, the HTTP client under the SDK's transport, so the figures compare
the protocols rather than two client libraries. MCP and REST requests alternate, so drift on a
busy machine (another process, the collector) hits both alike. Each MCP tools/call is recorded
(``ToolCall`` row, event, metrics) as any call is; the REST search records nothing: that is part of
what MCP costs here.

Needs a migrated database (start ``make run`` once). The connector manifest and the knowledge packs
are loaded for good when absent, as ``make run`` loads them on first start (searches in a
transaction that inserted them would run over dead row versions). The bench's API token, its tool
calls and their events are deleted at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2
import uvicorn
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from apps.connectors.models import ToolCall
from apps.core.default_data import default_data_load
from apps.core.models import Event
from apps.core.services import api_token_create
from bench.__main__ import percentile

WARMUP, N = 10, 100
GOAL_RATIO = 1.5
SEARCH = {"query": "password hashing", "limit": 10}


class _LiveServer:
    """uvicorn serving CortexWeb in a daemon thread (as ``tests/mcp_server/conftest.py`` does)."""

    def __init__(self) -> None:
        from cortexweb.asgi import application

        # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on accepted sockets whose proto
        # says TCP, and with Nagle on every request on a kept-alive connection waits ~40 ms for a
        # delayed ACK (measured here: GET /healthz 48 ms instead of 7). ``make run``'s uvicorn binds
        # by host and port, which gets the proto right (Kludex/uvicorn#3149: ``--workers N`` does not).
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        config = uvicorn.Config(application, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._socket]}, name="bench-mcp", daemon=True
        )

    def start(self) -> _LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the bench's CortexWeb server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        # Stopped before this process exits: the embedded servers are detached at exit, and a server
        # thread still answering then would fail on a closed database.
        self.server.should_exit = True
        self.thread.join(timeout=15)


def _unmigrated() -> bool:
    connection = connections[DEFAULT_DB_ALIAS]
    executor = MigrationExecutor(connection)
    return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))


async def _timed(pairs: list[tuple[str, Callable[[], Awaitable[Any]]]]) -> dict[str, list[float]]:
    """Warm every call up, then time ``N`` rounds in which the calls take turns."""
    for _ in range(WARMUP):
        for _name, call in pairs:
            await call()
    samples: dict[str, list[float]] = {name: [] for name, _ in pairs}
    for _ in range(N):
        for name, call in pairs:
            started = time.perf_counter()
            await call()
            samples[name].append(time.perf_counter() - started)
    return samples


@contextlib.asynccontextmanager
async def mcp_and_rest_clients(
    url: str, raw_token: str, correlation_id: str
) -> AsyncIterator[tuple[Client, httpx2.AsyncClient]]:
    """An MCP session over streamable HTTP and a REST client, both as the token, to time side by side."""
    headers = {"Authorization": f"Bearer {raw_token}", "X-Request-Id": correlation_id}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as mcp_http,
        Client(streamable_http_client(f"{url}/mcp", http_client=mcp_http), mode="legacy") as mcp,
        httpx2.AsyncClient(base_url=url, headers=headers, timeout=60) as rest,
    ):
        yield mcp, rest


async def _measure(url: str, raw_token: str, correlation_id: str) -> dict[str, list[float]]:
    async with mcp_and_rest_clients(url, raw_token, correlation_id) as (mcp, rest):

        async def mcp_tools_list() -> None:
            result = await mcp.list_tools(cache_mode="bypass")
            assert result.tools, "tools/list listed nothing"

        async def rest_tools() -> None:
            response = await rest.get("/v1/tools")
            assert response.status_code == 200, response.text

        async def mcp_search() -> None:
            result = await mcp.call_tool("knowledge.search", SEARCH)
            assert not result.is_error, result.content
            assert result.structured_content and result.structured_content["results"], "no knowledge found"

        async def rest_search() -> None:
            response = await rest.post("/v1/knowledge/search", json=SEARCH)
            assert response.status_code == 200, response.text
            assert response.json()["results"], "no knowledge found"

        return await _timed(
            [
                ("mcp.tools_list", mcp_tools_list),
                ("mcp.rest_tools(GET /v1/tools)", rest_tools),
                ("mcp.tool_call_knowledge_search", mcp_search),
                ("mcp.rest_knowledge_search(POST /v1/knowledge/search)", rest_search),
            ]
        )


def _print_ratio(name: str, mcp: list[float], rest: list[float]) -> None:
    ratios = {label: percentile(mcp, q) / percentile(rest, q) for label, q in (("p50", 0.50), ("p95", 0.95))}
    verdict = "met" if max(ratios.values()) <= GOAL_RATIO else "NOT met"
    print(
        f"{name}.ratio(mcp/rest): p50 {ratios['p50']:.2f}x p95 {ratios['p95']:.2f}x "
        f"(goal ≤ {GOAL_RATIO}x: {verdict})",
        flush=True,
    )


def run(report) -> None:
    # One line per client request would bury the figures; the server's own log lines stay, since
    # writing them is part of what a call costs.
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    if _unmigrated():
        print("mcp: skipped: the database is not migrated (start `make run` once, or `manage.py migrate`)")
        return
    default_data_load()  # make run's first-start data, if absent
    token, raw_token = api_token_create(name=f"bench-mcp-{uuid.uuid4().hex[:8]}", scopes=["read", "write"])
    # Every request of the bench carries this id, so its events can be found and deleted afterwards.
    correlation_id = f"bench-mcp-{uuid.uuid4().hex}"
    # 4 x 110 authenticated requests in seconds would spend any real per-token budget.
    with override_settings(CORTEX_TOKEN_REQUESTS_PER_MINUTE=0):
        server = _LiveServer().start()
        try:
            samples = asyncio.run(_measure(server.url, raw_token, correlation_id))
        finally:
            server.stop()
            ToolCall.objects.filter(token=token).delete()
            Event.objects.filter(correlation_id=correlation_id).delete()
            token.delete()
    for name, timings in samples.items():
        report(name, timings)
    _print_ratio("mcp.tools_list", samples["mcp.tools_list"], samples["mcp.rest_tools(GET /v1/tools)"])
    _print_ratio(
        "mcp.knowledge_search",
        samples["mcp.tool_call_knowledge_search"],
        samples["mcp.rest_knowledge_search(POST /v1/knowledge/search)"],
    )
