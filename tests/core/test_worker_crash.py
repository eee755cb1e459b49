"""Fault test: SIGKILL the Celery worker of `manage.py run` while a fact run and an arXiv run
execute. `run` restarts the worker, beat's sweep re-enqueues both runs once their heartbeat is
stale, and both finish — nothing stays "running", nothing is written twice.

The product runs as `make run` starts it, in a data directory of its own, against local replays
of Wikidata and arXiv whose first answer hangs (so the worker is mid-request when it dies).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.arxiv.replay_server import ReplayArxiv
from tests.arxiv.replay_server import Reply as ArxivReply
from tests.core.test_run_command import ROOT, _free_port
from tests.wikidata.replay_server import ReplayWikidata
from tests.wikidata.replay_server import Reply as WikidataReply
from tests.wikidata.test_facts import Q42_VECTOR_HIT

HANG_SECONDS = 120  # longer than the test: the killed worker's request never completes
RECOVERY_BOUND_SECONDS = 60  # the bound, counted from the moment the new worker is up


def _call(method: str, url: str, token: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        url,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


Product = tuple[str, str, Path, subprocess.Popen[bytes]]


@pytest.fixture
def product(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Product]:
    """`manage.py run` in its own data directory, upstreams replayed locally, recovery tuned short."""
    wikidata, arxiv = ReplayWikidata().start(), ReplayArxiv().start()
    wikidata.default_vector = WikidataReply(body=Q42_VECTOR_HIT)
    wikidata.script("/item/query/", WikidataReply(body=Q42_VECTOR_HIT, delay=HANG_SECONDS))
    arxiv.script.append(ArxivReply(delay=HANG_SECONDS))
    yield from _product(
        tmp_path_factory,
        wikidata,
        arxiv,
        {
            # Deadlines long enough that the hanging request, not a deadline, is what the worker is in.
            "FACTS_RUN_DEADLINE_SECONDS": "300",
            "ARXIV_RUN_DEADLINE_SECONDS": "300",
            # The killed request's arXiv connection lock is freed by its TTL (this + 5 s), which the
            # re-executed search waits out: 15 s, not the 30 s default, still outlasts the moments
            # between the search starting its hanging request and the kill.
            "ARXIV_TIMEOUT_SECONDS": "15",
        },
    )


SLOW_SECONDS = 20  # every upstream answers 503, this late (the scenario)
SLOW_DEADLINE = 20


@pytest.fixture
def slow_product(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Product]:
    """The same, with every upstream answering 503 after SLOW_SECONDS and SLOW_DEADLINE deadlines."""
    wikidata, arxiv = ReplayWikidata().start(), ReplayArxiv().start()
    slow = WikidataReply(status=503, body={"detail": "Service Unavailable"}, delay=SLOW_SECONDS)
    wikidata.default_vector = wikidata.default_sparql = slow
    wikidata.script("/w/api.php", *[slow] * 50)
    arxiv.default = ArxivReply(status=503, delay=SLOW_SECONDS)
    yield from _product(
        tmp_path_factory,
        wikidata,
        arxiv,
        {
            "FACTS_RUN_DEADLINE_SECONDS": str(SLOW_DEADLINE),
            "ARXIV_RUN_DEADLINE_SECONDS": str(SLOW_DEADLINE),
        },
    )


def _product(
    tmp_path_factory: pytest.TempPathFactory,
    wikidata: ReplayWikidata,
    arxiv: ReplayArxiv,
    deadlines: dict[str, str],
) -> Iterator[Product]:
    data_dir = tmp_path_factory.mktemp("crash")
    port = _free_port()
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY", "PROMETHEUS_MULTIPROC_DIR"}
    }
    environment |= {
        "CORTEX_DATA_DIR": str(data_dir),
        "PORT": str(port),
        "CELERY_WORKER_CONCURRENCY": "2",
        "FEATURE_ARXIV": "true",
        "CORTEX_OUTBOUND_ALLOW_NETWORKS": "127.0.0.0/8",
        "WIKIDATA_API_URL": wikidata.api_url,
        "WIKIDATA_SPARQL_URL": wikidata.sparql_url,
        "WIKIDATA_VECTOR_URL": wikidata.vector_url,
        "WIKIDATA_MCP_URL": "http://127.0.0.1:9/mcp/",
        "ARXIV_API_URL": arxiv.url,
        "ARXIV_MIN_INTERVAL_SECONDS": "0.1",
        **deadlines,
        # arXiv's single-connection lock outlives a killed holder by its TTL (ARXIV_TIMEOUT_SECONDS
        # + 5 s): the re-executed run waits for it (slow_product keeps the 30 s default, so the lock
        # outlasts its 20 s deadline), so the API answers 202 after a second rather than waiting.
        "ARXIV_WAIT_SECONDS": "1",
        "WIKIDATA_VECTOR_TIMEOUT_SECONDS": "200",
        "CORTEX_HTTP_READ_TIMEOUT": "200",
        "CORTEX_RUN_HEARTBEAT_SECONDS": "1",
        "CORTEX_RUN_STALE_SECONDS": "6",
        "CORTEX_RUN_SWEEP_SECONDS": "2",
    }
    log_path = data_dir / "run.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "run"],
            cwd=ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while True:
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() - started < 150, log_path.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{base}/readyz", timeout=5) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        token = subprocess.run(
            [sys.executable, "manage.py", "tokens", "create", "--name", "crash-test", "--scopes", "admin"],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        yield base, token, log_path, process
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
        wikidata.stop()
        arxiv.stop()


def _workers(run_process: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The live Celery worker main processes `run` supervises (their pool children die with them)."""
    workers = []
    for child in psutil.Process(run_process.pid).children():
        try:
            command = child.cmdline()
        except (psutil.ZombieProcess, psutil.NoSuchProcess):  # a killed one not yet reaped
            continue
        if "celery" in " ".join(command) and "worker" in command:
            workers.append(child)
    return workers


def _kill_the_worker(run_process: subprocess.Popen[bytes], log_path: Path) -> float:
    """SIGKILL the worker and its pool, mid-request; when (monotonic) its successor was up."""
    [worker] = _workers(run_process)
    os.killpg(worker.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not [w for w in _workers(run_process) if w.pid != worker.pid]:
        assert time.monotonic() < deadline, log_path.read_text()[-3000:]
        time.sleep(0.2)
    assert "worker exited with code -9; restarting it in 1s" in log_path.read_text()
    return time.monotonic()


def _finished(base: str, token: str, *urls: str, within: float, log_path: Path) -> list[dict[str, Any]]:
    """The runs at ``urls`` once none is pending; fails if that takes longer than ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        runs = [_call("GET", url, token)[1] for url in urls]
        if all(run["status"] not in ("queued", "running") for run in runs):
            return runs
        assert time.monotonic() < deadline, (runs, log_path.read_text()[-4000:])
        time.sleep(0.5)


def test_runs_survive_a_killed_worker(product) -> None:
    base, token, log_path, run_process = product
    status, fact = _call(
        "POST",
        f"{base}/v1/facts/query",
        token,
        {"query": "What is Douglas Adams an instance of?", "waitSeconds": 0},
    )
    assert status == 202, fact
    status, search = _call("POST", f"{base}/v1/arxiv/search", token, {"query": "testing"})
    assert status == 202, search  # its first request to arXiv hangs past ARXIV_WAIT_SECONDS
    fact_url, search_url = f"{base}/v1/facts/runs/{fact['runId']}", f"{base}/v1/arxiv/runs/{search['runId']}"
    assert _call("GET", fact_url, token)[1]["status"] == "running"
    assert _call("GET", search_url, token)[1]["status"] == "running"

    _kill_the_worker(run_process, log_path)
    assert _call("GET", f"{base}/readyz", token)[0] in (200, 503)  # the web server kept serving

    fact_now, search_now = _finished(
        base, token, fact_url, search_url, within=RECOVERY_BOUND_SECONDS, log_path=log_path
    )
    assert fact_now["status"] == "succeeded", fact_now
    assert search_now["status"] == "succeeded", search_now
    assert len(search_now["items"]) == 10

    status, fact_row = _call("GET", f"{base}/api/fact-runs/{fact['runId']}/", token)
    assert (status, fact_row["executions"]) == (200, 2)
    status, events = _call("GET", f"{base}/api/events/?name=runs.requeued", token)
    requeued = sorted(event["payload"]["runId"] for event in events["results"])
    assert requeued == sorted([fact["runId"], search["runId"]])
    # Each fact once, however many times the run executed.
    guids = [result["metadata"]["wikidata"]["claimGuid"] for result in fact_now["results"]]
    assert len(guids) == len(set(guids)) > 0


def test_runs_of_a_killed_worker_end_at_their_deadline(slow_product) -> None:
    """The issue's scenario: every upstream answers 503 only after 20 s. The killed worker's runs are
    re-enqueued by the sweep with what is left of their deadline (counted from submission), and end
    at it — not after a fresh budget of slow requests — within the bound of the new worker."""
    base, token, log_path, run_process = slow_product
    submitted = time.monotonic()
    status, fact = _call(
        "POST", f"{base}/v1/facts/query", token, {"query": "Who wrote Hamlet?", "waitSeconds": 0}
    )
    assert status == 202, fact
    status, search = _call("POST", f"{base}/v1/arxiv/search", token, {"query": "testing"})
    assert status == 202, search
    fact_url, search_url = f"{base}/v1/facts/runs/{fact['runId']}", f"{base}/v1/arxiv/runs/{search['runId']}"
    assert _call("GET", fact_url, token)[1]["status"] == "running"

    back = _kill_the_worker(run_process, log_path)
    fact_now, search_now = _finished(
        base, token, fact_url, search_url, within=RECOVERY_BOUND_SECONDS, log_path=log_path
    )
    ended = time.monotonic()

    # Both ended by their deadline (plus the local answer and a poll), well within the bound.
    assert ended - submitted <= SLOW_DEADLINE + 3, ended - submitted
    assert ended - back < RECOVERY_BOUND_SECONDS
    # Nothing stored answers "Who wrote Hamlet?": degraded, with no answer (#26), never "succeeded".
    assert (fact_now["status"], fact_now["degraded"], fact_now["results"]) == ("degraded", True, []), fact_now
    assert fact_now["degradedReason"] == (
        "Wikidata search failed: the run's deadline passed (FACTS_RUN_DEADLINE_SECONDS=20 s from submission)"
    )
    # arXiv's connection lock, held by the killed request until its TTL, is not freed by the deadline.
    assert (search_now["status"], search_now["error"]["details"]["executions"]) == ("rate_limited", 2)
    assert search_now["error"]["message"].startswith(
        "[brAInwav] 'arxiv' allows one connection at a time and it is in use"
    )
    status, fact_row = _call("GET", f"{base}/api/fact-runs/{fact['runId']}/", token)
    assert (status, fact_row["executions"]) == (200, 2)
