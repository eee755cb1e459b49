"""The whole stack under a bounded load: ``locust`` headless against one and two web hosts.

A web host is a separate uvicorn process serving ``cortexweb.asgi:application`` with the command line
``manage.py run`` starts its web server with (taken from the command itself, so the two cannot
drift), on a loopback port of its own; one Celery worker runs beside them as ``manage.py run``
starts it (``/readyz``, the balancer's health check, needs a worker to answer). The hosts sit behind
HAProxy on loopback with ``deploy/haproxy.cfg`` (the balancer the deployment test proves: round
robin, ``/readyz`` checked every second), its frontend bound to a loopback port and its servers
replaced by the hosts; with one host the same HAProxy has one server, so both cases pay the same hop.
Postgres and Redis are the embedded ones of ``CORTEX_DATA_DIR``, shared with this process.

For each number of hosts (``BENCH_SCALE_LOAD_HOSTS``, default ``1,2``) and of clients
(``BENCH_SCALE_LOAD_CLIENTS``, default ``10,50``), ``locust`` runs as a subprocess (gevent stays
out of this process) for ``BENCH_SCALE_LOAD_SECONDS`` (default 20 s): closed-loop users with no
think time, each call one of knowledge search, memory ask and an MCP ``tools/call`` of
``knowledge.search`` at random (``bench/scale/locustfile.py`` says what counts as a failure). Its CSV
stats give requests/s, p50 and p95 per call (locust keeps response times in buckets: exact below
100 ms, to 10 ms up to 1 s, to 100 ms above) from the moment every user has started.

Setup: one API token (read, write), ``BENCH_SCALE_LOAD_MEMORIES`` (default 300) memories told to it
through ``memory_tell`` (the memory bench's generated facts, each with its question), the default
knowledge packs and connector manifest loaded when absent, for good, as ``make run`` loads them on
first start (``bench.mcp`` does the same). The per-token request budget is off in the web hosts
(``CORTEX_TOKEN_REQUESTS_PER_MINUTE=0``): one token making thousands of calls a minute is the load,
not what is measured. At the end the token, its memories and their accesses, its tool calls and
the events of the run are deleted, and every process started here is stopped, on failure and
Ctrl-C too. Whole part at the defaults: about 4 × 20 s of load plus about a minute of start-up.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from email.message import Message
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from apps.connectors.models import ToolCall
from apps.core.default_data import default_data_load
from apps.core.logging import reset_correlation_id, set_correlation_id
from apps.core.management.commands.run import Command as RunCommand
from apps.core.management.commands.run import _die_with_parent
from apps.core.models import ApiToken, Event
from apps.core.services import api_token_create
from apps.memory.models import Memory, MemoryAccess
from apps.memory.services import Scope, TellItem, memory_tell
from bench import memory as memory_bench
from bench.mcp import _unmigrated
from bench.scale.table import ms, print_table

HOSTS = tuple(int(n) for n in os.environ.get("BENCH_SCALE_LOAD_HOSTS", "1,2").split(","))
CLIENTS = tuple(int(n) for n in os.environ.get("BENCH_SCALE_LOAD_CLIENTS", "10,50").split(","))
SECONDS = int(os.environ.get("BENCH_SCALE_LOAD_SECONDS", "20"))
MEMORIES = int(os.environ.get("BENCH_SCALE_LOAD_MEMORIES", "300"))
LOOPBACK = "127.0.0.1"
LOCUSTFILE = Path(__file__).with_name("locustfile.py")
HAPROXY = "/usr/sbin/haproxy"
HAPROXY_CONFIG = settings.BASE_DIR / "deploy" / "haproxy.cfg"
READY_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 15.0
# The calls of the locustfile, in the order of the table.
ENDPOINTS = (
    ("POST /v1/knowledge/search", "knowledge search (REST)"),
    ("POST /v1/memory/ask", "memory ask (REST)"),
    ("MCP tools/call knowledge.search", "MCP tools/call knowledge.search"),
)
SEED = 27
# What the users search for: queries the default knowledge packs answer.
QUERIES = (
    "password hashing",
    "SQL injection",
    "cross-site scripting",
    "rate limiting",
    "TLS certificate validation",
    "secrets in source code",
)


class _Processes:
    """Every process this part starts, each in its own process group, its output in a log file;
    ``stop`` ends them all, newest first, whatever state they are in."""

    def __init__(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-scale-load-"))
        self.started: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with (self.workdir / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                command,
                cwd=settings.BASE_DIR,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # stopped as a group; Ctrl-C reaches this process only
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads here; dies with the bench
            )
        self.started.append((name, process))
        return process

    def log_lines(self, name: str) -> list[str]:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace").splitlines() if path.exists() else []

    def log_tail(self, name: str, lines: int = 30) -> str:
        return "\n".join(self.log_lines(name)[-lines:])

    def alive(self, name: str) -> bool:
        return any(n == name and process.poll() is None for n, process in self.started)

    def stop(self, name: str | None = None) -> None:
        for process_name, process in reversed(self.started):
            if name is not None and process_name != name:
                continue
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(STOP_TIMEOUT_SECONDS)
                except subprocess.TimeoutExpired:
                    pass
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the group's stragglers, or a stuck leader
            process.wait()
        self.started = [(n, p) for n, p in self.started if name is not None and n != name]

    def remove(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def _get(url: str, timeout: float = 5) -> tuple[int, Message]:
    """Status and headers (looked up case-insensitively: HAProxy sends its header names lowercased)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.headers


def _post_json(url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={**headers, "Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _wait_ready(processes: _Processes, name: str, url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if not processes.alive(name):
            raise RuntimeError(f"{name} exited while starting:\n{processes.log_tail(name)}")
        with contextlib.suppress(OSError):
            if _get(f"{url}/readyz")[0] == 200:
                return
        time.sleep(0.5)
    raise RuntimeError(
        f"{name} was not ready after {READY_TIMEOUT_SECONDS:.0f} s:\n{processes.log_tail(name)}"
    )


def _run_options() -> Any:
    """``manage.py run``'s options at their defaults (its environment variables included)."""
    return RunCommand().create_parser("manage.py", "run").parse_args([])


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "CORTEX_TOKEN_REQUESTS_PER_MINUTE": "0"}


def _start_worker(processes: _Processes) -> None:
    options = _run_options()
    command = RunCommand()._child_commands(LOOPBACK, 0, options.concurrency)["worker"]
    processes.start("worker", command, _child_env())


def _start_web(processes: _Processes, name: str, raw_token: str, questions: list[str]) -> str:
    port = _free_port()
    command = RunCommand()._child_commands(LOOPBACK, port, _run_options().concurrency)["web"]
    processes.start(name, command, _child_env())
    url = f"http://{LOOPBACK}:{port}"
    _wait_ready(processes, name, url)
    _warm_up(url, raw_token, questions)
    return url


def _warm_up(url: str, raw_token: str, questions: list[str]) -> None:
    """A few calls of each kind straight to a new host (the embedding model loads on the first ask),
    each checked: a load whose every call fails would measure nothing."""
    headers = {"Authorization": f"Bearer {raw_token}"}
    for question in questions[:3]:
        answer = _post_json(f"{url}/v1/memory/ask", {"question": question}, headers)
        if not answer.get("memories"):
            raise RuntimeError(f"memory ask found no memories for {question!r}: {answer}")
    for query in QUERIES:
        answer = _post_json(f"{url}/v1/knowledge/search", {"query": query, "limit": 10}, headers)
        if not answer.get("results"):
            raise RuntimeError(f"knowledge search found nothing for {query!r}: the default packs are missing")


def _start_balancer(processes: _Processes, hosts: dict[str, str]) -> tuple[str, str]:
    """HAProxy on a loopback port with ``deploy/haproxy.cfg``, its servers replaced by ``hosts``;
    returns its process name and its URL once it has routed to every host."""
    config = HAPROXY_CONFIG.read_text()
    port = _free_port()
    shape = ("bind :8000", "    server web1 web1:8000 check\n    server web2 web2:8000 check\n")
    if not all(part in config for part in shape):
        raise RuntimeError(f"{HAPROXY_CONFIG} no longer has the frontend and servers this bench replaces")
    servers = "".join(
        f"    server {name} {url.removeprefix('http://')} check\n" for name, url in hosts.items()
    )
    config = config.replace(shape[0], f"bind {LOOPBACK}:{port}").replace(shape[1], servers)
    name = f"haproxy-{len(hosts)}"
    path = processes.workdir / f"{name}.cfg"
    path.write_text(config)
    processes.start(name, [HAPROXY, "-db", "-f", str(path)], {"PATH": os.environ.get("PATH", "")})
    url = f"http://{LOOPBACK}:{port}"
    seen: set[str] = set()
    deadline = time.monotonic() + 30
    while seen != set(hosts) and time.monotonic() < deadline:
        if not processes.alive(name):
            raise RuntimeError(f"HAProxy exited:\n{processes.log_tail(name)}")
        with contextlib.suppress(OSError):
            status, headers = _get(f"{url}/healthz")
            if status == 200:
                seen.add(headers.get("X-Served-By", ""))
        time.sleep(0.2)
    if seen != set(hosts):
        raise RuntimeError(f"HAProxy routed to {sorted(seen)} only, not {sorted(hosts)}")
    return name, url


def _locust(
    processes: _Processes, url: str, hosts: int, clients: int, env: dict[str, str]
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """One locust run: its stats rows by name, and its failure messages (most frequent first)."""
    prefix = processes.workdir / f"locust-{hosts}-hosts-{clients}-clients"
    command = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        "--headless",
        "--users",
        str(clients),
        "--spawn-rate",
        str(clients),
        "--run-time",
        f"{SECONDS}s",
        "--reset-stats",  # figures from full concurrency on: initialize calls and ramp-up excluded
        "--host",
        url,
        "--csv",
        str(prefix),
        "--only-summary",
        "--exit-code-on-error",
        "0",
        "--loglevel",
        "WARNING",
    ]
    name = f"locust-{hosts}-{clients}"
    process = processes.start(name, command, env)
    try:
        code = process.wait(SECONDS + 60)
    except subprocess.TimeoutExpired:
        processes.stop(name)
        raise RuntimeError(f"locust did not stop {SECONDS + 60} s after starting") from None
    processes.stop(name)
    if code != 0:
        raise RuntimeError(f"locust exited with {code}:\n{processes.log_tail(name)}")
    with Path(f"{prefix}_stats.csv").open(newline="") as stats:
        rows = {row["Name"]: row for row in csv.DictReader(stats)}
    with Path(f"{prefix}_failures.csv").open(newline="") as failures:
        failed = sorted(csv.DictReader(failures), key=lambda row: -int(row["Occurrences"]))
    messages = [f"{row['Occurrences']} × {row['Name']}: {row['Error']}" for row in failed]
    # A load generator short of CPU measures itself: locust says so in its log.
    messages += [line.strip() for line in processes.log_lines(name) if "CPU usage" in line][:1]
    return rows, messages


def _rows(
    hosts: int, clients: int, stats: dict[str, dict[str, str]], load: float
) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    total_rate, total_failed, total_count = 0.0, 0, 0
    for name, label in ENDPOINTS:
        row = stats.get(name)
        if row is None or not int(row["Request Count"]):
            rows.append((hosts, clients, label, "0", "—", "—", "no calls", f"{load:.2f}"))
            continue
        count, failed, rate = int(row["Request Count"]), int(row["Failure Count"]), float(row["Requests/s"])
        total_rate, total_failed, total_count = total_rate + rate, total_failed + failed, total_count + count
        p50, p95 = float(row["50%"]) / 1000, float(row["95%"]) / 1000
        rows.append(
            (hosts, clients, label, f"{rate:.1f}", ms(p50), ms(p95), f"{failed} of {count}", f"{load:.2f}")
        )
    rows.append(
        (
            hosts,
            clients,
            "all three",
            f"{total_rate:.1f}",
            "—",
            "—",
            f"{total_failed} of {total_count}",
            f"{load:.2f}",
        )
    )
    return rows


def _tell(token: ApiToken) -> list[str]:
    """``MEMORIES`` memories told to ``token``; returns the questions they answer."""
    facts = memory_bench._facts(MEMORIES, random.Random(SEED))
    for start in range(0, len(facts), 100):
        memory_tell(
            scope=Scope(token=token),
            items=[TellItem(content=statement, domain="ops") for statement, _ in facts[start : start + 100]],
        )
    return [question for _, question in facts]


def run() -> None:
    if _unmigrated():
        print("load: skipped: the database is not migrated (`manage.py migrate` with this CORTEX_DATA_DIR)")
        return
    if not Path(HAPROXY).exists():
        print(f"load: skipped: {HAPROXY} is missing (`apt-get install haproxy`, as .ci/run does)")
        return
    default_data_load()  # make run's first-start data, if absent
    correlation_id = f"bench-scale-load-{uuid.uuid4().hex}"
    correlation = set_correlation_id(correlation_id)
    token, raw_token = api_token_create(
        name=f"bench-scale-load-{uuid.uuid4().hex[:8]}", scopes=["read", "write"]
    )
    processes = _Processes()
    table: list[tuple[object, ...]] = []
    notes: list[str] = []
    try:
        questions = _tell(token)
        told = Memory.objects.filter(token=token).count()
        # Long-lived: release this process's connection while the hosts work on the same database.
        close_old_connections()
        _start_worker(processes)
        locust_env = {
            **os.environ,
            "BENCH_LOAD_TOKEN": raw_token,
            "BENCH_LOAD_CORRELATION_ID": correlation_id,
            "BENCH_LOAD_QUESTIONS": "|".join(questions[:50]),
            "BENCH_LOAD_QUERIES": "|".join(QUERIES),
        }
        web: dict[str, str] = {}
        for hosts in sorted(HOSTS):
            while len(web) < hosts:
                name = f"web{len(web) + 1}"
                web[name] = _start_web(processes, name, raw_token, questions)
            haproxy, balancer = _start_balancer(processes, dict(list(web.items())[:hosts]))
            for clients in sorted(CLIENTS):
                seen = len(processes.log_lines(haproxy))
                stats, messages = _locust(processes, balancer, hosts, clients, locust_env)
                table += _rows(hosts, clients, stats, os.getloadavg()[0])
                # A host whose /readyz failed under the load was out of the rotation for a while.
                messages += [
                    line.split(" : ", 1)[-1]
                    for line in processes.log_lines(haproxy)[seen:]
                    if " is DOWN" in line or " is UP" in line
                ]
                notes += [f"{hosts} host(s), {clients} clients: {message}" for message in messages[:6]]
            processes.stop(haproxy)
    finally:
        processes.stop()
        processes.remove()
        reset_correlation_id(correlation)
        close_old_connections()
        ToolCall.objects.filter(token=token).delete()
        MemoryAccess.objects.filter(memory__token=token).delete()
        Memory.objects.filter(token=token).delete()
        Event.objects.filter(correlation_id=correlation_id).delete()
        token.delete()
    cores = os.cpu_count() or 0
    print_table(
        "scale: load (locust, loopback)",
        ["web hosts", "clients", "call", "req/s", "p50", "p95", "failures", "load avg (1 min) after"],
        table,
        note=(
            f"locust {SECONDS} s per row group, closed-loop users with no think time, each call one of "
            f"the three at random; {told} memories in the token's scope, the default knowledge packs; "
            "each web host one uvicorn process as `manage.py run` starts it, behind HAProxy "
            "(`deploy/haproxy.cfg`, one server for one host) on loopback, one Celery worker, the "
            f"embedded Postgres and Redis. This machine has {cores} cores: locust, HAProxy, the web "
            "hosts, the worker and Postgres share them, so a second web host adds processes, not "
            "cores, and the load average says how oversubscribed each run was."
            + "".join(f"\n- {note}" for note in notes)
        ),
    )
