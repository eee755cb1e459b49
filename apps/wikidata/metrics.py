"""Metrics of the fact workflow and of every Wikidata upstream call (multiprocess-safe)."""

from prometheus_client import Counter, Histogram

upstream_calls_total = Counter(
    "wikidata_upstream_calls_total",
    "Requests to Wikidata upstreams by upstream and outcome "
    "(ok, retryable, terminal, rate_limited, deadline).",
    ["upstream", "outcome"],
)
upstream_duration_seconds = Histogram(
    "wikidata_upstream_duration_seconds",
    "Time of one request to a Wikidata upstream (the limiter's wait included).",
    ["upstream"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
rate_limit_waits_total = Counter(
    "wikidata_rate_limit_waits_total", "Requests that waited for their upstream's shared slot.", ["upstream"]
)
fact_runs_total = Counter(
    "fact_runs_total", "Finished fact runs by outcome (succeeded, degraded, failed).", ["outcome"]
)
fact_run_duration_seconds = Histogram(
    "fact_run_duration_seconds",
    "Time a fact run spent executing on the worker.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
