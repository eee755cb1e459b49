"""Stateless ``/mcp`` behind two uvicorn worker processes: 20 concurrent SDK client sessions, each
sent to whichever worker the kernel hands its connections to, all succeed."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tests.mcp_server.conftest import BASE_DIR, http_session, subprocess_environment

pytestmark = pytest.mark.django_db(transaction=True)

SESSIONS = 20


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_up(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "uvicorn exited during start-up"
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("uvicorn with two workers did not start")


def test_twenty_sessions_over_two_workers_all_succeed(registry, pack, make_token, tmp_path) -> None:
    _, token = make_token("read")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "uvicorn", "cortexweb.asgi:application", "--port", str(port)]
    command += ["--workers", "2", "--lifespan", "on", "--log-level", "info", "--no-access-log"]
    log = tmp_path / "uvicorn.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            command, cwd=BASE_DIR, env=subprocess_environment(), stderr=sink, stdout=sink
        )
    try:
        _wait_until_up(url, server)

        async def one_session(index: int) -> tuple[int, list[str]]:
            async with http_session(f"{url}/mcp", token) as client:
                tools = await client.list_tools()
                search = await client.call_tool("knowledge.search", {"query": f"password hashing {index}"})
                plan = await client.call_tool(
                    "agents.plan", {"intent": "literature_search", "query": f"q{index}"}
                )
                assert not search.is_error and not plan.is_error
                return len(tools.tools), [hit["id"] for hit in search.structured_content["results"]]

        async def all_sessions() -> list[tuple[int, list[str]]]:
            return await asyncio.gather(*(one_session(index) for index in range(SESSIONS)))

        results = asyncio.run(all_sessions())
        assert len(results) == SESSIONS
        assert all(count >= 9 and ids for count, ids in results)
    finally:
        server.terminate()
        server.wait(timeout=30)
    output = log.read_text(errors="replace")
    # Two worker processes served the port (uvicorn logs each one's start with its pid).
    assert len(set(re.findall(r"Started server process \[(\d+)\]", output))) == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
