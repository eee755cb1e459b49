"""``manage.py embedded status|stop``: the embedded Postgres and Redis of CORTEX_DATA_DIR."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from cortexweb.embedded import EmbeddedServices


class Command(BaseCommand):
    help = "Show the embedded servers and the processes using them, or stop them for everyone."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "stop"])

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if not settings.EMBEDDED_SERVICES:
            raise CommandError("DATABASE_URL and REDIS_URL are set: there are no embedded servers to manage.")
        services = EmbeddedServices(settings.CORTEX_DATA_DIR)
        if action == "stop":
            services.stop()
            self.stdout.write("Stopped the embedded Postgres and Redis.")
            return
        self.stdout.write(json.dumps(services.status(), indent=2))
