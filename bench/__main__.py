"""A tiny benchmark harness: ``python -m bench [name ...]``.

Each benchmark module ``bench/<name>.py`` defines ``run(report)``; ``report``
prints one line per figure as ``name: p50 … ms p95 … ms (n=…)``. With no
name, every benchmark runs. Figures are printed, never asserted: targets are
compared by people, not by flaky timed tests.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import statistics
import sys
from pathlib import Path


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[round(fraction * 100) - 1]


def report(name: str, samples_seconds: list[float]) -> None:
    p50 = percentile(samples_seconds, 0.50) * 1000
    p95 = percentile(samples_seconds, 0.95) * 1000
    print(f"{name}: p50 {p50:.3f} ms p95 {p95:.3f} ms (n={len(samples_seconds)})", flush=True)


def available() -> list[str]:
    return sorted(
        module.name
        for module in pkgutil.iter_modules([str(Path(__file__).parent)])
        if module.name != "__main__"
    )


def main(names: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cortexweb.settings")
    # The web process's heap state (Django set up, startup objects frozen out of the collector).
    import cortexweb.asgi  # noqa: F401

    unknown = sorted(set(names) - set(available()))
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(available())}",
            file=sys.stderr,
        )
        return 2
    for name in names or available():
        importlib.import_module(f"bench.{name}").run(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
