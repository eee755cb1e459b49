"""``manage.py connectors validate|import|export|sync`` — the registry from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from apps.connectors import manifest as manifest_format
from apps.connectors import services
from apps.core.commands import ActionCommand


class Command(ActionCommand):
    help = "Validate, import or export the connector manifest, or sync a connector's tools from upstream."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        validate = actions.add_parser(
            "validate", help="Check a manifest; prints every error with its JSON path."
        )
        validate.add_argument("path", nargs="?", help="Manifest file (default: CORTEX_CONNECTORS_MANIFEST).")
        load = actions.add_parser("import", help="Make the registry exactly the manifest (all or nothing).")
        load.add_argument("path", nargs="?", help="Manifest file (default: CORTEX_CONNECTORS_MANIFEST).")
        load.add_argument("--dry-run", action="store_true", help="Show what would change; change nothing.")
        dump = actions.add_parser("export", help="Write the registry as a manifest.")
        dump.add_argument("--output", "-o", help="File to write (default: standard output).")
        sync = actions.add_parser("sync", help="Read a connector's upstream tools/list and record drift.")
        sync.add_argument("connector", help="Connector id, e.g. wikidata.")

    def _read(self, path: str | None) -> str:
        source = Path(path) if path else Path(settings.CORTEX_CONNECTORS_MANIFEST)
        try:
            return source.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"Cannot read {source}: {exc.strerror}.") from exc

    def _validate(self, path: str | None, **_) -> None:
        data = services.manifest_validated(text=self._read(path))
        tools = sum(len(entry.get("remoteTools", [])) for entry in data["connectors"])
        self.stdout.write(f"valid: {len(data['connectors'])} connectors, {tools} tools")

    def _import(self, path: str | None, dry_run: bool, **_) -> None:
        data = services.manifest_validated(text=self._read(path))
        if dry_run:
            changes = services.manifest_changes(data=data)
            self.stdout.write(json.dumps(changes.as_dict(), indent=2))
            self.stdout.write(f"dry run, nothing changed: {changes.summary()}")
            return
        changes = services.manifest_import(data=data, actor="manage.py connectors import")
        self.stdout.write(f"imported: {changes.summary()}")

    def _export(self, output: str | None, **_) -> None:
        text = manifest_format.dumps(services.registry_export())
        if output:
            Path(output).write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {output}")
        else:
            self.stdout.write(text, ending="")

    def _sync(self, connector: str, **_) -> None:
        from apps.connectors.gateway import connector_sync

        report = connector_sync(slug=connector)
        self.stdout.write(report.summary())
