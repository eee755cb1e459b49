"""MCP over stdio: stdout is the protocol's, and nothing else may write to it.

``claim_stdout`` keeps a private duplicate of file descriptor 1 for JSON-RPC and points fd 1 (so
``print``, C extensions and child processes) at stderr. ``manage.py`` calls it before Django is
set up when the command is ``mcp_stdio``, so even what start-up prints (the embedded servers,
warnings) stays off the wire; every log line goes to stderr as always.

``stdio_serve`` runs the server until stdin closes. A stdio session is stateful, so it is told
when the registry changes (``notifications/tools/list_changed``): a watcher compares the
registry version every ``LIST_CHANGED_POLL_SECONDS``. A Redis or Postgres outage never ends the
process: the watcher skips the comparisons it cannot make, and each request answers the outage
(a call's result is ``isError`` ``service_unavailable``).
"""

from __future__ import annotations

import io
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

LIST_CHANGED_POLL_SECONDS = 2.0

_wire: io.TextIOWrapper | None = None


def claim_stdout() -> io.TextIOWrapper:
    """The protocol's stdout (claimed once per process); fd 1 goes to stderr from now on."""
    global _wire  # noqa: PLW0603 - one wire per process, claimed before Django starts
    if _wire is None:
        private = os.dup(1)
        os.dup2(2, 1)
        _wire = io.TextIOWrapper(os.fdopen(private, "wb", buffering=0), encoding="utf-8", write_through=True)
    return _wire


def _registry_version() -> str | None:
    """The registry's version, or None while Redis (or Postgres) is out: compared again next time."""
    from django.db import close_old_connections

    from apps.connectors.selectors import registry_version
    from apps.core.errors import dependency_outage, log_dependency_outage

    try:
        return registry_version()
    except Exception as error:
        if (outage := dependency_outage(error)) is None:
            raise
        log_dependency_outage(error, outage)
        return None
    finally:
        close_old_connections()


async def _announce_catalogue_changes(write_stream: Any) -> None:
    version = await anyio.to_thread.run_sync(_registry_version)
    while True:
        await anyio.sleep(LIST_CHANGED_POLL_SECONDS)
        current = await anyio.to_thread.run_sync(_registry_version)
        # After an outage at start the first version read is announced: the catalogue may have
        # changed meanwhile, and listing again is cheap.
        if current is not None and current != version:
            version = current
            notification = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed")
            await write_stream.send(SessionMessage(notification))


async def stdio_serve(*, token: str) -> None:
    """Serve MCP on stdin/stdout until stdin closes."""
    from apps.mcp_server.server import build_server, stdio_initialization_options

    server = build_server(stdio_token=token)
    wire = anyio.wrap_file(claim_stdout())
    async with stdio_server(stdout=wire) as (read_stream, write_stream), anyio.create_task_group() as tasks:
        tasks.start_soon(_announce_catalogue_changes, write_stream)
        await server.run(read_stream, write_stream, stdio_initialization_options(server))
        tasks.cancel_scope.cancel()
