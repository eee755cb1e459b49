"""Prometheus metrics that add up across web and worker processes.

``PROMETHEUS_MULTIPROC_DIR`` is set by settings before prometheus_client is
imported anywhere, so every process writes its samples to files there and
``/metrics`` aggregates them with the multiprocess collector.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

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


def render_metrics() -> tuple[bytes, str]:
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
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
