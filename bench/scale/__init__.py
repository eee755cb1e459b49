"""Cost curves and peers, side by side (issue 27): ``python -m bench scale``.

Every part measures CortexWeb and what a user would pick instead in the same run, on the same data,
and prints markdown tables (``bench.scale.table``) that go into docs/operations.md as printed:

- ``memory``: memory ask at 10k, 100k and 1M memories against raw pgvector HNSW and FAISS (HNSW
  and flat) on the same vectors; p50/p95, recall@10 against exact search, build time, disk size;
- ``knowledge``: knowledge search at 1k, 10k and 100k entries;
- ``catalogue``: the service map with 10, 100 and 1000 connectors (uncached and cached) and
  ``tools/list`` over MCP against ``GET /v1/tools`` with 1000 catalogue tools;
- ``parsing``: arXiv Atom parsing against ``arxiv`` 4.x and ``feedparser`` on the same feeds;
- ``ontology``: ontology reads and queries at 1k and 10k classes, rdflib against pyoxigraph;
- ``load``: the whole stack under ``locust`` (headless, loopback), 10 and 50 clients, one and two
  web hosts.

``BENCH_SCALE_PARTS`` (comma-separated) runs some parts only; each part documents its own size
knobs. Needs a migrated database of its own (``CORTEX_DATA_DIR=.cortex/bench-scale``,
``manage.py migrate`` once): the parts drop and rebuild indexes inside rolled-back transactions.
"""

from __future__ import annotations

import importlib
import os
import platform
import time
from collections.abc import Callable

PARTS = ("memory", "knowledge", "catalogue", "parsing", "ontology", "load")


def machine() -> str:
    """Which machine the figures come from: every table is only comparable within one run."""
    cores = os.cpu_count()
    with open("/proc/meminfo") as meminfo:
        total_kib = int(meminfo.readline().split()[1])
    load = os.getloadavg()[0]
    return (
        f"{platform.node()}: {cores} cores, {total_kib / 1024 / 1024:.0f} GiB RAM, "
        f"Python {platform.python_version()}, load average {load:.2f} at start"
    )


def run(report: Callable[[str, list[float]], None]) -> None:
    wanted = [part.strip() for part in os.environ.get("BENCH_SCALE_PARTS", "").split(",") if part.strip()]
    unknown = sorted(set(wanted) - set(PARTS))
    if unknown:
        raise SystemExit(f"unknown BENCH_SCALE_PARTS: {', '.join(unknown)}; parts: {', '.join(PARTS)}")
    print(f"# bench scale — {machine()}", flush=True)
    for part in wanted or PARTS:
        started = time.perf_counter()
        importlib.import_module(f"bench.scale.{part}").run()
        print(f"_{part}: {time.perf_counter() - started:.0f} s_\n", flush=True)
