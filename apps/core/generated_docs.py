"""Pages of ``docs/`` with a section generated from the code — the MCP server's tools
(``manage.py mcp_docs``), the permission table (``manage.py security_docs``) — so the prose
around it is written by people and the section cannot drift: each command has ``--check``,
which a test runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class MarkersMissing(ValueError):
    """The page lacks the begin/end marker lines of its generated section."""


def generated_section_replace(current: str, *, begin: str, end: str, generated: str) -> str:
    """``current`` with the text from the ``begin`` marker line to the ``end`` marker line (both
    included, with the end line's break) replaced by ``generated``."""
    start = current.find(begin)
    stop = current.find(end, start + 1) if start >= 0 else -1
    if start < 0 or stop < 0:
        raise MarkersMissing(f"The page needs the lines {begin!r} and then {end!r}.")
    after = stop + len(end)
    if current.startswith("\n", after):  # the end marker's line break belongs to the generated text
        after += 1
    return current[:start] + generated + current[after:]


class GeneratedDocsCommand(BaseCommand):
    """Writes (or with ``--check`` only compares) a page's generated section."""

    page: Path
    source: str  # what the section is generated from, for the "out of date" message
    render: Callable[[str], str]

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check", action="store_true", help=f"Fail if {self.page.name} is out of date; write nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            current = self.page.read_text(encoding="utf-8")
            rendered = type(self).render(current)
        except (OSError, MarkersMissing) as error:
            raise CommandError(f"{self.page}: {error}") from error
        if options["check"]:
            if rendered != current:
                raise CommandError(
                    f"{self.page} is out of date with {self.source}; "
                    f"run '.venv/bin/python manage.py {self._command_name()}' and commit the result."
                )
            self.stdout.write(f"{self.page} is up to date.")
            return
        if rendered == current:
            self.stdout.write(f"{self.page} was already up to date.")
            return
        self.page.write_text(rendered, encoding="utf-8")
        self.stdout.write(f"Wrote {self.page}.")

    def _command_name(self) -> str:
        return type(self).__module__.rsplit(".", 1)[-1]
