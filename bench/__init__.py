"""Benchmarks run on demand with ``python -m bench [name ...]`` (see ``bench/__main__.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable


def timed(function: Callable[[], object], repeat: int) -> list[float]:
    """Wall-clock seconds of ``repeat`` calls of ``function``, one sample per call."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return samples
