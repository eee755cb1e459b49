"""CortexWeb past one machine: db, cache, two web hosts behind HAProxy, two worker hosts (one with
beat) and a replay host, each a Linux network namespace with its own address (tests/deploy/cluster.py).

Everything goes through the balancer's address unless a test is about one host. The tests run in
file order on one cluster: the flows first, then arXiv's spacing across worker hosts, then the
faults (a worker host killed mid-run, a web host killed under load, Redis and Postgres restarted).
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
import redis

from tests.deploy.cluster import Cluster, namespaces_available

UNAVAILABLE = namespaces_available()
pytestmark = [
    pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or ""),
    # The first test also starts the cluster: about two minutes on a loaded two-core machine.
    pytest.mark.timeout(600),
]

logger = logging.getLogger(__name__)
FACT_QUESTION = "What is Douglas Adams an instance of?"
FACT_ANSWER = "Douglas Adams — instance of — human"
EVENTS_CHANNEL = "cortex:events"  # the channel docs/operations.md tells agents to subscribe to


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    deployed = Cluster()
    request.addfinalizer(deployed.stop)  # registered first: runs even when start() fails half-way
    deployed.start()
    yield deployed


@pytest.fixture(scope="module")
def token(cluster: Cluster) -> str:
    made = cluster.manage(
        "web1",
        "tokens",
        "create",
        "--name",
        "deploy-test",
        "--scopes",
        "read,write,upstream,verify",
        "--json",
    )
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout.strip().splitlines()[-1])["token"]


def call(
    url: str, token: str | None = None, body: Any = None, *, method: str | None = None, timeout: float = 40
) -> tuple[int, dict[str, str], Any]:
    """One request; (status, headers, JSON body or text). Connection failures raise."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, headers=headers, method=method or ("POST" if data else "GET")
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, answer_headers, raw = response.status, _lower(response.headers), response.read()
    except urllib.error.HTTPError as error:
        status, answer_headers, raw = error.code, _lower(error.headers), error.read()
    try:
        return status, answer_headers, json.loads(raw)
    except ValueError:
        return status, answer_headers, raw.decode(errors="replace")


def _lower(headers: Any) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def replay_log(cluster: Cluster) -> dict[str, Any]:
    return call(cluster.replay_control)[2]


def replay_control(cluster: Cluster, path: str, body: dict[str, Any]) -> None:
    status, _, _ = call(f"{cluster.replay_control}{path}", body=body)
    assert status == 200


def database(cluster: Cluster) -> psycopg.Connection[Any]:
    return psycopg.connect(cluster.database_url, autocommit=True, connect_timeout=5)


# --- item 3: deploy_check ---------------------------------------------------------------------


def test_deploy_check_names_a_wrong_redis_password_and_refuses_to_pass(cluster: Cluster) -> None:
    environment = cluster.app_environment("web1")
    environment["REDIS_URL"] = f"redis://:wrong-{cluster.redis_password}@{cluster.address('cache')}:6379/0"
    checked = cluster.manage("web1", "deploy_check", env=environment)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert lines[:3] == [
        f"services: ok (Postgres {cluster.address('db')}:5432/cortexweb, Redis set)",
        lines[1],
        "migrations: ok (every migration applied)",
    ]
    assert lines[1].startswith("postgres: ok (Postgres 18.") and "pgvector 0." in lines[1], lines[1]
    assert lines[3].startswith("redis: FAILED: "), lines
    assert "deploy_check failed: redis; this host must not serve yet." in checked.stderr


# --- (1) the core flows ------------------------------------------------------------------------


def test_the_service_map_is_the_same_signed_document_from_both_web_hosts(cluster: Cluster) -> None:
    answers = [call(f"{cluster.web_url(host)}/v1/connectors/service-map") for host in ("web1", "web2")]
    assert [status for status, _, _ in answers] == [200, 200]
    (_, first_headers, first), (_, second_headers, second) = answers
    assert first == second
    assert first_headers["etag"] == second_headers["etag"]
    through_lb = call(f"{cluster.lb_url}/v1/connectors/service-map")
    assert through_lb[0] == 200 and through_lb[2] == first


def test_a_fact_run_an_arxiv_search_tell_ask_and_a_verification_through_the_balancer(
    cluster: Cluster, token: str
) -> None:
    lb = cluster.lb_url
    status, _, fact = call(
        f"{lb}/v1/facts/query", token, {"query": FACT_QUESTION, "topK": 5, "waitSeconds": 30}
    )
    assert status == 200, fact
    assert (fact["status"], fact["degraded"], fact["results"][0]["text"]) == ("succeeded", False, FACT_ANSWER)

    status, _, search = call(f"{lb}/v1/arxiv/search", token, {"query": "testing"})
    assert status == 200, search
    assert search["status"] == "succeeded" and len(search["items"]) == 10

    served = set()
    status, headers, told = call(
        f"{lb}/v1/memory/tell",
        token,
        {"content": "The cache host of the deployment runs Redis with a password."},
    )
    assert status == 200 and told["status"] == "stored", told
    served.add(headers["x-served-by"])
    status, headers, asked = call(f"{lb}/v1/memory/ask", token, {"question": "Which host runs Redis?"})
    assert status == 200, asked
    served.add(headers["x-served-by"])
    assert [memory["id"] for memory in asked["memories"]][:1] == [told["id"]]
    assert served == {"web1", "web2"}  # told on one web host, recalled from the other

    claim = "Passwords must be hashed with MD5"
    status, _, verified = call(f"{lb}/v1/knowledge/verify", token, {"claim": claim})
    assert status == 200, verified
    assert verified["claim"] == claim and isinstance(verified["verified"], bool)


def test_an_ontology_proposal_is_staged_through_the_balancer(cluster: Cluster, token: str) -> None:
    target = "https://cortexweb.dev/ontology#CWE89SqlInjection"
    body = {
        "proposal": {
            "action": "amend",
            "target_iri": target,
            "amendment": {"add_alt_terms": ["SQLi deployed"]},
        },
        "agentContext": {"agent_type": "deploy-test"},
    }
    status, _, proposed = call(f"{cluster.lb_url}/ontology-agent/propose", token, body)
    assert status == 200, proposed
    assert proposed["success"] is True
    assert (proposed["proposal"]["action"], proposed["proposal"]["target_iri"]) == ("amend", target)
    assert "SQLi deployed" in proposed["proposal"]["diff"]


def test_an_mcp_session_over_http_spans_both_web_hosts(cluster: Cluster, token: str) -> None:
    url = f"{cluster.lb_url}/mcp"
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "deploy", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "ask", "arguments": {"question": "Which host runs Redis?"}},
        },
    ]
    answers = [call(url, token, message) for message in messages]
    assert [status for status, _, _ in answers] == [200, 202, 200, 200], answers
    assert {headers["x-served-by"] for _, headers, _ in answers} == {"web1", "web2"}
    assert answers[0][2]["result"]["serverInfo"]["name"]
    assert "ask" in {tool["name"] for tool in answers[2][2]["result"]["tools"]}
    result = answers[3][2]["result"]
    assert result["isError"] is False, result
    assert "The cache host of the deployment runs Redis with a password." in json.dumps(result)


# --- (3) arXiv's interval across worker hosts --------------------------------------------------


def test_nine_concurrent_arxiv_searches_from_both_worker_hosts_keep_the_interval(
    cluster: Cluster, token: str
) -> None:
    replay_control(cluster, "/reset", {})
    queries = [f"deployment spacing {index}" for index in range(9)]
    with ThreadPoolExecutor(max_workers=9) as pool:
        answers = list(
            pool.map(
                lambda query: call(f"{cluster.lb_url}/v1/arxiv/search", token, {"query": query}), queries
            )
        )
    assert [(status, body["status"]) for status, _, body in answers] == [(200, "succeeded")] * 9, answers
    log = replay_log(cluster)
    arrivals = sorted(log["arxiv"], key=lambda arrival: arrival["at"])
    assert len(arrivals) == 9
    assert {arrival["client"] for arrival in arrivals} == {cluster.address("work1"), cluster.address("work2")}
    gaps = [later["at"] - earlier["at"] for earlier, later in itertools.pairwise(arrivals)]
    # Measured at the replay host; 10 ms allows for the jitter between a granted slot and its arrival.
    assert min(gaps) >= cluster.arxiv_interval - 0.01, gaps
    logger.warning("arXiv gaps at the replay host: min %.3f s, max %.3f s", min(gaps), max(gaps))
    assert log["arxivMaxOpenConnections"] == 1


# --- (2) a worker host killed mid-run ----------------------------------------------------------


def _hung_on_work2(cluster: Cluster, token: str) -> str:
    """Submit fact runs until one is mid-request on work2 (the replay holds work2's vector search)."""
    work2 = cluster.address("work2")
    for attempt in range(8):
        status, _, submitted = call(
            f"{cluster.lb_url}/v1/facts/query",
            token,
            {"query": f"{FACT_QUESTION} ({attempt})", "waitSeconds": 0},
        )
        assert status == 202, submitted
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            held = [
                r
                for r in replay_log(cluster)["wikidata"]
                if r["client"] == work2 and r["path"] == "/item/query/"
            ]
            if held:
                return submitted["runId"]
            if call(f"{cluster.lb_url}/v1/facts/runs/{submitted['runId']}", token)[0] == 200:
                break  # work1 took it and finished: submit another
            time.sleep(0.1)
    raise AssertionError("no fact run reached work2 in 8 attempts")


def test_a_worker_host_killed_mid_run_the_run_finishes_on_the_other(cluster: Cluster, token: str) -> None:
    replay_control(cluster, "/reset", {})
    replay_control(
        cluster, "/hang", {"client": cluster.address("work2"), "path": "/item/query/", "seconds": 300}
    )
    run_id = _hung_on_work2(cluster, token)
    killed = cluster.kill_host("work2")
    assert killed
    replay_control(cluster, "/hang", {})

    deadline = time.monotonic() + 40  # STALE (4 s) + SWEEP (2 s) + the run itself, with room for load
    while True:
        status, _, run = call(f"{cluster.lb_url}/v1/facts/runs/{run_id}", token)
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert status == 200, (run, cluster.log("work1-worker"))
    assert (run["status"], run["results"][0]["text"]) == ("succeeded", FACT_ANSWER)
    vector_clients = [r["client"] for r in replay_log(cluster)["wikidata"] if r["path"] == "/item/query/"]
    # Earlier attempts that work1 finished come first; after work2's held request, work1 took the run over.
    held_at = vector_clients.index(cluster.address("work2"))
    assert cluster.address("work1") in vector_clients[held_at + 1 :], vector_clients
    with database(cluster) as connection:
        running = connection.execute(
            "SELECT count(*) FROM wikidata_factrun WHERE status = 'running'"
        ).fetchone()
        facts = connection.execute(
            "SELECT count(*), count(DISTINCT claim_guid) FROM wikidata_fact WHERE run_id = %s", (run_id,)
        ).fetchone()
    assert running == (0,)
    assert facts == (len(run["results"]), len(run["results"]))
    cluster.start_worker("work2")  # back for the tests after this one


# --- (4) a web host killed under a bounded load ------------------------------------------------


def test_a_web_host_killed_under_load_loses_no_acknowledged_write(cluster: Cluster, token: str) -> None:
    clients, duration, kill_after = 10, 8.0, 3.0
    stored: list[str] = []
    failures: list[tuple[float, str]] = []
    lock = threading.Lock()
    began = time.monotonic()

    def client(number: int) -> None:
        for sequence in itertools.count():
            if time.monotonic() - began > duration:
                return
            content = f"Load client {number} wrote note {sequence} while a web host died."
            try:
                status, _, body = call(
                    f"{cluster.lb_url}/v1/memory/tell", token, {"content": content}, timeout=20
                )
            except OSError as error:
                with lock:
                    failures.append((time.monotonic() - began, repr(error)))
                continue
            with lock:
                if status == 200 and body["status"] in ("stored", "reinforced"):
                    stored.append(body["id"])  # reinforced: a near-duplicate's id, which must exist too
                else:
                    failures.append((time.monotonic() - began, f"{status} {body}"))

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(kill_after)
    killed_at = time.monotonic() - began
    cluster.kill_host("web2")
    for thread in threads:
        thread.join()

    # Only the requests in flight on web2 when it died may fail: at most one per client, all at the kill.
    assert len(failures) <= clients, failures
    assert all(killed_at - 0.5 <= at <= killed_at + 5 for at, _ in failures), (killed_at, failures)
    assert len(stored) > 2 * clients
    with database(cluster) as connection:
        found = connection.execute(
            "SELECT count(*) FROM memory_memory WHERE id = ANY(%s::uuid[])", (stored,)
        ).fetchone()
    assert found == (len(set(stored)),)
    logger.warning(
        "web host killed under load: %d acknowledged writes (%d memories), %d failed, all found",
        len(stored),
        len(set(stored)),
        len(failures),
    )
    served = {call(f"{cluster.lb_url}/healthz")[1]["x-served-by"] for _ in range(4)}
    assert served == {"web1"}
    cluster.start_web("web2")
    cluster.wait_lb_backends(2, timeout=90)


# --- (5) Redis restarted, Postgres restarted ---------------------------------------------------


def _until(check: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.25)


def _events_subscriber(cluster: Cluster) -> redis.client.PubSub:
    """Subscribed to the events channel from the runner, as an agent would, once Redis is back."""
    subscriber = redis.Redis.from_url(cluster.redis_url, socket_connect_timeout=5).pubsub()
    subscriber.subscribe(EVENTS_CHANNEL)
    confirmed = subscriber.get_message(timeout=5)
    assert confirmed is not None and confirmed["type"] == "subscribe", confirmed
    return subscriber


def _published(
    subscriber: redis.client.PubSub, expected: dict[str, set[str]]
) -> dict[str, set[tuple[int, str]]]:
    """(id, name) of the events published for each correlation id, until all ``expected`` names are in."""
    published: dict[str, set[tuple[int, str]]] = {correlation: set() for correlation in expected}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
        not names <= {name for _, name in published[correlation]} for correlation, names in expected.items()
    ):
        message = subscriber.get_message(timeout=0.5)
        if message is None or message["type"] != "message":
            continue
        event = json.loads(message["data"])
        if event["correlationId"] in published:
            published[event["correlationId"]].add((event["id"], event["name"]))
    return published


def _events_from_every_host(cluster: Cluster, token: str, label: str) -> dict[str, set[str]]:
    """Make each worker host and each web host emit events; the names expected per correlation id.

    Workers announce the arXiv runs they execute (rounds of 3 searches, until both worker hosts have
    executed one); web hosts the searches they answer from a recent run (until both have answered
    one). The correlation id of each request's events is its ``X-Request-ID``.
    """
    expected: dict[str, set[str]] = {}
    replay_control(cluster, "/reset", {})
    workers = {cluster.address("work1"), cluster.address("work2")}
    for round_ in range(4):
        queries = [f"{label} {round_}.{index}" for index in range(3)]
        with ThreadPoolExecutor(max_workers=len(queries)) as pool:
            answers = list(
                pool.map(lambda q: call(f"{cluster.lb_url}/v1/arxiv/search", token, {"query": q}), queries)
            )
        for status, headers, search in answers:
            assert (status, search["status"]) == (200, "succeeded"), search
            expected[headers["x-request-id"]] = {"arxiv.tool.started", "arxiv.tool.completed"}
        if {arrival["client"] for arrival in replay_log(cluster)["arxiv"]} == workers:
            break
    assert {arrival["client"] for arrival in replay_log(cluster)["arxiv"]} == workers
    served: set[str] = set()
    # Until both web hosts have answered: right after a Redis restart the balancer may still count one
    # down (its /readyz failed twice) until its next check passes, a second later (deploy/haproxy.cfg).
    patience = time.monotonic() + 15
    while served != {"web1", "web2"} and time.monotonic() < patience:
        status, headers, search = call(f"{cluster.lb_url}/v1/arxiv/search", token, {"query": queries[0]})
        assert (status, search["status"]) == (200, "succeeded"), search
        expected[headers["x-request-id"]] = {"arxiv.tool.completed"}  # answered from the recent run
        served.add(headers["x-served-by"])
        time.sleep(0.1)
    assert served == {"web1", "web2"}
    return expected


def test_redis_restarted_web_and_workers_recover_without_a_restart(cluster: Cluster, token: str) -> None:
    # Every host publishes before the restart, so each holds Redis connections the restart breaks.
    _events_from_every_host(cluster, token, "before the redis restart")
    cluster.restart_cache(down_seconds=2)
    assert _until(lambda: call(f"{cluster.lb_url}/readyz")[0] == 200, 30)
    subscriber = _events_subscriber(cluster)
    status, _, told = call(
        f"{cluster.lb_url}/v1/memory/tell", token, {"content": "Told after Redis came back."}
    )
    assert status == 200 and told["status"] == "stored", told

    expected = _events_from_every_host(cluster, token, "after the redis restart")
    published = _published(subscriber, expected)
    subscriber.close()
    lost = {
        correlation: sorted(names - {name for _, name in published[correlation]})
        for correlation, names in expected.items()
        if names - {name for _, name in published[correlation]}
    }
    assert not lost, f"events emitted after the Redis restart never reached the channel: {lost}"
    # The stored record, read through the balancer, is what was published: the same ids, no more.
    for correlation in expected:
        status, _, stored = call(f"{cluster.lb_url}/api/events/?correlation_id={correlation}", token)
        assert status == 200, stored
        assert {(event["id"], event["name"]) for event in stored["results"]} == published[correlation]
    logger.warning(
        "after the Redis restart: %d events from %d requests published and listed",
        len(set().union(*published.values())),
        len(expected),
    )


def test_postgres_restarted_requests_answer_503_meanwhile_then_recover(cluster: Cluster, token: str) -> None:
    cluster.kill_host("db")
    status, _, body = call(f"{cluster.lb_url}/v1/memory/ask", token, {"question": "Which host runs Redis?"})
    # Answered by a web host (the balancer's checks need two seconds to notice) in the error shape.
    assert status == 503, body
    assert {"code", "message"} <= set(body["error"]), body
    cluster.restart_db(down_seconds=1)
    assert _until(lambda: call(f"{cluster.lb_url}/readyz")[0] == 200, 40)
    status, _, asked = call(f"{cluster.lb_url}/v1/memory/ask", token, {"question": "Which host runs Redis?"})
    assert status == 200 and asked["memories"], asked
