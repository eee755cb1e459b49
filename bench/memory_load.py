"""Concurrent asks under load (issue 23): 50 clients ask ``POST /v1/memory/ask`` for 20 s, all with
one token, once for a token holding 50 memories and once for one holding 8 (goal: 0 errors, and
p95 with 50 memories at most 2x p95 with 8).

Every ask reinforces the memories it returns (access count, last access, decay; ``services
.memories_reinforce``). With 8 memories the asks return the same few; with 50 they return
overlapping sets of up to 10, which is where row locks taken in no fixed order deadlocked (39 of 142
asks answered 503 here before the fix; figures in docs/memory.md).

CortexWeb's ASGI app runs under a real uvicorn on a free 127.0.0.1 port in a thread of this process
(``bench.mcp``'s server, lifespan on as ``make run`` has it); the clients are ``httpx2`` coroutines
in this process, each asking the next of 50 questions as soon as its previous answer arrived (a
closed loop: the load is as high as the server lets it be). Only answers that began within the 20 s
are counted; each client has at most 60 s for an answer, so the run stops by itself. ``BENCH_CLIENTS``
and ``BENCH_SECONDS`` change the load.

Needs a migrated database (start ``make run`` once). The bench's tokens and their memories are
deleted at the end.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections import Counter

import httpx2
from django.db import close_old_connections
from django.test import override_settings

from apps.core.services import api_token_create
from apps.memory.models import Memory, MemoryAccess
from apps.memory.services import Scope, TellItem, memory_tell
from bench import memory as memory_bench
from bench.__main__ import percentile
from bench.mcp import _LiveServer, _unmigrated

CLIENTS = int(os.environ.get("BENCH_CLIENTS", "50"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "20"))
ANSWER_TIMEOUT = 60.0
GOAL_RATIO = 2.0

# The first ten systems of the memory bench, in its five places: 50 facts, as many questions.
SYSTEMS = memory_bench.SYSTEMS[:10]
PLACES = memory_bench.PLACES
FACTS = [
    f"The {system} was moved to the {place} data centre last week." for system in SYSTEMS for place in PLACES
]
QUESTIONS = [f"Where is the {system} now, is it in {place}?" for place in PLACES for system in SYSTEMS]


async def _client(
    url: str, raw_token: str, *, offset: int, until: float, samples: list, errors: Counter
) -> None:
    headers = {"Authorization": f"Bearer {raw_token}"}
    async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=ANSWER_TIMEOUT) as http:
        asked = 0
        while time.monotonic() < until:
            question = QUESTIONS[(offset + asked) % len(QUESTIONS)]
            asked += 1
            started = time.perf_counter()
            try:
                response = await http.post("/v1/memory/ask", json={"question": question})
            except httpx2.HTTPError as error:
                errors[type(error).__name__] += 1
                continue
            elapsed = time.perf_counter() - started
            if response.status_code == 200 and response.json()["memories"]:
                samples.append(elapsed)
            else:
                errors[f"{response.status_code} {response.text[:120]}"] += 1


async def _load(url: str, raw_token: str) -> tuple[list[float], Counter, float]:
    samples: list[float] = []
    errors: Counter = Counter()
    started = time.monotonic()
    until = started + SECONDS
    await asyncio.gather(
        *(
            _client(url, raw_token, offset=n, until=until, samples=samples, errors=errors)
            for n in range(CLIENTS)
        )
    )
    return samples, errors, time.monotonic() - started


def _case(url: str, memories: int) -> tuple[list[float], Counter]:
    token, raw_token = api_token_create(
        name=f"bench-memory-load-{uuid.uuid4().hex[:8]}", scopes=["read", "write"]
    )
    try:
        memory_tell(
            scope=Scope(token=token),
            items=[TellItem(content=fact, domain="ops") for fact in FACTS[:memories]],
        )
        samples, errors, elapsed = asyncio.run(_load(url, raw_token))
        answered = len(samples) + sum(errors.values())
        name = f"memory_load.ask({memories} memories, {CLIENTS} clients, {SECONDS:g} s)"
        print(
            f"{name}: {answered / elapsed:.1f} requests/s, {sum(errors.values())} errors of {answered}, "
            f"p50 {percentile(samples, 0.50) * 1000:.0f} ms p95 {percentile(samples, 0.95) * 1000:.0f} ms",
            flush=True,
        )
        for error, count in errors.most_common():
            print(f"  {count} x {error}", flush=True)
        return samples, errors
    finally:
        close_old_connections()
        MemoryAccess.objects.filter(memory__token=token).delete()
        Memory.objects.filter(token=token).delete()
        token.delete()


def run(report) -> None:
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    if _unmigrated():
        print("memory_load: skipped: the database is not migrated (start `make run` once)")
        return
    # Thousands of asks of one token in 20 s would spend any real per-token budget: not what is measured.
    with override_settings(CORTEX_TOKEN_REQUESTS_PER_MINUTE=0):
        server = _LiveServer().start()
        try:
            few, few_errors = _case(server.url, 8)
            many, many_errors = _case(server.url, 50)
        finally:
            server.stop()
    ratio = percentile(many, 0.95) / percentile(few, 0.95)
    errors = sum(few_errors.values()) + sum(many_errors.values())
    verdict = "met" if errors == 0 and ratio <= GOAL_RATIO else "NOT met"
    print(
        f"memory_load.ratio(p95 50 memories / p95 8 memories): {ratio:.2f}x, {errors} errors "
        f"(goal: 0 errors and ≤ {GOAL_RATIO}x: {verdict})",
        flush=True,
    )
