"""``manage.py security_docs [--check]``: regenerate the permission tables of ``docs/security.md``.

The section between the markers comes from ``apps.core.security`` (the table the permission-matrix
test checks against the running code); the prose around it is left as written. ``--check`` writes
nothing and fails when the page is out of date.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.core.security import MarkersMissing, security_docs_render

DOCS_PAGE = Path(settings.BASE_DIR) / "docs" / "security.md"


class Command(BaseCommand):
    help = "Write the generated permission tables of docs/security.md (--check: only compare)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check", action="store_true", help="Fail if docs/security.md is out of date; write nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            current = DOCS_PAGE.read_text(encoding="utf-8")
            rendered = security_docs_render(current)
        except (OSError, MarkersMissing) as error:
            raise CommandError(f"{DOCS_PAGE}: {error}") from error
        if options["check"]:
            if rendered != current:
                raise CommandError(
                    f"{DOCS_PAGE} is out of date with apps/core/security.py; "
                    "run '.venv/bin/python manage.py security_docs' and commit the result."
                )
            self.stdout.write(f"{DOCS_PAGE} is up to date.")
            return
        if rendered == current:
            self.stdout.write(f"{DOCS_PAGE} was already up to date.")
            return
        DOCS_PAGE.write_text(rendered, encoding="utf-8")
        self.stdout.write(f"Wrote {DOCS_PAGE}.")
