#!/usr/bin/env python
"""Django's command-line utility for CortexWeb."""

import os
import sys


def main() -> None:
    if sys.argv[1:2] == ["mcp_stdio"]:
        # Before anything can print: stdout belongs to the MCP protocol (apps/mcp_server/stdio.py).
        from apps.mcp_server.stdio import claim_stdout

        claim_stdout()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cortexweb.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
