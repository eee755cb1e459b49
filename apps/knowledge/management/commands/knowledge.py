"""``manage.py knowledge add|update|search|verify`` — the seed's knowledge CLI. ``verify`` is the
seed's verb for ``manage.py grounding verify``: the grounding app owns verifications (and knowledge
imports nothing from it), so this command calls that one by name (same arguments, same output)."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import CommandError, CommandParser

from apps.core.commands import ActionCommand
from apps.knowledge import selectors, services


class Command(ActionCommand):
    help = "Add knowledge to a domain, re-embed changes, search"

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser(
            "add",
            help="Import entries into a domain (created if unknown): JSON array, {entries: [...]}, Markdown.",
        )
        add.add_argument("domain")
        add.add_argument("source_file")
        update = actions.add_parser("update", help="Re-embed the domain's entries whose text changed.")
        update.add_argument("domain")
        search = actions.add_parser("search", help="Hybrid search (meaning and words).")
        search.add_argument("query")
        search.add_argument("--domain")
        search.add_argument("--limit", type=int, default=5)
        verify = actions.add_parser("verify", help="Verify one claim: manage.py grounding verify.")
        verify.add_argument("claim")
        verify.add_argument("--domain")
        verify.add_argument("--json", dest="as_json", action="store_true", help="One JSON object.")

    def _progress(self, done: int, total: int) -> None:
        if total < 20 or not sys.stderr.isatty():
            return
        width = 30
        filled = int(width * done / total)
        self.stderr.write(f"\rembedding [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", ending="")
        if done == total:
            self.stderr.write("")

    def _add(self, domain: str, source_file: str, **_) -> None:
        path = Path(source_file)
        if not path.is_file():
            raise CommandError(f"No such file: {path}.")
        summary = services.pack_file_import(domain_name=domain, path=path, progress=self._progress)
        self.stdout.write(summary.summary())

    def _update(self, domain: str, **_) -> None:
        selectors.domain_check(domain)
        count = services.entries_embed(domain_name=domain, progress=self._progress)
        self.stdout.write(f"{domain}: {count} entries re-embedded")

    def _search(self, query: str, domain: str | None = None, limit: int = 5, **_) -> None:
        hits = selectors.knowledge_search(query=query, domain=domain, limit=limit)
        if not hits:
            self.stdout.write("no matches")
        for hit in hits:
            entry = hit.entry
            self.stdout.write(
                f"{entry.entry_id}  [{entry.domain.name}]  {entry.topic}  (similarity {hit.similarity:.3f})"
            )
            self.stdout.write(f"    {entry.content}")
            self.stdout.write(f"    source: {entry.source}{'  ' + entry.url if entry.url else ''}")

    def _verify(self, claim: str, domain: str | None = None, as_json: bool = False, **_) -> None:
        options = [*(["--domain", domain] if domain else []), *(["--json"] if as_json else [])]
        call_command("grounding", "verify", claim, *options, stdout=self.stdout, stderr=self.stderr)
