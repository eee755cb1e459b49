"""A Postgres or Redis outage on MCP (issue 23): HTTP answers what REST answers, 503 with
``Retry-After`` and the error shape, wherever in the request the outage is met (the edge's token
check and rate check, or a handler); stdio answers an ``isError`` ``service_unavailable`` result and
keeps serving.

Three techniques, as the REST tests use them: a Redis that accepts connections and never answers
(tests/core/test_dependency_outage.py), the same for Postgres for a stdio subprocess, and the real
embedded servers of a CortexWeb subprocess frozen with SIGSTOP (tests/core/test_dependency_faults.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings

from apps.connectors.selectors import process_caches_clear
from tests.core.test_dependency_faults import STALL_SECONDS, Cortex
from tests.core.test_dependency_outage import BOUND, REDIS_DOWN, stalled_redis
from tests.mcp_server.conftest import stdio_session

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
DATABASE_DOWN = {
    "code": "service_unavailable",
    "message": "The database is not answering; retry in 5 s.",
    "details": {"dependency": "database", "retryAfter": 5},
}
SEARCH = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "knowledge.search", "arguments": {"query": "password hashing"}},
}
READ_RUN = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "resources/read",
    "params": {"uri": "cortexweb://facts/runs/00000000-0000-0000-0000-000000000000"},
}
SERVICE_MAP = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "connectors.service_map", "arguments": {}},
}
PING = {"jsonrpc": "2.0", "id": 4, "method": "ping"}


def _post(url: str, body: dict[str, Any], token: str | None = None) -> tuple[httpx.Response, float]:
    headers = {**HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    started = time.monotonic()
    response = httpx.post(url, json=body, headers=headers, timeout=60)
    return response, time.monotonic() - started


def _assert_outage(response: httpx.Response, error: dict[str, Any]) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "5"
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {"error": error}


# --- HTTP, in this process: a Redis that never answers ------------------------------------------


def test_a_stalled_redis_gets_503_at_the_token_check(cortex_server, registry, make_token) -> None:
    _, token = make_token("read")
    with stalled_redis():
        for body in (SEARCH, READ_RUN):
            response, seconds = _post(cortex_server.mcp_url, body, token)
            _assert_outage(response, REDIS_DOWN)
            assert response.headers["X-Request-Id"]
            assert seconds < BOUND
        ping, _ = _post(cortex_server.mcp_url, PING)  # what needs no dependency is still served
        assert ping.json() == {"jsonrpc": "2.0", "id": 4, "result": {}}
    response, _ = _post(cortex_server.mcp_url, SEARCH, token)
    assert response.status_code == 200 and response.json()["result"]["isError"] is False


def test_a_stalled_redis_inside_a_tool_call_gets_503(cortex_server, registry) -> None:
    """The public service map needs no token (no edge check): the outage is met in the handler, and
    the edge answers the 503 in place of the SDK's answer."""
    with stalled_redis():
        process_caches_clear()  # the map is then read from Redis, as by a process that starts now
        response, seconds = _post(cortex_server.mcp_url, SERVICE_MAP)
        _assert_outage(response, REDIS_DOWN)
        assert seconds < BOUND
    process_caches_clear()
    response, _ = _post(cortex_server.mcp_url, SERVICE_MAP)
    assert response.status_code == 200 and response.json()["result"]["isError"] is False


# --- stdio: a Redis or a Postgres that never answers --------------------------------------------


@contextlib.contextmanager
def _silent_listener() -> Iterator[int]:
    """A TCP port whose server accepts connections and never answers (a stopped server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        yield listener.getsockname()[1]


def _stdio_during_outage(token: str, **environment: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with stdio_session(token, **environment) as client:
            search = await client.call_tool(*SEARCH["params"].values())
            # Past the catalogue watcher's poll (2 s) and a timeout: the process still serves.
            await asyncio.sleep(3.5)
            await client.send_ping()
            again = await client.call_tool(*SEARCH["params"].values())
            return {"search": search, "again": again}

    return asyncio.run(go())


def _assert_stdio_outage(result: Any, error: dict[str, Any]) -> None:
    assert result.is_error is True
    assert [item.text for item in result.content] == [
        f"service_unavailable: {error['message']}",
        json.dumps({"error": error}, ensure_ascii=False),
    ]


def test_stdio_answers_a_stalled_redis_with_an_error_result_and_keeps_serving(
    registry, pack, make_token
) -> None:
    _, token = make_token("read")
    with _silent_listener() as port:
        found = _stdio_during_outage(
            token,
            REDIS_URL=f"redis://127.0.0.1:{port}/0",
            REDIS_SOCKET_TIMEOUT="0.5",
            REDIS_SOCKET_CONNECT_TIMEOUT="0.5",
        )
    _assert_stdio_outage(found["search"], REDIS_DOWN)
    _assert_stdio_outage(found["again"], REDIS_DOWN)


def test_stdio_answers_a_stalled_postgres_with_an_error_result_and_keeps_serving(
    registry, pack, make_token
) -> None:
    _, token = make_token("read")
    with _silent_listener() as port:
        found = _stdio_during_outage(
            token,
            DATABASE_URL=f"postgres://cortex@127.0.0.1:{port}/cortex",
            DATABASE_CONNECT_TIMEOUT="1",
        )
    _assert_stdio_outage(found["search"], DATABASE_DOWN)
    _assert_stdio_outage(found["again"], DATABASE_DOWN)


def test_stdio_lists_during_an_outage_as_a_protocol_error(registry, make_token) -> None:
    """``resources/read`` has no result to carry an error: JSON-RPC error -32011 with the shape."""
    _, token = make_token("read")

    async def go() -> str:
        async with stdio_session(token, DATABASE_URL=f"postgres://cortex@127.0.0.1:{port}/cortex",
                                 DATABASE_CONNECT_TIMEOUT="1") as client:  # fmt: skip
            with pytest.raises(Exception) as raised:
                await client.read_resource(READ_RUN["params"]["uri"])
            error = raised.value.error
            return (error.code, error.message, error.data)

    with _silent_listener() as port:
        code, message, data = asyncio.run(go())
    assert (code, message, data) == (
        -32011,
        f"service_unavailable: {DATABASE_DOWN['message']}",
        {"error": DATABASE_DOWN},
    )


# --- HTTP against a CortexWeb subprocess whose real Postgres or Redis is frozen (SIGSTOP) ---------


@pytest.fixture(scope="module")
def cortex() -> Iterator[Cortex]:
    server = Cortex(Path(settings.CORTEX_DATA_DIR) / "faults-mcp")
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _mcp_during_stall(cortex: Cortex, which: str) -> dict[str, tuple[httpx.Response, float]]:
    url = f"{cortex.url}/mcp"
    calls = {
        "tools/call": lambda: _post(url, SEARCH, cortex.token),
        "resources/read": lambda: _post(url, READ_RUN, cortex.token),
        "ping": lambda: _post(url, PING),
    }
    with cortex.frozen_server(which), ThreadPoolExecutor(len(calls)) as pool:
        frozen_at = time.monotonic()
        futures = {name: pool.submit(call) for name, call in calls.items()}
        answers = {name: future.result(timeout=60) for name, future in futures.items()}
        time.sleep(max(0.0, STALL_SECONDS - (time.monotonic() - frozen_at)))
    return answers


@pytest.mark.parametrize(("which", "error"), [("redis", REDIS_DOWN), ("postgres", DATABASE_DOWN)])
def test_a_frozen_server_gets_503_on_mcp_and_mcp_works_after_it(cortex: Cortex, which, error) -> None:
    answers = _mcp_during_stall(cortex, which)
    for name in ("tools/call", "resources/read"):
        response, seconds = answers[name]
        _assert_outage(response, error)
        assert seconds < 4.5, (name, seconds)  # the timeouts (2 s) and the request's own work
    ping, _ = answers["ping"]
    assert ping.json() == {"jsonrpc": "2.0", "id": 4, "result": {}}
    cortex.wait_until_ready()
    search, _ = _post(f"{cortex.url}/mcp", SEARCH, cortex.token)
    assert search.status_code == 200 and search.json()["result"]["isError"] is False
