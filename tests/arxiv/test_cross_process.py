"""arXiv's terms hold across processes: three OS processes, each a web+worker host, share one limit."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator

import pytest
from django.conf import settings as django_settings
from django.db import connection

from apps.arxiv.services import arxiv_limiter
from tests.arxiv.api_client_process import run_host
from tests.arxiv.replay_server import ReplayArxiv

SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def arxiv(settings) -> Iterator[ReplayArxiv]:
    # A 50 ms answer makes overlapping connections visible if the lock ever failed.
    server = ReplayArxiv(delay=0.05).start()
    settings.ARXIV_API_URL = server.url
    arxiv_limiter().reset()
    yield server
    server.stop()
    arxiv_limiter().reset()


def _host_environment(server: ReplayArxiv, interval: float) -> dict[str, str]:
    database = connection.settings_dict
    socket_dir = database["HOST"] or database["OPTIONS"]["host"]
    return {
        # The test database and Redis as external services; the secrets the parent's settings exported.
        "DATABASE_URL": f"postgres://{database['USER']}@/{database['NAME']}?host={socket_dir}",
        "REDIS_URL": django_settings.REDIS_URL,
        "DJANGO_SECRET_KEY": os.environ["DJANGO_SECRET_KEY"],
        "CORTEX_SIGNING_KEY": os.environ["CORTEX_SIGNING_KEY"],
        "FEATURE_ARXIV": "true",
        # The replay listens on loopback, which the outbound rule refuses unless allowed.
        "CORTEX_OUTBOUND_ALLOW_NETWORKS": ",".join(django_settings.CORTEX_OUTBOUND_ALLOW_NETWORKS),
        "ARXIV_API_URL": server.url,
        "ARXIV_MIN_INTERVAL_SECONDS": str(interval),
        "ARXIV_WAIT_SECONDS": "120",
        "ARXIV_RUN_DEADLINE_SECONDS": "120",
        "LOG_LEVEL": "WARNING",
    }


def _run_hosts(server: ReplayArxiv, token: str, interval: float, queries_per_host: list[list[str]]) -> list:
    results = SPAWN.Queue()
    env = _host_environment(server, interval)
    hosts = [
        SPAWN.Process(target=run_host, args=(env, token, queries, results)) for queries in queries_per_host
    ]
    for host in hosts:
        host.start()
    answers = [results.get(timeout=120) for _ in range(sum(map(len, queries_per_host)))]
    for host in hosts:
        host.join(timeout=60)
        assert host.exitcode == 0
    return answers


@pytest.mark.django_db(transaction=True)
def test_three_processes_share_one_spacing_and_one_connection(arxiv, make_token, settings) -> None:
    settings.ARXIV_MIN_INTERVAL_SECONDS = 0.5  # for any worker of this process that takes a task
    _, token = make_token("read", "upstream")
    queries = [[f"host{host} topic{index}" for index in range(5)] for host in range(3)]
    answers = _run_hosts(arxiv, token, 0.5, queries)

    assert sorted((query, status, state) for _, query, status, state in answers) == sorted(
        (query, 200, "succeeded") for host_queries in queries for query in host_queries
    )
    assert len(arxiv.arrivals) == 15
    # Spacing at arXiv's side; 10 ms allows for the jitter between a granted slot and its arrival.
    assert min(arxiv.gaps()) >= 0.5 - 0.01, arxiv.gaps()
    assert arxiv.max_open_connections == 1


@pytest.mark.django_db(transaction=True)
def test_the_real_three_second_interval(arxiv, make_token, settings) -> None:
    settings.ARXIV_MIN_INTERVAL_SECONDS = 3.0
    _, token = make_token("read", "upstream")
    answers = _run_hosts(arxiv, token, 3.0, [["first paper"], ["second paper"], ["third paper"]])
    assert sorted(status for _, _, status, _ in answers) == [200, 200, 200]
    assert len(arxiv.arrivals) == 3
    assert min(arxiv.gaps()) >= 3.0 - 0.01, arxiv.gaps()
