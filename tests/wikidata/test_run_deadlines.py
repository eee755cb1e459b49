"""A fact run's deadline is enforced (issue #23): with Wikidata answering 503 only after longer than
the run has left, no request starts after the deadline, every request is cut off at it, and the run
ends at the deadline, answered from local data, the reason recorded."""

from __future__ import annotations

import time

import httpx
import pytest
import respx
from django.test import Client

from apps.core.errors import DeadlineReached
from apps.core.models import UpstreamRequest
from apps.core.runs import runs_sweep
from apps.wikidata import action_api, clients, sparql, vectordb
from apps.wikidata.models import FactRun, FactRunStatus
from tests.core.test_run_deadlines import ago, fact_run_created
from tests.wikidata.replay_server import ReplayWikidata, Reply
from tests.wikidata.test_facts import Q42_VECTOR_HIT

DEADLINE = 3.0
SLOW_503 = Reply(status=503, body={"detail": "Service Unavailable"}, delay=DEADLINE + 2)
MARGIN = 2.0  # the bound on ending after the deadline (local answer included)


def _monotonic_of(wall: float) -> float:
    """A wall-clock instant on the monotonic clock the replay server records requests with."""
    return wall - time.time() + time.monotonic()


@pytest.mark.django_db(transaction=True)
def test_a_run_ends_at_its_deadline_and_starts_no_request_after_it(
    celery_worker, wikidata: ReplayWikidata, wikidata_registry: None, upstream_client: Client, settings
) -> None:
    settings.FACTS_RUN_DEADLINE_SECONDS = DEADLINE
    for path in ("/item/query/", "/w/api.php", "/sparql"):
        wikidata.script(path, *[SLOW_503] * 20)

    response = upstream_client.post(
        "/v1/facts/query", {"query": "Who wrote Hamlet?", "waitSeconds": 15}, content_type="application/json"
    )

    assert response.status_code == 200, response.content
    body = response.json()
    run = FactRun.objects.get(pk=body["runId"])
    deadline = run.created_at.timestamp() + DEADLINE
    ended_after_deadline = run.finished_at.timestamp() - deadline
    assert 0 <= ended_after_deadline <= MARGIN, ended_after_deadline
    # Nothing reached and nothing stored to answer from: degraded (issue 26), never "succeeded"; the
    # reason, not an error, says why.
    assert (body["status"], body["degraded"], body["results"], "error" in body) == (
        "degraded",
        True,
        [],
        False,
    )
    assert (run.status, run.degraded, run.error_type) == ("degraded", True, "deadline")
    assert run.error == "the run's deadline passed (FACTS_RUN_DEADLINE_SECONDS=3 s from submission)"
    assert run.degraded_reason == f"Wikidata search failed: {run.error}"
    assert body["degradedReason"] == run.degraded_reason
    # One request, to the vector database, cut off at the deadline: its 503 comes later than that,
    # and retrying it, or falling back to keyword search, would start a request after the deadline.
    assert [request.path for request in wikidata.requests] == ["/item/query/"]
    assert all(request.at < _monotonic_of(deadline) for request in wikidata.requests)
    assert [(step["name"], step["status"]) for step in run.steps] == [("search", "failed"), ("local", "ok")]


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_deadline_stops_its_sparql_step_says_it_was_cut_short(
    celery_worker, wikidata: ReplayWikidata, wikidata_registry: None, upstream_client: Client, settings
) -> None:
    """Search and claims answer; the SPARQL enrichment would answer after the deadline. The run keeps
    its facts and ends at the deadline, degraded with the step it skipped, not just "succeeded"."""
    settings.FACTS_RUN_DEADLINE_SECONDS = 8.0
    wikidata.default_vector = Reply(body=Q42_VECTOR_HIT)
    wikidata.script("/sparql", *[Reply(status=503, body={"detail": "Service Unavailable"}, delay=20)] * 5)

    response = upstream_client.post(
        "/v1/facts/query",
        {"query": "What is Douglas Adams an instance of?", "waitSeconds": 20},
        content_type="application/json",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    run = FactRun.objects.get(pk=body["runId"])
    ended_after_deadline = run.finished_at.timestamp() - (run.created_at.timestamp() + 8.0)
    assert 0 <= ended_after_deadline <= MARGIN, ended_after_deadline
    assert (body["status"], body["degraded"], run.error_type) == ("degraded", True, "deadline")
    assert body["results"], body
    assert body["degradedReason"] == (
        "sparql skipped: the run's deadline passed (FACTS_RUN_DEADLINE_SECONDS=8 s from submission)"
    )
    assert [(step["name"], step["status"]) for step in run.steps][-2:] == [
        ("sparql", "failed"),
        ("persist", "ok"),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_lost_run_sent_again_keeps_its_deadline(
    celery_worker, wikidata: ReplayWikidata, wikidata_registry: None, settings
) -> None:
    """The sweep hands a lost run with time left to a worker, which ends it at the deadline counted
    from the submission — not a fresh budget — without a request after it."""
    settings.CORTEX_RUN_STALE_SECONDS = 30
    settings.FACTS_RUN_DEADLINE_SECONDS = 34
    slow = Reply(status=503, body={"detail": "Service Unavailable"}, delay=8)
    for path in ("/item/query/", "/w/api.php", "/sparql"):
        wikidata.script(path, *[slow] * 10)
    lost = fact_run_created(
        created_ago=31, status=FactRunStatus.RUNNING, executions=1, started_at=ago(31), heartbeat_at=ago(31)
    )
    deadline = lost.created_at.timestamp() + 34

    assert runs_sweep().requeued == [str(lost.pk)]

    while FactRun.objects.get(pk=lost.pk).pending:
        assert time.time() < deadline + 10, "the run is still pending 10 s after its deadline"
        time.sleep(0.1)
    lost.refresh_from_db()
    assert 0 <= lost.finished_at.timestamp() - deadline <= 2.0, lost.finished_at.timestamp() - deadline
    assert (lost.status, lost.degraded, lost.error_type, lost.executions) == (
        "degraded",
        True,
        "deadline",
        2,
    )
    assert [request.path for request in wikidata.requests] == ["/item/query/"]
    assert wikidata.requests[0].at < _monotonic_of(deadline)


# --- Each client: nothing sent past the deadline, timeouts cut to what is left -----------------

CLIENT_CALLS = {
    "vector": (
        lambda deadline: clients.vector_db_client(deadline=deadline).search_items("Hamlet", lang="en", k=3),
        "GET",
        "https://wd-vectordb.wmcloud.org/item/query/",
        {"json": []},
    ),
    "action_api": (
        lambda deadline: clients.action_api_client(deadline=deadline).search_entities(
            "Hamlet", language="en"
        ),
        "GET",
        "https://www.wikidata.org/w/api.php",
        {"json": {"search": [], "success": 1}},
    ),
    "sparql": (
        lambda deadline: clients.sparql_client(deadline=deadline).select(
            "SELECT ?x WHERE { ?x ?p ?o } LIMIT 1"
        ),
        "GET",
        "https://query.wikidata.org/sparql",
        {"json": {"head": {"vars": ["x"]}, "results": {"bindings": []}}},
    ),
}


@pytest.fixture
def upstream_defaults(settings) -> None:
    settings.WIKIDATA_VECTOR_URL = "https://wd-vectordb.wmcloud.org"
    settings.WIKIDATA_API_URL = "https://www.wikidata.org/w/api.php"
    settings.WIKIDATA_SPARQL_URL = "https://query.wikidata.org/sparql"
    settings.CORTEX_HTTP_CONNECT_TIMEOUT = 10.0
    settings.CORTEX_HTTP_READ_TIMEOUT = 30.0
    for upstream in (action_api.UPSTREAM, vectordb.UPSTREAM, sparql.UPSTREAM):
        clients.upstream_limiter(upstream).reset()


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(CLIENT_CALLS))
def test_a_request_with_little_time_left_has_its_timeouts_cut_to_it(name: str, upstream_defaults) -> None:
    call, method, url, reply = CLIENT_CALLS[name]
    seen: list[dict[str, float]] = []
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.route(method=method, url__startswith=url)
        route.side_effect = lambda request: (
            seen.append(request.extensions["timeout"]) or httpx.Response(200, **reply)
        )
        call(time.monotonic() + 5)
    [timeout] = seen
    # Left alone they would be 30 s (read) and 10 s (connect).
    assert 3 < timeout["read"] <= 5 and 3 < timeout["connect"] <= 5, timeout
    assert timeout["pool"] == timeout["connect"] and timeout["write"] == timeout["read"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(CLIENT_CALLS))
def test_no_request_is_sent_and_no_budget_spent_past_the_deadline(name: str, upstream_defaults) -> None:
    call, method, url, _ = CLIENT_CALLS[name]
    with (
        respx.mock(assert_all_mocked=True, assert_all_called=False) as mock,
        pytest.raises(DeadlineReached) as refused,
    ):
        route = mock.route(method=method, url__startswith=url)
        call(time.monotonic() - 0.01)
    assert route.call_count == 0
    assert (refused.value.retryable, refused.value.details["reason"]) == (False, "deadline")
    assert UpstreamRequest.objects.count() == 0  # refused before the limiter's slot and its record
