"""``manage.py run``: the whole product in one command (what ``make run`` calls).

Migrates, ensures an admin user, collects static files, then supervises the
ASGI server (uvicorn), one Celery worker and Celery beat, with their output
interleaved and prefixed. A crashed worker or beat is restarted with backoff
(the web server's exit stops everything). SIGINT/SIGTERM stops the children, then this
process's exit releases its lease on the embedded Postgres and Redis, which
stops them too when nothing else uses them.

Children die with this process even after ``kill -9`` (PR_SET_PDEATHSIG), and
this process dies with its parent (``make``) the same way, so no server of
this checkout outlives the command.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.core.default_data import default_data_load
from apps.core.services import superuser_ensure

PR_SET_PDEATHSIG = 1
CHILD_STOP_TIMEOUT_SECONDS = 15.0
READY_TIMEOUT_SECONDS = 120.0
# Children `run` restarts when they crash; the web server's exit stops everything (it says why).
RESTARTED_CHILDREN = ("worker", "beat")
RESTART_MAX_DELAY_SECONDS = 60.0
RESTART_RESET_SECONDS = 60.0
COLOURS = {"web": "\033[36m", "worker": "\033[33m", "beat": "\033[35m"}


def _die_with_parent() -> None:
    """Ask the kernel to SIGTERM this process when its parent dies (Linux)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


class Command(BaseCommand):
    help = "Run CortexWeb: migrations, admin user, web server, Celery worker and beat."
    requires_system_checks: list[str] = []  # checked explicitly below, once, with output

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument(
            "--concurrency", type=int, default=int(os.environ.get("CELERY_WORKER_CONCURRENCY", "2"))
        )

    def handle(self, *args: Any, host: str, port: int, concurrency: int, **options: Any) -> None:
        _die_with_parent()
        pid_file = settings.CORTEX_DATA_DIR / "run" / "run.pid"
        self._claim_pid_file(pid_file)
        self._stopping = threading.Event()
        self._children: dict[str, subprocess.Popen[str]] = {}
        self._output_lock = threading.Lock()
        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        try:
            self._prepare()
            self._start_children(host, port, concurrency)
            exit_code = self._supervise(f"http://{host}:{port}")
        finally:
            self._stop_children()
            pid_file.unlink(missing_ok=True)
        if exit_code:
            raise CommandError(f"a child process failed (exit {exit_code}); everything was stopped")

    # -- start-up ---------------------------------------------------------------

    def _claim_pid_file(self, pid_file: Path) -> None:
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            other = int(pid_file.read_text())
        except (OSError, ValueError):
            other = None
        if other and other != os.getpid() and _process_alive(other):
            raise CommandError(
                f"CortexWeb is already running from {settings.CORTEX_DATA_DIR} (pid {other}). "
                "Stop it first, or set CORTEX_DATA_DIR to run a second instance."
            )
        pid_file.write_text(str(os.getpid()))  # a stale file after kill -9 is simply replaced

    def _prepare(self) -> None:
        self._say("checking configuration")
        call_command("check", deploy=False)
        self._say("migrating the database")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        credentials = superuser_ensure(
            username=os.environ.get("DJANGO_SUPERUSER_USERNAME", ""),
            password=os.environ.get("DJANGO_SUPERUSER_PASSWORD", ""),
            password_file=settings.CORTEX_DATA_DIR / "admin-credentials.txt",
        )
        self._admin_note = credentials
        for loader, loaded in default_data_load():
            self._say(f"loaded default data ({loader}): {loaded.summary()}")
        # Metric files of a previous run describe dead processes.
        shutil.rmtree(settings.PROMETHEUS_MULTIPROC_DIR, ignore_errors=True)
        Path(settings.PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)

    def _start_children(self, host: str, port: int, concurrency: int) -> None:
        self._commands = self._child_commands(host, port, concurrency)
        self._restarts: dict[str, _Restarts] = {name: _Restarts() for name in RESTARTED_CHILDREN}
        for name in self._commands:
            self._start_child(name)

    def _child_commands(self, host: str, port: int, concurrency: int) -> dict[str, list[str]]:
        python = sys.executable
        run_dir = settings.CORTEX_DATA_DIR / "run"
        return {
            "web": [
                python,
                "-m",
                "uvicorn",
                "cortexweb.asgi:application",
                "--host",
                host,
                "--port",
                str(port),
                "--no-server-header",
                # The MCP server's session manager starts in the lifespan: a failure there is fatal.
                "--lifespan",
                "on",
                "--timeout-graceful-shutdown",
                "10",
            ],
            "worker": [
                python,
                "-m",
                "celery",
                "-A",
                "cortexweb",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(concurrency),
                "--queues",
                ",".join(settings.CELERY_WORKER_QUEUES),
                "--hostname",
                f"worker@{os.uname().nodename}",
            ],
            "beat": [
                python,
                "-m",
                "celery",
                "-A",
                "cortexweb",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(run_dir / "celerybeat-schedule"),
                "--pidfile",
                "",
            ],
        }

    def _start_child(self, name: str) -> None:
        child = subprocess.Popen(
            self._commands[name],
            cwd=settings.BASE_DIR,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,  # its own process group: stopped as a whole, in order
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - the relay threads never fork
        )
        self._children[name] = child
        threading.Thread(target=self._relay, args=(name, child.stdout), daemon=True).start()

    # -- running ----------------------------------------------------------------

    def _supervise(self, base_url: str) -> int:
        ready_deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        announced = False
        while not self._stopping.is_set():
            for name, child in list(self._children.items()):
                code = child.poll()
                if code is None:
                    if name in self._restarts:
                        self._restarts[name].note_alive()
                elif name in self._restarts:
                    self._restart_later(name, code)
                else:
                    self._say(f"{name} exited with code {code}; stopping everything")
                    return code or 1
            if not announced:
                if _ready(base_url):
                    announced = True
                    self._announce(base_url)
                elif time.monotonic() > ready_deadline:
                    self._say(f"not ready after {READY_TIMEOUT_SECONDS:.0f}s: see {base_url}/readyz")
                    ready_deadline = float("inf")
            self._stopping.wait(0.5)
        return 0

    def _restart_later(self, name: str, code: int) -> None:
        """A crashed worker or beat comes back after a growing pause; Postgres, Redis and the web
        server keep serving meanwhile, and the run sweep recovers the runs the worker held."""
        restarts = self._restarts[name]
        if restarts.due_at is None:
            delay = restarts.schedule()
            self._say(f"{name} exited with code {code}; restarting it in {delay:.0f}s")
        elif time.monotonic() >= restarts.due_at:
            restarts.due_at = None
            self._start_child(name)
            self._say(f"{name} restarted (restart {restarts.count})")

    def _announce(self, base_url: str) -> None:
        lines = [
            "CortexWeb is ready:",
            f"  admin       {base_url}/admin/",
            f"  agent API   {base_url}/v1/docs",
            f"  resources   {base_url}/api/",
            f"  readiness   {base_url}/readyz",
            f"  metrics     {base_url}/metrics",
            self._admin_note,
            "Press Ctrl-C to stop.",
        ]
        for line in lines:
            self._say(line)

    def _request_stop(self, signum: int, frame: object) -> None:
        self._stopping.set()

    def _stop_children(self) -> None:
        # Web first (stop taking requests), then beat (stop scheduling), then the worker.
        for name in ("web", "beat", "worker"):
            child = self._children.get(name)
            if child is None or child.poll() is not None:
                continue
            self._say(f"stopping {name}")
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(CHILD_STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self._say(f"{name} did not stop in {CHILD_STOP_TIMEOUT_SECONDS:.0f}s; killing it")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        for child in self._children.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)  # stragglers of a group whose leader left

    # -- output -----------------------------------------------------------------

    def _relay(self, name: str, stream: TextIO | None) -> None:
        if stream is None:
            return
        colour, reset = (COLOURS[name], "\033[0m") if self.stdout.isatty() else ("", "")
        for line in stream:
            with self._output_lock:
                self.stdout.write(f"{colour}{name:<6}|{reset} {line.rstrip()}")
                self.stdout.flush()

    def _say(self, message: str) -> None:
        with self._output_lock:
            self.stdout.write(f"{'run':<6}| {message}")
            self.stdout.flush()


class _Restarts:
    """Backoff for restarting one child: 1 s, 2 s, 4 s … up to a minute, back to 1 s once it has
    stayed up for RESTART_RESET_SECONDS."""

    def __init__(self) -> None:
        self.count = 0
        self.due_at: float | None = None
        self._delay = 0.0
        self._up_since: float | None = None

    def schedule(self) -> float:
        self.count += 1
        self._up_since = None
        self._delay = min(RESTART_MAX_DELAY_SECONDS, self._delay * 2 or 1.0)
        self.due_at = time.monotonic() + self._delay
        return self._delay

    def note_alive(self) -> None:
        now = time.monotonic()
        if self._up_since is None:
            self._up_since = now
        elif now - self._up_since > RESTART_RESET_SECONDS:
            self._delay = 0.0


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/readyz", timeout=5) as response:  # noqa: S310 - our own URL
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False
