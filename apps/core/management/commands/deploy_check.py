"""``manage.py deploy_check``: a host's settings checked against the running Postgres and Redis.

Run on a web or worker host before it serves (docs/deployment.md): it fails (exit 1) naming what to
fix when the host would start on embedded servers, cannot reach or authenticate to Postgres or
Redis, finds Postgres without pgvector or with migrations not applied, or cannot write to Redis —
the faults that otherwise show as a host that never becomes ready. ``--load-defaults`` (for the
one-off migration job, after ``migrate``) loads the first-start data ``manage.py run`` loads:
the default connectors manifest and grounding agents, when absent.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.core.default_data import default_data_load
from apps.core.redis import get_redis


def _external_services() -> str:
    if settings.EMBEDDED_SERVICES:
        raise RuntimeError(
            "DATABASE_URL and REDIS_URL are not both set, so this host would start embedded servers "
            "of its own; set both to the shared Postgres and Redis."
        )
    database = connection.settings_dict
    return f"Postgres {database['HOST']}:{database['PORT'] or 5432}/{database['NAME']}, Redis set"


def _postgres() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        (version,) = cursor.fetchone()
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    vector = f"pgvector {row[0]}" if row else "pgvector not installed yet (migrate installs it)"
    return f"Postgres {version}, {vector}"


def _migrations() -> str:
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        names = ", ".join(f"{migration.app_label}.{migration.name}" for migration, _ in pending[:5])
        raise RuntimeError(
            f"{len(pending)} migration(s) not applied ({names}{', …' if len(pending) > 5 else ''}); "
            "run `manage.py migrate` once (the migration job) before starting hosts."
        )
    return "every migration applied"


def _redis() -> str:
    redis = get_redis()
    key = f"cortex:deploy_check:{secrets.token_hex(8)}"
    # A write, not just PING: a read-only replica or a user without write rights answers PING too.
    redis.set(key, "1", ex=10)
    redis.delete(key)
    return f"Redis {redis.info('server').get('redis_version', '?')} answers and accepts writes"


class Command(BaseCommand):
    help = "Check this host's settings against the running Postgres and Redis before it serves."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--load-defaults",
            action="store_true",
            help="After the checks, load the first-start data (default connectors, grounding agents) "
            "when absent: for the one-off migration job, after `manage.py migrate`.",
        )

    def handle(self, *args: Any, load_defaults: bool, **options: Any) -> None:
        checks: list[tuple[str, Callable[[], str]]] = [
            ("services", _external_services),
            ("postgres", _postgres),
            ("migrations", _migrations),
            ("redis", _redis),
        ]
        failed: list[str] = []
        for name, check in checks:
            try:
                detail = check()
            except Exception as error:  # noqa: BLE001 - every failure is reported, then the command fails
                failed.append(name)
                self.stdout.write(f"{name}: FAILED: {error}")
                if name == "services":
                    break  # the other checks would be about embedded servers, not this deployment
            else:
                self.stdout.write(f"{name}: ok ({detail})")
        if failed:
            raise CommandError(f"deploy_check failed: {', '.join(failed)}; this host must not serve yet.")
        if load_defaults:
            for loader, loaded in default_data_load():
                self.stdout.write(f"loaded default data ({loader}): {loaded.summary()}")
        self.stdout.write("deploy_check: ready to serve")
