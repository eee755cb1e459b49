"""Fixtures of the tests that start `manage.py run` in a data directory of its own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cortexweb.embedded import EmbeddedServices

ROOT = Path(__file__).resolve().parents[2]


def run_environment(data_dir: Path, port: int) -> dict[str, str]:
    """This environment, with its own data dir and port and none of the test run's services."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY", "PROMETHEUS_MULTIPROC_DIR"}
    }
    own = {"CORTEX_DATA_DIR": str(data_dir), "PORT": str(port), "CELERY_WORKER_CONCURRENCY": "1"}
    return environment | own


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def migrated_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory whose embedded Postgres is created and migrated, then stopped (``migrate``
    releases its lease at exit). Tests about stopping or restarting `run` start from a copy of it:
    creating and migrating the database is most of a first start, and only
    ``test_run_serves_until_sigterm_and_leaves_nothing_behind`` is about a first start."""
    data_dir = tmp_path_factory.mktemp("migrated")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "--verbosity", "0"],
        cwd=ROOT,
        env=run_environment(data_dir, free_port()),
        check=True,
        timeout=300,
    )
    assert EmbeddedServices(data_dir).status()["postgres_pid"] is None
    return data_dir


def data_dir_copy(template: Path, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A data directory of its own, migrated: ``cp -a`` keeps the Postgres files' owner and modes,
    which Postgres checks (it runs as its own user when the tests run as root)."""
    data_dir = tmp_path_factory.mktemp(name)
    subprocess.run(["cp", "-a", f"{template}/.", str(data_dir)], check=True)
    return data_dir
