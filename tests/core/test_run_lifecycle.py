"""The shared run lifecycle (apps/core/runs.py): claims, heartbeats, fenced finishes and the sweep
that recovers runs whose worker died — on fact runs and arXiv search runs alike."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.arxiv import tasks as arxiv_tasks
from apps.arxiv.models import RunKind, SearchRun
from apps.arxiv.services import search_run_outcome
from apps.core.models import Event
from apps.core.runs import run_claim, run_finish, run_heartbeat, runs_sweep
from apps.wikidata import tasks as wikidata_tasks
from apps.wikidata.models import FactRun, FactRunStatus
from apps.wikidata.selectors import fact_run_outcome

pytestmark = pytest.mark.django_db


def _fact_run(**fields) -> FactRun:
    return FactRun.objects.create(question="When was Douglas Adams born?", **fields)


def _search_run(**fields) -> SearchRun:
    return SearchRun.objects.create(
        kind=RunKind.SEARCH,
        cache_key="k",
        parameters={"query": "x"},
        arxiv_params=[["search_query", "x"]],
        **fields,
    )


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, str]]:
    """The (task, run id) pairs handed to the broker, instead of handing them."""
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(
        wikidata_tasks.fact_run_execute_task, "delay", lambda run_id: sent.append(("fact", run_id))
    )
    monkeypatch.setattr(
        arxiv_tasks.search_run_execute_task, "delay", lambda run_id: sent.append(("arxiv", run_id))
    )
    return sent


def _ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


def test_a_run_whose_worker_went_silent_is_requeued_and_sent_again(
    sent, django_capture_on_commit_callbacks, settings
) -> None:
    settings.CORTEX_RUN_STALE_SECONDS = 30
    fact = _fact_run(status=FactRunStatus.RUNNING, executions=1, started_at=_ago(90), heartbeat_at=_ago(45))
    search = _search_run(status="running", executions=1, started_at=_ago(40), heartbeat_at=None)
    alive = _fact_run(status=FactRunStatus.RUNNING, executions=1, started_at=_ago(90), heartbeat_at=_ago(5))
    with django_capture_on_commit_callbacks(execute=True):
        report = runs_sweep()
    assert sorted(report.requeued) == sorted([str(fact.pk), str(search.pk)])
    assert report.failed == [] and report.redelivered == []
    assert sorted(sent) == sorted([("fact", str(fact.pk)), ("arxiv", str(search.pk))])
    fact.refresh_from_db()
    assert (fact.status, fact.error_type, fact.error) == (
        "queued",
        "worker_lost",
        "Re-enqueued: its worker was lost (no heartbeat for 45 s).",
    )
    alive.refresh_from_db()
    assert alive.status == "running"
    assert Event.objects.filter(name="runs.requeued").count() == 2
    assert (
        Event.objects.get(name="runs.requeued", payload__runId=str(fact.pk)).payload["kind"]
        == "wikidata.FactRun"
    )


def test_a_run_lost_max_executions_times_fails_with_the_reason(sent, settings) -> None:
    settings.CORTEX_RUN_MAX_EXECUTIONS = 3
    fact = _fact_run(status=FactRunStatus.RUNNING, executions=3, started_at=_ago(60), heartbeat_at=_ago(60))
    search = _search_run(status="running", executions=3, started_at=_ago(60), heartbeat_at=_ago(60))
    report = runs_sweep()
    assert sorted(report.failed) == sorted([str(fact.pk), str(search.pk)])
    assert sent == []
    fact.refresh_from_db()
    assert fact.status == "failed" and fact.finished_at is not None
    expected_message = (
        "Its worker was lost 3 time(s) (last: no heartbeat for 60 s); "
        "not retried past CORTEX_RUN_MAX_EXECUTIONS=3."
    )
    assert fact_run_outcome(run=fact)["error"] == {
        "code": "worker_lost",
        "message": expected_message,
        "details": {"runId": str(fact.pk), "type": "worker_lost", "executions": 3},
    }
    search.refresh_from_db()
    outcome = search_run_outcome(run=search)
    assert (outcome["status"], outcome["error"]["code"], outcome["error"]["message"]) == (
        "failed",
        "worker_lost",
        f"[brAInwav] {expected_message}",  # arXiv's errors carry the brand (seed 002)
    )


def test_a_queued_run_whose_message_was_lost_is_sent_again_once_per_window(
    sent, django_capture_on_commit_callbacks, settings
) -> None:
    settings.CORTEX_RUN_REDELIVER_SECONDS = 300
    settings.FACTS_RUN_DEADLINE_SECONDS = 900  # within it: past it, the sweep ends the run instead
    forgotten = _fact_run()
    FactRun.objects.filter(pk=forgotten.pk).update(created_at=_ago(600), enqueued_at=_ago(400))
    recent = _fact_run(enqueued_at=_ago(10))
    with django_capture_on_commit_callbacks(execute=True):
        assert runs_sweep().redelivered == [str(forgotten.pk)]
    with django_capture_on_commit_callbacks(execute=True):
        assert runs_sweep().redelivered == []  # its enqueued_at moved to now
    assert sent == [("fact", str(forgotten.pk))]
    recent.refresh_from_db()
    assert recent.status == "queued"


def test_claims_refuse_finished_runs_and_runs_with_a_live_heartbeat() -> None:
    queued = _fact_run()
    claimed = run_claim(model=FactRun, run_id=str(queued.pk))
    assert claimed is not None and (claimed.status, claimed.executions) == ("running", 1)
    assert claimed.heartbeat_at is not None
    assert run_claim(model=FactRun, run_id=str(queued.pk)) is None  # a duplicate delivery
    FactRun.objects.filter(pk=queued.pk).update(heartbeat_at=_ago(3600))
    assert run_claim(model=FactRun, run_id=str(queued.pk)).executions == 2  # its worker was lost
    finished = _fact_run(status=FactRunStatus.SUCCEEDED)
    assert run_claim(model=FactRun, run_id=str(finished.pk)) is None


def test_a_superseded_execution_cannot_overwrite_the_result() -> None:
    run = _fact_run()
    first = run_claim(model=FactRun, run_id=str(run.pk))
    FactRun.objects.filter(pk=run.pk).update(heartbeat_at=_ago(3600))
    second = run_claim(model=FactRun, run_id=str(run.pk))
    assert run_finish(run=second, duration_seconds=1.5, status=FactRunStatus.SUCCEEDED) is True
    assert run_finish(run=first, duration_seconds=9.0, status=FactRunStatus.FAILED, error="late") is False
    run.refresh_from_db()
    assert (run.status, run.error, run.duration_ms, run.executions) == ("succeeded", "", 1500.0, 2)


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_beats_from_a_thread_while_the_run_executes(settings) -> None:
    settings.CORTEX_RUN_HEARTBEAT_SECONDS = 0.05
    run = run_claim(model=FactRun, run_id=str(_fact_run().pk))
    FactRun.objects.filter(pk=run.pk).update(heartbeat_at=_ago(3600))
    with run_heartbeat(run=run):
        time.sleep(0.3)
    run.refresh_from_db()
    assert timezone.now() - run.heartbeat_at < timedelta(seconds=1)
