"""``manage.py embedded status|stop``: the embedded Postgres and Redis of CORTEX_DATA_DIR."""

from __future__ import annotations

import json as json_module
import os
from datetime import datetime
from typing import Any

import psutil
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from cortexweb.embedded import EmbeddedServices


class Command(BaseCommand):
    help = "Show the embedded servers and the processes using them, or stop them for everyone."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "stop"])
        parser.add_argument("--json", action="store_true", help="status as one JSON object (for scripts)")

    def handle(self, *args: Any, action: str, json: bool = False, **options: Any) -> None:
        if not settings.EMBEDDED_SERVICES:
            raise CommandError("DATABASE_URL and REDIS_URL are set: there are no embedded servers to manage.")
        services = EmbeddedServices(settings.CORTEX_DATA_DIR)
        if action == "stop":
            services.stop()
            self.stdout.write("Stopped the embedded Postgres and Redis.")
            return
        status = services.status()
        if json:
            self.stdout.write(json_module.dumps(status, indent=2))
            return
        self.stdout.write(status_text(status, own_pid=os.getpid()))


def status_text(status: dict[str, Any], *, own_pid: int) -> str:
    """``embedded status`` for a person: each server, then each process holding a lease, named."""
    postgres, redis = status["postgres_pid"], status["redis_pid"]
    lines = [f"Embedded servers of {status['data_dir']}"]
    lines.append(
        f"  Postgres  running, pid {postgres}, unix socket under {status['data_dir']}/pg"
        if postgres
        else "  Postgres  stopped"
    )
    lines.append(
        f"  Redis     running, pid {redis}, 127.0.0.1:{status['redis_port']}"
        if redis
        else "  Redis     stopped"
    )
    leases: list[int] = status["leases"]
    others = [pid for pid in leases if pid != own_pid]
    lines.append(f"Used by {len(leases)} process{'es' if len(leases) != 1 else ''}:")
    lines.extend(f"  {pid:>7}  {_process_description(pid, own_pid=own_pid)}" for pid in leases)
    if others:
        lines.append("They stop when the last of these exits; 'manage.py embedded stop' stops them now.")
    else:
        lines.append("Nothing else uses them: they stop when this command exits.")
    return "\n".join(lines)


def _process_description(pid: int, *, own_pid: int) -> str:
    if pid == own_pid:
        return "this command"
    try:
        process = psutil.Process(pid)
        command = " ".join(_short_argument(argument) for argument in process.cmdline()) or process.name()
        started = datetime.fromtimestamp(process.create_time()).strftime("%Y-%m-%d %H:%M")
    except psutil.Error:
        return "(gone)"
    return f"{command}  (since {started})"


def _short_argument(argument: str) -> str:
    # The interpreter's full path says little; its name is enough.
    return os.path.basename(argument) if os.path.basename(argument).startswith("python") else argument
