"""A fact run's deadline is enforced (issue #23): with Wikidata answering 503 only after longer than
the run has left, no request starts after the deadline, every request is cut off at it, and the run
ends at the deadline, answered from local data, the reason recorded."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from apps.core.runs import runs_sweep
from apps.wikidata.models import FactRun, FactRunStatus
from tests.core.test_run_deadlines import ago, fact_run_created
from tests.wikidata.replay_server import ReplayWikidata, Reply

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
    assert (body["status"], body["degraded"]) == ("succeeded", True)
    assert (run.status, run.degraded, run.error_type) == ("succeeded", True, "deadline")
    assert run.error == "the run's deadline passed (FACTS_RUN_DEADLINE_SECONDS=3 s from submission)"
    assert run.degraded_reason == f"Wikidata search failed: {run.error}"
    assert body["degradedReason"] == run.degraded_reason
    # One request, to the vector database, cut off at the deadline: its 503 comes later than that,
    # and retrying it, or falling back to keyword search, would start a request after the deadline.
    assert [request.path for request in wikidata.requests] == ["/item/query/"]
    assert all(request.at < _monotonic_of(deadline) for request in wikidata.requests)
    assert [(step["name"], step["status"]) for step in run.steps] == [("search", "failed"), ("local", "ok")]


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
        "succeeded",
        True,
        "deadline",
        2,
    )
    assert [request.path for request in wikidata.requests] == ["/item/query/"]
    assert wikidata.requests[0].at < _monotonic_of(deadline)
