"""Fault test: the embedded Redis, then Postgres, are frozen (SIGSTOP) for 10 s under a running CortexWeb.

While one is frozen, API calls and pages answer 503 with ``Retry-After`` in the error shape within
the configured timeouts and ``/readyz`` says not ready; after SIGCONT everything works again and the
writes refused during the stall left nothing behind.

The test session's own servers are not touched: CortexWeb runs here as ``make run`` runs it, as
subprocesses (uvicorn and a Celery worker) on embedded servers of a data directory of their own
(``<CORTEX_DATA_DIR>/faults``, kept between runs so only the first one pays for initdb). Frozen
processes are always continued, whatever the test's outcome.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest
from django.conf import settings

from cortexweb.embedded import EmbeddedServices

STALL_SECONDS = 10.0
# The configured timeouts of the servers under test (the variables the README documents).
TIMEOUTS = {
    "DATABASE_CONNECT_TIMEOUT": "2",
    "DATABASE_STATEMENT_TIMEOUT": "10",
    "REDIS_SOCKET_CONNECT_TIMEOUT": "2",
    "REDIS_SOCKET_TIMEOUT": "2",
    "CORTEX_READYZ_CELERY_TIMEOUT": "1",
}
# Every answer during a stall arrives within its timeout (2 s), plus readyz's worker ping (1 s),
# plus the request's own work on a loaded two-core machine.
ANSWER_BOUND_SECONDS = 4.5
RECOVERY_BOUND_SECONDS = 60.0
RUN_PATH = "/v1/facts/runs/00000000-0000-0000-0000-000000000000"

SERVER_SCRIPT = """
import os, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cortexweb.settings")
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from apps.core.services import api_token_create
_, raw = api_token_create(name="faults", scopes=["admin"])
token_file = sys.argv[2]
with open(token_file + ".tmp", "w") as handle:
    handle.write(raw)
os.replace(token_file + ".tmp", token_file)
import uvicorn
uvicorn.run("cortexweb.asgi:application", host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            lifespan="on")
"""


@dataclass
class Answer:
    status: int
    headers: httpx.Headers
    text: str
    seconds: float

    def json(self) -> dict:
        return json.loads(self.text)


class Cortex:
    """CortexWeb (web + worker) on its own embedded Postgres and Redis."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.embedded = EmbeddedServices(data_dir)
        self.processes: list[subprocess.Popen] = []
        self.frozen: list[psutil.Process] = []
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = ""

    def environment(self) -> dict[str, str]:
        closed = "http://127.0.0.1:9"  # every upstream: nothing listens, nothing leaves the machine
        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/tmp"),
            "CORTEX_DATA_DIR": str(self.data_dir),
            "LOG_LEVEL": "WARNING",
            "WIKIDATA_MCP_URL": f"{closed}/mcp/",
            "WIKIDATA_API_URL": closed,
            "WIKIDATA_VECTOR_URL": closed,
            "WIKIDATA_SPARQL_URL": closed,
            "ARXIV_API_URL": closed,
            **TIMEOUTS,
        }

    def _spawn(self, name: str, command: list[str]) -> None:
        log = open(self.data_dir / f"{name}.log", "wb")  # noqa: SIM115 - the child keeps its own copy
        process = subprocess.Popen(
            command,
            cwd=settings.BASE_DIR,
            env=self.environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C of the test session reaches it through the fixture only
        )
        log.close()
        self.processes.append(process)

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.thaw_leftovers()
        token_file = self.data_dir / "token"
        token_file.unlink(missing_ok=True)
        self._spawn("web", [sys.executable, "-c", SERVER_SCRIPT, str(self.port), str(token_file)])
        self._wait_for(lambda: self.get("/healthz").status == 200, 180, "the web server")
        self.token = token_file.read_text().strip()
        token_file.unlink()
        self._spawn(
            "worker",
            [
                sys.executable, "-m", "celery", "-A", "cortexweb", "worker", "--pool", "threads",
                "--concurrency", "2", "--queues", ",".join(settings.CELERY_WORKER_QUEUES),
                "--without-gossip", "--without-mingle", "--loglevel", "WARNING",
                "--hostname", f"faults-{os.getpid()}@%h",
            ],
        )  # fmt: skip
        self.wait_until_ready()

    def wait_until_ready(self) -> float:
        started = time.monotonic()
        self._wait_for(lambda: self.get("/readyz").status == 200, RECOVERY_BOUND_SECONDS, "readiness")
        return time.monotonic() - started

    def _wait_for(self, condition, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for process in self.processes:
                assert process.poll() is None, f"a CortexWeb process exited:\n{self.logs()}"
            with contextlib.suppress(httpx.HTTPError):
                if condition():
                    return
            time.sleep(0.25)
        raise AssertionError(f"{what} did not come up within {seconds} s:\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in self.data_dir.glob("*.log")
        )

    def request(self, method: str, path: str, **kwargs) -> Answer:
        headers = (
            {"Authorization": f"Bearer {self.token}"}
            if self.token and path.startswith(("/v1/", "/api/"))
            else {}
        )
        started = time.monotonic()
        response = httpx.request(method, self.url + path, headers=headers, timeout=30, **kwargs)
        return Answer(response.status_code, response.headers, response.text, time.monotonic() - started)

    def get(self, path: str) -> Answer:
        return self.request("GET", path)

    # -- freezing ---------------------------------------------------------------------------

    def _server_processes(self, which: str) -> list[psutil.Process]:
        status = self.embedded.status()
        pid = status["postgres_pid"] if which == "postgres" else status["redis_pid"]
        assert pid, f"the embedded {which} of {self.data_dir} is not running"
        parent = psutil.Process(int(pid))
        return [parent, *parent.children(recursive=True)]

    @contextlib.contextmanager
    def frozen_server(self, which: str) -> Iterator[None]:
        """SIGSTOP the server (Postgres: the postmaster and every backend) for the block, and
        SIGCONT it afterwards whatever happens."""
        processes = self._server_processes(which)
        try:
            for process in processes:
                process.send_signal(signal.SIGSTOP)
                self.frozen.append(process)
            yield
        finally:
            self.thaw()

    def thaw(self) -> None:
        while self.frozen:
            with contextlib.suppress(psutil.Error):
                self.frozen.pop().send_signal(signal.SIGCONT)

    def thaw_leftovers(self) -> None:
        """A session killed mid-test (kill -9) leaves its servers stopped: continue them first."""
        status = self.embedded.status()
        for pid in (status["postgres_pid"], status["redis_pid"]):
            with contextlib.suppress(psutil.Error, TypeError, ValueError):
                parent = psutil.Process(int(pid))
                for process in [parent, *parent.children(recursive=True)]:
                    process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        self.thaw()
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        # Both held leases; a process killed above could not release its own.
        self.embedded.stop()


@pytest.fixture(scope="module")
def cortex() -> Iterator[Cortex]:
    server = Cortex(Path(settings.CORTEX_DATA_DIR) / "faults")
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _error(answer: Answer) -> dict:
    return answer.json()["error"]


def _outage(dependency: str) -> dict:
    return {
        "code": "service_unavailable",
        "message": f"The {dependency} is not answering; retry in 5 s.",
        "details": {"dependency": dependency, "retryAfter": 5},
    }


def _connector(slug: str) -> dict:
    return {
        "slug": slug,
        "name": slug,
        "version": "1.0.0",
        "transport": "native",
        "endpoint": "https://example.org",
    }


def _slugs(which: str) -> tuple[str, str]:
    """Connector slugs of this run (the data directory, and its rows, outlive the session)."""
    run = f"{os.getpid()}-{int(time.time())}"
    return f"during-{which}-{run}", f"after-{which}-{run}"


def _during_stall(cortex: Cortex, which: str, slug: str) -> dict[str, Answer]:
    """Freeze ``which`` for STALL_SECONDS; the calls run together at its start. Their answers."""
    calls = {
        "v1": lambda: cortex.get(RUN_PATH),
        "api-list": lambda: cortex.get("/api/connectors/"),
        "api-write": lambda: cortex.request("POST", "/api/connectors/", json=_connector(slug)),
        "readyz": lambda: cortex.get("/readyz"),
        "page": lambda: cortex.get("/connectors"),
    }
    with cortex.frozen_server(which), ThreadPoolExecutor(len(calls)) as pool:
        frozen_at = time.monotonic()
        futures = {name: pool.submit(call) for name, call in calls.items()}
        answers = {name: future.result(timeout=60) for name, future in futures.items()}
        time.sleep(max(0.0, STALL_SECONDS - (time.monotonic() - frozen_at)))
    return answers


def _assert_recovered(cortex: Cortex, refused_slug: str, created_slug: str) -> None:
    recovery = cortex.wait_until_ready()
    assert recovery < RECOVERY_BOUND_SECONDS
    run = cortex.get(RUN_PATH)  # authenticated (Postgres), counted (Redis), looked up (Postgres)
    assert (run.status, _error(run)["code"]) == (404, "not_found"), run.text
    created = cortex.request("POST", "/api/connectors/", json=_connector(created_slug))
    assert created.status == 201, created.text
    assert cortex.get("/connectors").status == 200
    # The write refused during the stall left nothing; the one after it exactly one row.
    assert cortex.get(f"/api/connectors/{refused_slug}/").status == 404
    slugs = [row["slug"] for row in cortex.get("/api/connectors/?limit=1000").json()["results"]]
    assert slugs.count(created_slug) == 1 and refused_slug not in slugs


def test_a_frozen_redis_gets_503s_and_everything_works_after_it_continues(cortex: Cortex) -> None:
    refused, created = _slugs("redis")
    answers = _during_stall(cortex, "redis", refused)
    for name in ("v1", "api-list", "api-write"):  # refused at the token's limiter, before any work
        answer = answers[name]
        assert (answer.status, answer.headers.get("Retry-After")) == (503, "5"), (name, answer.text)
        assert _error(answer) == _outage("Redis server"), name
    readyz = answers["readyz"]
    assert readyz.status == 503
    assert readyz.json()["failed"] == ["celery", "redis"]
    assert readyz.json()["checks"]["redis"]["error"] == "TimeoutError: Timeout reading from socket"
    assert answers["page"].status == 200  # the catalogue page reads Postgres only
    for name, answer in answers.items():
        assert answer.seconds < ANSWER_BOUND_SECONDS, (name, answer.seconds)
    _assert_recovered(cortex, refused, created)


def test_a_frozen_postgres_gets_503s_and_everything_works_after_it_continues(cortex: Cortex) -> None:
    refused, created = _slugs("postgres")
    answers = _during_stall(cortex, "postgres", refused)
    for name in ("v1", "api-list", "api-write"):
        answer = answers[name]
        assert (answer.status, answer.headers.get("Retry-After")) == (503, "5"), (name, answer.text)
        assert _error(answer) == _outage("database"), name
    readyz = answers["readyz"]
    assert readyz.status == 503
    assert readyz.json()["failed"] == ["postgres"]
    assert readyz.json()["checks"]["postgres"]["error"].startswith(
        "OperationalError: connection timeout expired"
    )
    page = answers["page"]
    assert (page.status, page.headers.get("Retry-After")) == (503, "5")
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert _outage("database")["message"] in page.text
    for name, answer in answers.items():
        assert answer.seconds < ANSWER_BOUND_SECONDS, (name, answer.seconds)
    _assert_recovered(cortex, refused, created)
