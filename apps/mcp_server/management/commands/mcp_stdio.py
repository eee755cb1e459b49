"""``manage.py mcp_stdio``: the MCP server over stdin/stdout, for MCP hosts that start a process.

The API token comes from ``CORTEX_API_TOKEN`` (calls need it; discovery does not). stdout carries
JSON-RPC only; logs go to stderr. The process exits when stdin closes.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.core.management.base import BaseCommand

from apps.mcp_server.stdio import claim_stdout, stdio_serve


class Command(BaseCommand):
    help = "Serve CortexWeb's MCP tools over stdio (token from CORTEX_API_TOKEN)."
    # System checks print to the command's streams; the wire must carry JSON-RPC only.
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        claim_stdout()  # already claimed by manage.py; claimed here when called otherwise
        anyio.run(lambda: stdio_serve(token=os.environ.get("CORTEX_API_TOKEN", "")))
