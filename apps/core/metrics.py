"""Prometheus metrics that add up across web and worker processes.

``PROMETHEUS_MULTIPROC_DIR`` is set by settings before prometheus_client is
imported anywhere, so every process writes its samples to files there and
``/metrics`` aggregates them with the multiprocess collector.

Every process that ever ran leaves its files (one per metric type, named by
its pid), and a scrape reads them all: without care, a long-lived host's
scrape grows with every worker restart. So each scrape first folds the
counter, histogram and summary files of processes no longer alive into one
``<type>_dead.db`` per type (their sums: totals never go back, so Prometheus
sees no reset), and removes the ``live*`` gauges of dead processes as
prometheus_client's ``mark_process_dead`` does (those modes exclude dead
processes by definition). Gauges of other modes (``all``, ``sum``, ``max``…)
report dead processes by definition and are left alone. ``manage.py run``
empties the directory of dead processes' files, folded or not, at start:
every process of the run starts its counters again.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.mmap_dict import MmapedDict

from apps.core.logging import get_logger

logger = get_logger(__name__)

http_requests_total = Counter(
    "cortex_http_requests_total", "HTTP requests answered.", ["method", "route", "status"]
)
http_request_duration_seconds = Histogram(
    "cortex_http_request_duration_seconds", "Time to answer an HTTP request.", ["method", "route"]
)
celery_tasks_total = Counter("cortex_celery_tasks_total", "Celery tasks finished.", ["task", "state"])
celery_task_duration_seconds = Histogram(
    "cortex_celery_task_duration_seconds", "Time a Celery task ran.", ["task"]
)
rate_limit_waits_total = Counter(
    "cortex_rate_limit_waits_total", "Grants from the shared limiter that had to wait.", ["limiter"]
)
rate_limited_total = Counter(
    "cortex_rate_limited_total", "Callers refused by the shared limiter.", ["limiter"]
)
upstream_requests_total = Counter(
    "cortex_upstream_requests_total",
    "Requests to upstreams by how they ended: ok, throttled (429), failed, refused (by our limiter).",
    ["upstream", "outcome"],
)

# Gauges read when /metrics is scraped (health, queues, disk), not counted by processes: functions
# yielding metric families, by dotted path so that core imports none of the apps that provide them.
SCRAPE_COLLECTORS = ("apps.connectors.health.health_metrics", "apps.dashboard.alerts.alert_metrics")


class _ScrapeTime:
    def collect(self) -> Iterator[Metric]:
        for path in SCRAPE_COLLECTORS:
            try:
                families = list(import_string(path)())
            except Exception as error:  # noqa: BLE001 - the process counters are still worth serving
                # Postgres or Redis down: those gauges are absent (alerts on absence see it), the rest
                # of /metrics still answers.
                logger.warning("metrics.scrape_collector_failed", collector=path, error=str(error))
                continue
            yield from families


# Types whose samples add up across processes, so a dead process's files can be folded into one.
SUMMED_TYPES = ("counter", "histogram", "summary")
DEAD_FILE_STEM = "dead"  # <type>_dead.db: the folded sums of dead processes


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, under another user
        return True
    return True


def _dead_pid_files(directory: Path) -> dict[int, list[Path]]:
    """The metric files of processes no longer alive, by pid (``<type>[_<mode>]_<pid>.db``)."""
    found: dict[int, list[Path]] = defaultdict(list)
    for path in directory.glob("*.db"):
        pid = path.stem.rsplit("_", 1)[-1]
        if pid.isdigit() and not _pid_alive(int(pid)):
            found[int(pid)].append(path)
    return found


@contextlib.contextmanager
def _directory_locked(directory: Path) -> Iterator[None]:
    """One process at a time folds or reads the directory: a scrape between writing the folded sums
    and removing the files they came from would count those processes twice."""
    with open(directory / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _fold_dead_processes(directory: Path) -> None:
    """Fold the summed-type files of dead processes into ``<type>_dead.db`` and remove their
    ``live*`` gauges (the caller holds the directory lock)."""
    dead = [path for paths in _dead_pid_files(directory).values() for path in paths]
    for typ in SUMMED_TYPES:
        files = [path for path in dead if path.name.startswith(f"{typ}_")]
        if not files:
            continue
        # The raw samples (a counter's total, each histogram bucket's own count, a sum) add up key by
        # key: the multiprocess collector sums them across files the same way when it reads.
        folded = MmapedDict(str(directory / f"{typ}_{DEAD_FILE_STEM}.db"))
        try:
            totals: dict[str, float] = defaultdict(float)
            for path in files:
                for key, value, _timestamp, _position in MmapedDict.read_all_values_from_file(str(path)):
                    totals[key] += value
            for key, value in totals.items():
                folded.write_value(key, folded.read_value(key)[0] + value, 0.0)
        finally:
            folded.close()
        for path in files:
            path.unlink()
    for pid in {int(path.stem.rsplit("_", 1)[-1]) for path in dead if path.name.startswith("gauge_live")}:
        multiprocess.mark_process_dead(pid, str(directory))


def metric_files_clear_dead(directory: Path | None = None) -> None:
    """Remove the files of processes no longer alive, folded ones included (``manage.py run`` at
    start, when every process starts its counters again); live processes keep theirs."""
    directory = Path(directory or settings.PROMETHEUS_MULTIPROC_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    with _directory_locked(directory):
        for paths in _dead_pid_files(directory).values():
            for path in paths:
                path.unlink(missing_ok=True)
        for folded in glob.glob(str(directory / f"*_{DEAD_FILE_STEM}.db")):
            Path(folded).unlink(missing_ok=True)


class _ProcessSamples:
    """The samples every process wrote, dead processes' folded first so the scrape reads few files."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def collect(self) -> Iterator[Metric]:
        with _directory_locked(self.directory):
            _fold_dead_processes(self.directory)
            families = list(multiprocess.MultiProcessCollector(None, str(self.directory)).collect())
        yield from families


def render_metrics() -> tuple[bytes, str]:
    registry = CollectorRegistry()
    registry.register(_ProcessSamples(Path(settings.PROMETHEUS_MULTIPROC_DIR)))
    registry.register(_ScrapeTime())
    return generate_latest(registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """Counts and times every request by its URL pattern (not its path: bounded labels)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None and match.route else "unmatched"
        http_request_duration_seconds.labels(request.method, route).observe(time.perf_counter() - started)
        http_requests_total.labels(request.method, route, str(response.status_code)).inc()
        return response
