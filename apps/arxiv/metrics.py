"""The seed's arXiv metrics (multiprocess-safe like every metric here)."""

from prometheus_client import Counter, Histogram

tool_calls_total = Counter("arxiv_tool_calls_total", "arXiv searches and lookups by outcome.", ["outcome"])
tool_duration_seconds = Histogram(
    "arxiv_tool_duration_seconds",
    "Time a run spent executing (queueing for slots and retries included).",
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 20, 40, 60, 120),
)
rate_limit_hits_total = Counter(
    "arxiv_rate_limit_hits_total", "Requests that had to wait for arXiv's shared slot, or were refused."
)
errors_total = Counter("arxiv_errors_total", "Failed arXiv runs by error type.", ["type"])
