"""``manage.py run``: the whole product in one command (what ``make run`` calls).

Migrates, ensures an admin user, collects static files, then supervises the
ASGI server (uvicorn), one Celery worker and Celery beat, with their output
interleaved and prefixed. A crashed worker or beat is restarted with backoff
(the web server's exit stops everything). SIGINT/SIGTERM stops the children, then
releases this process's lease on the embedded Postgres and Redis, which stops them
when nothing else uses them, and says on its last line what stopped. A closed terminal
(SIGHUP, or the controlling terminal gone) stops everything the same way, unless
started under nohup.

One format on stdout: on a terminal, readable lines prefixed with the process
(``web   | 06:08:26 info    …``); otherwise JSON objects, one a line, each with
``process``. Children always log JSON (their stdout is a pipe); this process
re-renders their lines, and wraps the few plain lines they print, in the format
of its own stdout.

Children die with this process even after ``kill -9`` (PR_SET_PDEATHSIG), and
this process dies with its parent (``make``) the same way, so no server of
this checkout outlives the command.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from apps.core.default_data import default_data_load
from apps.core.logging import json_formatter, readable_line, uvicorn_log_config
from apps.core.metrics import metric_files_clear_dead
from apps.core.services import superuser_ensure
from cortexweb.embedded import attached_services

PR_SET_PDEATHSIG = 1
CHILD_STOP_TIMEOUT_SECONDS = 15.0
READY_TIMEOUT_SECONDS = 120.0
# Children `run` restarts when they crash; the web server's exit stops everything (it says why).
RESTARTED_CHILDREN = ("worker", "beat")
RESTART_MAX_DELAY_SECONDS = 60.0
RESTART_RESET_SECONDS = 60.0
COLOURS = {"web": "\033[36m", "worker": "\033[33m", "beat": "\033[35m"}
# The pages the ready message lists (README "What make run starts" lists the same).
PAGES = (
    ("home", "/"),
    ("connectors", "/connectors"),
    ("facts", "/facts"),
    ("papers", "/papers"),
    ("knowledge", "/knowledge"),
    ("verifications", "/verifications"),
    ("memories", "/memories"),
    ("ontology", "/ontology"),
    ("events", "/events"),
    ("changes", "/changes"),
    ("admin", "/admin/"),
    ("agent API", "/v1/docs"),
    ("MCP", "/mcp"),
    ("resources", "/api/"),
    ("health", "/healthz"),
    ("readiness", "/readyz"),
    ("metrics", "/metrics"),
)


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
        self._terminal = self.stdout.isatty()
        self._own_logs_here()
        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        # A closed terminal: stop as on Ctrl-C (the default would exit at once, leaving the servers),
        # unless started under nohup, which asks to outlive the terminal.
        self._watch_terminal = False
        if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
            signal.signal(signal.SIGHUP, self._request_stop)
            # The kernel sends SIGHUP only to the terminal's session leader. When that is `make`
            # (a terminal window, `ssh -t` or an IDE running `make run` itself), make waits for
            # this process to stop and this process never hears of it: so notice the loss.
            self._watch_terminal = _has_controlling_terminal()
        exit_code = 1
        try:
            self._prepare()
            self._start_children(host, port, concurrency)
            exit_code = self._supervise(f"http://{host}:{port}")
        finally:
            stopped = self._stop_children()
            pid_file.unlink(missing_ok=True)
            self._say(self._stop_servers(stopped), level="info" if not exit_code else "error")
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

    def _own_logs_here(self) -> None:
        """This process's own log records (migrations, default data) in the stream's format, as "run"."""
        root = logging.getLogger()
        root.handlers = [_RelayHandler(self)]

    def _prepare(self) -> None:
        self._say("checking configuration")
        checked = io.StringIO()
        call_command("check", deploy=False, stdout=checked)
        self._say(" ".join(checked.getvalue().split()))
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
        # Metric files of a previous run describe dead processes: every process of this run counts
        # from zero again (a process still alive, a `manage.py` command of this data dir, keeps its).
        metric_files_clear_dead()

    def _start_children(self, host: str, port: int, concurrency: int) -> None:
        self._say(
            f"starting web (uvicorn on http://{host}:{port}), worker (queues "
            f"{', '.join(settings.CELERY_WORKER_QUEUES)}; {concurrency} processes) and beat"
        )
        self._commands = self._child_commands(host, port, concurrency)
        self._restarts: dict[str, _Restarts] = {name: _Restarts() for name in RESTARTED_CHILDREN}
        for name in self._commands:
            self._start_child(name)

    def _child_commands(self, host: str, port: int, concurrency: int) -> dict[str, list[str]]:
        python = sys.executable
        run_dir = settings.CORTEX_DATA_DIR / "run"
        log_config = run_dir / "uvicorn-logging.json"
        log_config.write_text(json.dumps(uvicorn_log_config(), indent=2))
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
                "--log-config",
                str(log_config),
            ],
            "worker": [
                python,
                "-m",
                "celery",
                "--quiet",  # no banner: the ready message says what runs
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
                "--quiet",
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
            if self._watch_terminal and not _has_controlling_terminal():
                self._say("the terminal was closed; stopping")
                break
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
        pages = {name: f"{base_url}{path}" for name, path in PAGES}
        if self._terminal:
            width = max(len(name) for name in pages)
            lines = [f"  {name:<{width}}  {url}" for name, url in pages.items()]
            self._say("CortexWeb is ready:")
            with self._output_lock, contextlib.suppress(OSError):  # continuation lines, aligned under it
                for line in [*lines, f"  {self._admin_note}", "  Press Ctrl-C to stop."]:
                    self.stdout.write(f"{'run':<6}| {line}")
                self.stdout.flush()
        else:
            self._say(f"CortexWeb is ready at {base_url}/", pages=pages, admin=self._admin_note)

    def _request_stop(self, signum: int, frame: object) -> None:
        self._stopping.set()

    def _stop_children(self) -> list[str]:
        """Stop the children still running; returns the names of those that ran."""
        # Web first (stop taking requests), then beat (stop scheduling), then the worker.
        ran: list[str] = [name for name in ("web", "worker", "beat") if name in self._children]
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
        return ran

    def _stop_servers(self, stopped: list[str]) -> str:
        """Release the embedded Postgres and Redis now (not at exit) and say what stopped."""
        services = attached_services()
        if services is None:
            kept = "Postgres and Redis are external (DATABASE_URL, REDIS_URL) and keep running"
            return f"stopped {_listed(stopped)}; {kept}" if stopped else kept
        connections.close_all()
        others = services.detach()
        if others:
            pids = ", ".join(map(str, others))
            users = f"{len(others)} other process{'es' if len(others) > 1 else ''} (pid {pids})"
            return f"stopped {_listed(stopped)}; Redis and Postgres keep running for {users}"
        return f"stopped {_listed([*stopped, 'Redis', 'Postgres'])}"

    # -- output -----------------------------------------------------------------

    def _relay(self, name: str, stream: TextIO | None) -> None:
        if stream is None:
            return
        for line in stream:
            if line.strip():
                self._emit(name, _record(line.rstrip(), logger=f"cortexweb.{name}"))

    def _say(self, message: str, *, level: str = "info", **fields: Any) -> None:
        self._emit("run", {"event": message, "level": level, **fields}, logger="cortexweb.run")

    def _emit(self, process: str, record: dict[str, Any], *, logger: str | None = None) -> None:
        """One record on stdout in its format: JSON with ``process``, or a readable prefixed line."""
        record.setdefault("timestamp", _now())
        if logger:
            record.setdefault("logger", logger)
        record.setdefault("brand", settings.CORTEX_BRAND)
        if self._terminal:
            colour, reset = (COLOURS.get(process, ""), "\033[0m") if process in COLOURS else ("", "")
            prefix = f"{colour}{process:<6}|{reset} "
            text = "\n".join(prefix + line for line in readable_line(record).split("\n"))
        else:
            text = json.dumps({**record, "process": process}, ensure_ascii=False, default=str)
        with self._output_lock, contextlib.suppress(OSError):  # a closed terminal must not stop the stop
            self.stdout.write(text)
            self.stdout.flush()


class _RelayHandler(logging.Handler):
    """Root handler of ``run`` itself: each record through the command's own output."""

    def __init__(self, command: Command) -> None:
        super().__init__()
        self.command = command
        self.setFormatter(json_formatter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.command._emit("run", json.loads(self.format(record)))
        except Exception:  # noqa: BLE001 - logging must never break the command
            self.handleError(record)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _record(line: str, *, logger: str) -> dict[str, Any]:
    """A child's output line as a log record: its own JSON, or a plain line (a Celery shutdown
    notice, a traceback a library printed) wrapped as information."""
    if line.startswith("{"):
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "event" in parsed:
            return parsed
    return {"event": line.strip(), "level": "info", "logger": logger}


def _listed(names: list[str]) -> str:
    if len(names) <= 1:
        return names[0] if names else "nothing"
    return f"{', '.join(names[:-1])} and {names[-1]}"


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


def _has_controlling_terminal() -> bool:
    """Whether this process has a controlling terminal; a hung-up terminal (its window closed)
    is taken away from every process of its session, so /dev/tty no longer opens."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/readyz", timeout=5) as response:  # noqa: S310 - our own URL
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False
