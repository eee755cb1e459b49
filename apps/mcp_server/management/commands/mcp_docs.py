"""``manage.py mcp_docs [--check]``: regenerate the tool list of ``docs/mcp.md`` from the MCP server.

The section between the markers comes from ``apps.mcp_server.docs``; the prose around it is left as
written. ``--check`` writes nothing and fails when the page is out of date (for CI and reviews).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.mcp_server.docs import MarkersMissing, mcp_docs_render

DOCS_PAGE = Path(settings.BASE_DIR) / "docs" / "mcp.md"


class Command(BaseCommand):
    help = "Write the generated tool, resource and prompt list of docs/mcp.md (--check: only compare)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check", action="store_true", help="Fail if docs/mcp.md is out of date; write nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            current = DOCS_PAGE.read_text(encoding="utf-8")
            rendered = mcp_docs_render(current)
        except (OSError, MarkersMissing) as error:
            raise CommandError(f"{DOCS_PAGE}: {error}") from error
        if options["check"]:
            if rendered != current:
                raise CommandError(
                    f"{DOCS_PAGE} is out of date with the MCP server's tools; "
                    "run '.venv/bin/python manage.py mcp_docs' and commit the result."
                )
            self.stdout.write(f"{DOCS_PAGE} is up to date.")
            return
        if rendered == current:
            self.stdout.write(f"{DOCS_PAGE} was already up to date.")
            return
        DOCS_PAGE.write_text(rendered, encoding="utf-8")
        self.stdout.write(f"Wrote {DOCS_PAGE}.")
