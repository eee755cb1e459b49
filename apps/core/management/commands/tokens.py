"""``manage.py tokens create|revoke|list``: API tokens for scripts and operators."""

from __future__ import annotations

import contextlib
import json
from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from apps.core.commands import ActionCommand
from apps.core.logging import console_quiet
from apps.core.models import ApiToken, TokenScope
from apps.core.services import api_token_create, api_token_revoke


class Command(ActionCommand):
    help = "Create, revoke and list API tokens. `create` prints the new token alone on its last line."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="create a token and print it once")
        create.add_argument("--name", required=True)
        create.add_argument(
            "--scopes",
            default=TokenScope.READ.value,
            help="comma-separated, default 'read' (docs/security.md): "
            + "; ".join(str(label) for label in TokenScope.labels)
            + ". An agent that asks facts, searches arXiv and verifies: read,upstream,verify.",
        )
        create.add_argument("--expires-in-days", type=int, default=None, help="no expiry when omitted")
        create.add_argument(
            "--json",
            dest="as_json",
            action="store_true",
            help="print one JSON object (id, name, scopes, expiresAt, token) instead of message and token",
        )
        revoke = actions.add_parser("revoke", help="revoke a token by id")
        revoke.add_argument("token_id", type=int)
        listing = actions.add_parser("list", help="list tokens (never their secrets)")
        listing.add_argument("--all", action="store_true", help="include revoked and expired tokens")

    def _create(
        self, *, name: str, scopes: str, expires_in_days: int | None, as_json: bool, verbosity: int, **_: Any
    ) -> None:
        if expires_in_days is not None and expires_in_days <= 0:
            raise CommandError("--expires-in-days must be a positive number of days.")
        expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
        # The message below says what the api_token.created log line would; -v 2 shows that too.
        with console_quiet() if verbosity < 2 else contextlib.nullcontext():
            token, raw_token = api_token_create(name=name, scopes=scopes.split(","), expires_at=expires_at)
        if as_json:
            self.stdout.write(_json_object(token, raw_token))
            return
        self.stderr.write(
            f"Created token {token.pk} '{token.name}' with scopes {','.join(token.scopes)}"
            f"{f', expiring {token.expires_at:%Y-%m-%d}' if token.expires_at else ''}. It is shown only once:"
        )
        self.stdout.write(raw_token)

    def _revoke(self, *, token_id: int, **_: Any) -> None:
        token = api_token_revoke(token_id=token_id)
        self.stdout.write(f"Revoked token {token.pk} '{token.name}'.")

    def _list(self, *, all: bool, **_: Any) -> None:
        tokens = ApiToken.objects.all() if all else ApiToken.objects.active()
        self.stdout.write(f"{'id':>5}  {'name':<24} {'prefix':<12} {'scopes':<28} {'expires':<12} last used")
        for token in tokens.order_by("pk"):
            state = "" if token.is_active else " (revoked)" if token.revoked_at else " (expired)"
            expires = token.expires_at.strftime("%Y-%m-%d") if token.expires_at else "never"
            last_used = token.last_used_at.isoformat(timespec="seconds") if token.last_used_at else "never"
            self.stdout.write(
                f"{token.pk:>5}  {token.name[:24]:<24} {token.prefix:<12} {','.join(token.scopes):<28} "
                f"{expires:<12} {last_used}{state}"
            )


def _json_object(token: ApiToken, raw_token: str) -> str:
    return json.dumps(
        {
            "id": token.pk,
            "name": token.name,
            "scopes": list(token.scopes),
            "expiresAt": token.expires_at.isoformat() if token.expires_at else None,
            "token": raw_token,
        }
    )
