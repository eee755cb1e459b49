"""Fixtures of the MCP server tests: CortexWeb's ASGI app (Django + ``/mcp``) served by a real
uvicorn on a free port, official SDK clients over streamable HTTP and over stdio
(``manage.py mcp_stdio`` as a subprocess), and the environment such a subprocess needs to reach
the test database."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from django.conf import settings as django_settings
from django.db import connection
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from apps.connectors.services import manifest_import
from tests.arxiv.test_api import arxiv  # noqa: F401 - the arXiv replay, for the arxiv tools
from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401 - for wikidata_mcp
from tests.connectors.mcp_server import mcp_servers_fixture, wikidata_mcp_fixture  # noqa: F401 - the fake MCP
from tests.grounding.test_verify import (
    PACK,
    pack,  # noqa: F401 - a fixture the MCP tests use
)
from tests.wikidata.conftest import wikidata  # noqa: F401 - the Wikidata replay, for facts.query

BASE_DIR = Path(django_settings.BASE_DIR)
DEFAULT_MANIFEST = json.loads((BASE_DIR / "config" / "connectors.manifest.json").read_text(encoding="utf-8"))
PACK_ENTRY_IDS = sorted(entry["id"] for entries in PACK.values() for entry in entries)


class LiveServer:
    """``cortexweb.asgi.application`` under uvicorn in a thread of this process (so it sees the test
    database and settings overrides), with the lifespan on as ``make run`` has it."""

    def __init__(self) -> None:
        from cortexweb.asgi import application

        # IPPROTO_TCP: uvicorn then sets TCP_NODELAY on accepted connections (no 40 ms delayed-ACK wait).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            application, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, name="cortexweb-live", daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the live CortexWeb server did not start")
            time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


# ``cortex_server`` (a LiveServer for the session) is in tests/conftest.py: other directories use it too.


@pytest.fixture
def registry(transactional_db: None) -> None:
    """The default manifest, committed (the live server's threads see only committed rows)."""
    manifest_import(data=DEFAULT_MANIFEST, actor="tests")


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None = None, **headers: str) -> AsyncIterator[Client]:
    """An official SDK client session over streamable HTTP (the initialize handshake hosts use today)."""
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http_client,
        Client(streamable_http_client(url, http_client=http_client), mode="legacy") as client,
    ):
        yield client


def subprocess_environment(**extra: str) -> dict[str, str]:
    """The test database and Redis as external services for a child process, with the secrets the
    parent's settings exported (so the child signs and verifies as the parent does)."""
    database = connection.settings_dict
    socket_dir = database["HOST"] or database["OPTIONS"]["host"]
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "DATABASE_URL": f"postgres://{database['USER']}@/{database['NAME']}?host={socket_dir}",
        "REDIS_URL": django_settings.REDIS_URL,
        "DJANGO_SECRET_KEY": os.environ["DJANGO_SECRET_KEY"],
        "CORTEX_SIGNING_KEY": os.environ["CORTEX_SIGNING_KEY"],
        "CORTEX_DATA_DIR": str(django_settings.CORTEX_DATA_DIR),
        "PROMETHEUS_MULTIPROC_DIR": django_settings.PROMETHEUS_MULTIPROC_DIR,
        # The local servers below listen on loopback, which the outbound rule refuses unless allowed.
        "CORTEX_OUTBOUND_ALLOW_NETWORKS": ",".join(django_settings.CORTEX_OUTBOUND_ALLOW_NETWORKS),
        # The upstreams as this test configured them (local replays or closed ports), never the internet.
        "WIKIDATA_MCP_URL": os.environ.get("WIKIDATA_MCP_URL", "http://127.0.0.1:9/mcp/"),
        "WIKIDATA_API_URL": django_settings.WIKIDATA_API_URL,
        "WIKIDATA_VECTOR_URL": django_settings.WIKIDATA_VECTOR_URL,
        "WIKIDATA_SPARQL_URL": django_settings.WIKIDATA_SPARQL_URL,
        "WIKIDATA_MAX_RETRIES": str(django_settings.WIKIDATA_MAX_RETRIES),
        "ARXIV_API_URL": django_settings.ARXIV_API_URL,
    }
    environment.update(extra)
    return environment


def stdio_parameters(token: str | None = None, **extra: str) -> StdioServerParameters:
    environment = subprocess_environment(**extra)
    if token is not None:
        environment["CORTEX_API_TOKEN"] = token
    return StdioServerParameters(
        command=sys.executable,
        args=[str(BASE_DIR / "manage.py"), "mcp_stdio"],
        env=environment,
        cwd=str(BASE_DIR),
    )


@contextlib.asynccontextmanager
async def stdio_session(token: str | None = None, **extra: str) -> AsyncIterator[Client]:
    async with Client(stdio_client(stdio_parameters(token, **extra)), mode="legacy") as client:
        yield client


def text_of(result: Any) -> str:
    return "\n".join(item.text for item in result.content if item.type == "text")
