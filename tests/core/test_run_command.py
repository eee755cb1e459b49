"""`manage.py run` (what `make run` calls), end to end, in its own data directory:
ready within two minutes, admin served, SIGTERM leaves no process behind; its console
is one JSON object a line (stdout is not a terminal here), names every page, logs no
error during a clean start and ends saying what stopped. Closing the terminal it runs
in (directly or under `make run`) leaves no process behind either."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from apps.core.management.commands.run import PAGES
from cortexweb.embedded import EmbeddedServices

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def _run_environment(data_dir: Path, port: int) -> dict[str, str]:
    """This environment, with its own data dir and port and none of the test run's services."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY", "PROMETHEUS_MULTIPROC_DIR"}
    }
    own = {"CORTEX_DATA_DIR": str(data_dir), "PORT": str(port), "CELERY_WORKER_CONCURRENCY": "1"}
    return environment | own


def test_run_serves_until_sigterm_and_leaves_nothing_behind(tmp_path_factory: pytest.TempPathFactory) -> None:
    data_dir = tmp_path_factory.mktemp("run")
    port = _free_port()
    environment = _run_environment(data_dir, port)
    log_path = data_dir / "run.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "run"],
            cwd=ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while _get(f"{base}/readyz") != 200:
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() - started < 120, log_path.read_text()[-3000:]
            time.sleep(0.5)
        assert _get(f"{base}/admin/login/") == 200
        assert "CortexWeb is ready" in log_path.read_text() or _wait_for_text(log_path, "CortexWeb is ready")
        credentials = data_dir / "admin-credentials.txt"
        assert credentials.stat().st_mode & 0o777 == 0o600
        assert credentials.read_text().startswith("username: admin\npassword: ")

        services = EmbeddedServices(data_dir)
        status = services.status()
        watched = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
        watched += [psutil.Process(status["postgres_pid"]), psutil.Process(status["redis_pid"])]
        assert len(watched) >= 6  # run, web, worker (+ its pool), beat, postgres, redis
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    _gone, alive = psutil.wait_procs(watched, timeout=20)
    assert alive == [], [(proc.pid, proc.info if hasattr(proc, "info") else "") for proc in alive]
    assert services.status()["postgres_pid"] is None
    assert services.status()["redis_pid"] is None
    assert _get(f"{base}/healthz") == 0

    lines = log_path.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # one format: every line a JSON object
    assert {record["process"] for record in records} == {"run", "web", "worker", "beat"}
    assert [record for record in records if record["level"] in {"error", "critical"}] == []
    [ready] = [record for record in records if record["event"].startswith("CortexWeb is ready")]
    assert ready["pages"] == {name: f"{base}{path}" for name, path in PAGES}
    for path in ("/", "/connectors", "/facts", "/papers", "/knowledge", "/verifications", "/events"):
        assert f'"{base}{path}"' in "\n".join(lines)
    root_warnings = [record for record in records if "Celery runs as root" in record["event"]]
    assert len(root_warnings) == (1 if os.geteuid() == 0 else 0)
    assert all("\n" not in record["event"] for record in records)
    assert records[-1]["event"] == "stopped web, worker, beat, Redis and Postgres"
    assert records[-1]["process"] == "run" and records[-1]["level"] == "info"


def _wait_for_text(path: Path, text: str, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text():
            return True
        time.sleep(0.2)
    return False


# Closing a terminal window hangs its pty up: the kernel sends SIGHUP to the session leader only,
# and writes to the terminal fail with EIO from then on. When the terminal runs `make run` itself
# (a window opened on it, `ssh -t host make run`, an IDE task), make is that leader: it waits for
# `run`, which must notice by itself. `-o` keeps make from reinstalling requirements here.
HANG_UP_LEADERS = {
    "make run": ["make", "-o", f"{ROOT}/.venv/.installed-base", "run"],
    "manage.py run": [sys.executable, "manage.py", "run"],
}


@pytest.mark.parametrize("leader", list(HANG_UP_LEADERS))
def test_closing_the_terminal_stops_everything(tmp_path_factory: pytest.TempPathFactory, leader: str) -> None:
    command = HANG_UP_LEADERS[leader]
    if shutil.which(command[0]) is None or not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("needs make and the checkout's .venv")
    data_dir = tmp_path_factory.mktemp("hup")
    port = _free_port()
    environment = _run_environment(data_dir, port)
    # The child is the session leader and the pty its controlling terminal, as in a terminal window.
    pid, terminal = pty.fork()
    if pid == 0:
        try:
            # As a terminal window starts it: hang-ups not ignored, even when the suite itself runs
            # under `nohup` (an ignored SIGHUP is inherited, and `run` then rightly keeps running).
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            os.chdir(ROOT)
            os.execvpe(command[0], command, environment)
        finally:
            os._exit(127)
    shown = b""
    watched: list[psutil.Process] = []
    try:
        started = time.monotonic()
        while b"Press Ctrl-C to stop." not in shown:  # read on, or `run` would block on a full terminal
            assert time.monotonic() - started < 120, shown.decode(errors="replace")[-3000:]
            if select.select([terminal], [], [], 0.5)[0]:
                try:
                    shown += os.read(terminal, 65536)
                except OSError:  # EIO: the leader left
                    pytest.fail(shown.decode(errors="replace")[-3000:])
        assert _get(f"http://127.0.0.1:{port}/readyz") == 200
        status = EmbeddedServices(data_dir).status()
        leader_process = psutil.Process(pid)
        watched = [leader_process, *leader_process.children(recursive=True)]
        watched += [psutil.Process(status["postgres_pid"]), psutil.Process(status["redis_pid"])]
        assert len(watched) >= 6  # (make,) run, web, worker (+ its pool), beat, postgres, redis
    finally:
        os.close(terminal)  # the window closes
        _gone, alive = psutil.wait_procs(watched, timeout=45)
        alive += [process for process in _processes_of(data_dir) if process not in alive]
        left = [f"{process.pid} {_cmdline(process)}" for process in alive]
        _clean_up(data_dir, alive, pid)
    assert left == []
    assert EmbeddedServices(data_dir).status()["postgres_pid"] is None
    assert EmbeddedServices(data_dir).status()["redis_pid"] is None
    assert _get(f"http://127.0.0.1:{port}/healthz") == 0


def _processes_of(data_dir: Path) -> list[psutil.Process]:
    """Every process started for this data dir: by its command line or by its environment."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            environment = process.environ()
            if str(data_dir) in _cmdline(process) or environment.get("CORTEX_DATA_DIR") == str(data_dir):
                found.append(process)
    return found


def _clean_up(data_dir: Path, alive: list[psutil.Process], leader: int) -> None:
    """What a failed test left: not left to the next one (the servers stopped as `embedded stop`)."""
    servers = EmbeddedServices(data_dir)
    server_pids = {servers.status()["postgres_pid"], servers.status()["redis_pid"]}
    for process in alive:
        if process.pid not in server_pids:
            with contextlib.suppress(psutil.Error):
                process.kill()
    if alive:
        with contextlib.suppress(Exception):
            servers.stop()
    deadline = time.monotonic() + 10
    with contextlib.suppress(ChildProcessError):  # reaped already by psutil.wait_procs
        while os.waitpid(leader, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.1)


def _cmdline(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return "?"
