"""Run deadlines across lost workers (issue #23): a run's deadline counts from its submission on every
execution, so the sweep ends a lost run whose deadline passed instead of running it again, ends a
queued run no worker took before its deadline, and a lost run sent again keeps what was left of it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.arxiv import tasks as arxiv_tasks
from apps.arxiv.models import RunKind, SearchRun
from apps.core.models import Event
from apps.core.runs import runs_sweep
from apps.wikidata import tasks as wikidata_tasks
from apps.wikidata.models import FactRun, FactRunStatus
from apps.wikidata.selectors import fact_run_outcome


def ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


def fact_run_created(*, created_ago: float, **fields) -> FactRun:
    """A fact run submitted ``created_ago`` seconds ago."""
    run = FactRun.objects.create(question="Who wrote Hamlet?", **fields)
    FactRun.objects.filter(pk=run.pk).update(created_at=ago(created_ago))  # auto_now_add ignores a value
    run.refresh_from_db()
    return run


def _search_run(*, created_ago: float, **fields) -> SearchRun:
    run = SearchRun.objects.create(
        kind=RunKind.SEARCH,
        cache_key="k",
        parameters={"query": "x"},
        arxiv_params=[["search_query", "x"]],
        **fields,
    )
    SearchRun.objects.filter(pk=run.pk).update(created_at=ago(created_ago))
    run.refresh_from_db()
    return run


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


@pytest.mark.django_db
def test_a_lost_run_past_its_deadline_is_ended_by_the_sweep_not_run_again(
    sent, django_capture_on_commit_callbacks, settings
) -> None:
    settings.CORTEX_RUN_STALE_SECONDS = 30
    settings.FACTS_RUN_DEADLINE_SECONDS = 45
    settings.ARXIV_RUN_DEADLINE_SECONDS = 60
    fact = fact_run_created(
        created_ago=50, status=FactRunStatus.RUNNING, executions=1, started_at=ago(49), heartbeat_at=ago(40)
    )
    search = _search_run(
        created_ago=70, status="running", executions=2, started_at=ago(69), heartbeat_at=ago(35)
    )
    with django_capture_on_commit_callbacks(execute=True):
        report = runs_sweep()
    assert sorted(report.ended) == sorted([str(fact.pk), str(search.pk)])
    assert (report.requeued, report.failed, report.redelivered, sent) == ([], [], [], [])
    fact.refresh_from_db()
    assert (fact.status, fact.error_type, fact.heartbeat_at, fact.executions) == (
        "failed",
        "deadline",
        None,
        1,
    )
    assert fact.error == (
        "Ended at its deadline (FACTS_RUN_DEADLINE_SECONDS=45 s from submission), 5 s ago: "
        "its worker was lost (no heartbeat for 40 s); not run again."
    )
    assert fact.finished_at is not None
    search.refresh_from_db()
    assert (search.status, search.error_type) == ("failed", "deadline")
    assert search.error == (
        "Ended at its deadline (ARXIV_RUN_DEADLINE_SECONDS=60 s from submission), 10 s ago: "
        "its worker was lost (no heartbeat for 35 s); not run again."
    )
    # The one failed-run contract: the API's answer says why, with its own code.
    error = fact_run_outcome(run=fact)["error"]
    assert (error["code"], error["message"]) == ("deadline_exceeded", fact.error)
    assert sorted(e.payload["runId"] for e in Event.objects.filter(name="runs.ended")) == sorted(
        [str(fact.pk), str(search.pk)]
    )


@pytest.mark.django_db
def test_a_queued_run_no_worker_took_before_its_deadline_is_ended_by_the_sweep(
    sent, django_capture_on_commit_callbacks, settings
) -> None:
    """Its message may have been prefetched by the worker that was killed: redelivering it after
    ``CORTEX_RUN_REDELIVER_SECONDS`` would answer long after the caller's deadline."""
    settings.FACTS_RUN_DEADLINE_SECONDS = 45
    waiting = fact_run_created(created_ago=46, enqueued_at=ago(46))
    in_time = fact_run_created(created_ago=40, enqueued_at=ago(40))
    with django_capture_on_commit_callbacks(execute=True):
        report = runs_sweep()
    assert (report.ended, report.redelivered, sent) == ([str(waiting.pk)], [], [])
    waiting.refresh_from_db()
    assert (waiting.status, waiting.error_type) == ("failed", "deadline")
    assert waiting.error == (
        "Ended at its deadline (FACTS_RUN_DEADLINE_SECONDS=45 s from submission), 1 s ago: "
        "no worker started it in time; not run."
    )
    in_time.refresh_from_db()
    assert in_time.status == "queued"


@pytest.mark.django_db
def test_a_run_still_running_well_past_its_deadline_is_ended_and_its_worker_fenced_out(
    sent, settings
) -> None:
    """A live worker ends its run at the deadline itself; one still running ``CORTEX_RUN_STALE_SECONDS``
    later is stuck, and the sweep ends the run (the worker's result, if it comes, is not written)."""
    settings.CORTEX_RUN_STALE_SECONDS = 30
    settings.FACTS_RUN_DEADLINE_SECONDS = 45
    stuck = fact_run_created(
        created_ago=76, status=FactRunStatus.RUNNING, executions=1, started_at=ago(75), heartbeat_at=ago(1)
    )
    finishing = fact_run_created(
        created_ago=74, status=FactRunStatus.RUNNING, executions=1, started_at=ago(73), heartbeat_at=ago(1)
    )
    report = runs_sweep()
    assert report.ended == [str(stuck.pk)]
    stuck.refresh_from_db()
    assert stuck.error == (
        "Ended at its deadline (FACTS_RUN_DEADLINE_SECONDS=45 s from submission), 31 s ago: "
        "its worker was still running it; not run again."
    )
    finishing.refresh_from_db()
    assert finishing.status == "running"
