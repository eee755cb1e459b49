"""The shape of the project's management commands with sub-actions (``manage.py knowledge add …``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.core.errors import ApplicationError, ValidationFailed


class ActionCommand(BaseCommand):
    """Runs ``_<action>`` for the sub-action parsed into ``action`` ("export-log" → ``_export_log``).

    An application error becomes a ``CommandError`` with its message (exit code 1, no traceback); a
    validation failure first prints each of its errors with its path, one a line, on stderr.
    """

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        try:
            getattr(self, f"_{action.replace('-', '_')}")(**options)
        except ValidationFailed as exc:
            for error in exc.details.get("errors", []):
                self.stderr.write(f"{error['path']}: {error['message']}")
            raise CommandError(exc.message) from exc
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
