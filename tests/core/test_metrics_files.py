"""The Prometheus multiprocess directory does not grow with the processes that ever ran: a scrape
folds the counters and histograms of dead processes into one file per type (totals kept), drops
their ``live*`` gauges, and ``manage.py run`` starts from the files of live processes only.

The processes here are real: each writes its samples to the directory, as a web or worker process
does, and exits (or waits, to stay alive)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from apps.core.metrics import metric_files_clear_dead

# One process of the product, reduced to its metrics: the amount is its argv[1]; with a second
# argument it stays alive until its stdin closes.
WRITER = """
import sys
from prometheus_client import Counter, Gauge, Histogram
amount = float(sys.argv[1])
Counter("cortex_fold_test_total", "Folded counter.", ["kind"]).labels("a").inc(amount)
Histogram("cortex_fold_test_seconds", "Folded histogram.", buckets=(1, 5)).observe(amount)
Gauge("cortex_fold_test_live", "Live processes only.", multiprocess_mode="livesum").set(amount)
Gauge("cortex_fold_test_all", "Every process, dead ones too.", multiprocess_mode="all").set(amount)
if len(sys.argv) > 2:
    print("written", flush=True)
    sys.stdin.read()
"""


def _environment(directory: Path) -> dict[str, str]:
    return {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}


def _process_that_ran(directory: Path, amount: float) -> int:
    """Runs one writer to its end; its pid (now dead)."""
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(amount)], env=_environment(directory))
    assert process.wait(30) == 0
    return process.pid


@pytest.fixture
def directory(tmp_path: Path, settings) -> Path:
    settings.PROMETHEUS_MULTIPROC_DIR = str(tmp_path)
    return tmp_path


@pytest.fixture
def live_writer(directory: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, "7", "stay"],
        env=_environment(directory),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "written\n"
    yield process
    process.communicate(timeout=30)


def _scrape() -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """The fold-test series of one /metrics scrape: sample name → sorted labels → value."""
    response = Client().get("/metrics")
    assert response.status_code == 200
    series: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            if sample.name.startswith("cortex_fold_test"):
                series.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return series


def _files(directory: Path) -> set[str]:
    return {path.name for path in directory.glob("*.db")}


@pytest.mark.django_db
def test_a_scrape_folds_dead_processes_and_keeps_their_totals(directory: Path) -> None:
    pids = [_process_that_ran(directory, amount) for amount in (1, 2, 3)]
    assert len(_files(directory)) == 12  # counter, histogram and two gauges per process

    series = _scrape()

    # The counters and histograms of the three processes are in one file per type; only the gauges
    # of mode "all" (which report dead processes by definition) stay per process.
    assert _files(directory) == {"counter_dead.db", "histogram_dead.db"} | {
        f"gauge_all_{pid}.db" for pid in pids
    }
    assert series == {
        "cortex_fold_test_total": {(("kind", "a"),): 6.0},
        "cortex_fold_test_seconds_bucket": {
            (("le", "1.0"),): 1.0,
            (("le", "5.0"),): 3.0,
            (("le", "+Inf"),): 3.0,
        },
        "cortex_fold_test_seconds_count": {(): 3.0},
        "cortex_fold_test_seconds_sum": {(): 6.0},
        "cortex_fold_test_all": {
            (("pid", str(pid)),): float(amount) for pid, amount in zip(pids, (1, 2, 3), strict=True)
        },
    }

    # A fourth process dies: its sums join the folded ones (the totals never go back), no file more
    # than before but its own gauge.
    fourth = _process_that_ran(directory, 4)
    series = _scrape()
    assert _files(directory) == {"counter_dead.db", "histogram_dead.db"} | {
        f"gauge_all_{pid}.db" for pid in [*pids, fourth]
    }
    assert series["cortex_fold_test_total"] == {(("kind", "a"),): 10.0}
    assert series["cortex_fold_test_seconds_bucket"] == {
        (("le", "1.0"),): 1.0,
        (("le", "5.0"),): 4.0,
        (("le", "+Inf"),): 4.0,
    }
    assert series["cortex_fold_test_seconds_sum"] == {(): 10.0}


@pytest.mark.django_db
def test_a_live_process_keeps_its_files_and_its_live_gauge(directory: Path, live_writer) -> None:
    dead = _process_that_ran(directory, 1)

    series = _scrape()

    alive = live_writer.pid
    assert _files(directory) == {
        "counter_dead.db",
        "histogram_dead.db",
        f"gauge_all_{dead}.db",
        f"counter_{alive}.db",
        f"histogram_{alive}.db",
        f"gauge_livesum_{alive}.db",
        f"gauge_all_{alive}.db",
    }
    assert series["cortex_fold_test_total"] == {(("kind", "a"),): 8.0}
    assert series["cortex_fold_test_live"] == {(): 7.0}  # the dead process's 1 is not in it


def test_run_starts_from_the_files_of_live_processes_only(directory: Path, live_writer) -> None:
    """What ``manage.py run`` does at start: a dead process's files go, folded or not; a process
    still running (a ``manage.py`` command of the same data dir) keeps its own."""
    _process_that_ran(directory, 1)
    (directory / "counter_dead.db").write_bytes((directory / f"counter_{live_writer.pid}.db").read_bytes())

    metric_files_clear_dead(directory)

    alive = live_writer.pid
    assert _files(directory) == {
        f"counter_{alive}.db",
        f"histogram_{alive}.db",
        f"gauge_livesum_{alive}.db",
        f"gauge_all_{alive}.db",
    }
