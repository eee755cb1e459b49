"""Executing arXiv runs: retries, backoff, Retry-After, deadlines, caching, storage, events."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from apps.arxiv.models import Paper, PaperVersion, RunStatus, SearchRun
from apps.arxiv.schemas import SearchIn
from apps.arxiv.services import (
    arxiv_limiter,
    lookup_submit,
    search_run_execute,
    search_run_outcome,
    search_submit,
)
from apps.core.errors import FeatureDisabled
from apps.core.models import Event
from tests.arxiv.replay_server import ReplayArxiv, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def arxiv(settings) -> Iterator[ReplayArxiv]:
    server = ReplayArxiv().start()
    settings.ARXIV_API_URL = server.url
    settings.ARXIV_MIN_INTERVAL_SECONDS = 0.05
    settings.ARXIV_BACKOFF_BASE_SECONDS = 0.01
    settings.ARXIV_BACKOFF_MAX_SECONDS = 0.05
    arxiv_limiter().reset()
    yield server
    server.stop()
    arxiv_limiter().reset()


def _run(query: str = "testing", **fields) -> SearchRun:
    """Submit (never enqueued: these tests do not commit) and execute in this process."""
    run = search_submit(payload=SearchIn(query=query, **fields))
    return search_run_execute(run_id=str(run.pk))


def _events(run: SearchRun) -> list[str]:
    return list(
        Event.objects.filter(payload__runId=str(run.pk)).order_by("id").values_list("name", flat=True)
    )


def test_a_search_stores_papers_and_reports_the_page(arxiv: ReplayArxiv) -> None:
    run = _run()
    assert run.status == RunStatus.SUCCEEDED
    assert run.attempts == 1
    [arrival] = arxiv.arrivals
    assert arrival.params["search_query"] == ["(ti:testing OR abs:testing)"]
    assert arrival.params["sortBy"] == ["submittedDate"]
    assert arrival.user_agent.startswith("CortexWeb/")
    outcome = search_run_outcome(run=run)
    assert (outcome["source"], outcome["brand"], outcome["cached"]) == ("arxiv", "brAInwav", False)
    assert len(outcome["items"]) == 10
    assert outcome["nextStart"] == 10
    first = outcome["items"][0]
    assert first["title"] == (
        "Testing Deep Learning Models: A First Comparative Study of Multiple Testing Techniques"
    )
    paper = Paper.objects.get(arxiv_id=first["id"])
    assert paper.title == first["title"]
    assert list(run.papers.order_by("searchrunpaper__rank").values_list("arxiv_id", flat=True)) == [
        item["id"] for item in outcome["items"]
    ]
    assert PaperVersion.objects.filter(paper=paper, version=first["version"]).exists()
    assert _events(run) == ["arxiv.tool.started", "arxiv.tool.completed"]


def test_identical_search_within_the_cache_window_does_not_call_arxiv(arxiv: ReplayArxiv, settings) -> None:
    first = _run()
    second = search_submit(payload=SearchIn(query="testing"))
    assert second.status == RunStatus.SUCCEEDED
    assert second.cached_from_id == first.pk
    assert search_run_outcome(run=second)["items"] == search_run_outcome(run=first)["items"]
    assert search_run_outcome(run=second)["cached"] is True
    assert len(arxiv.arrivals) == 1
    different = _run(query="testing", maxResults=5)
    assert different.cached_from_id is None
    settings.ARXIV_CACHE_SECONDS = 0
    assert search_submit(payload=SearchIn(query="testing")).status == RunStatus.QUEUED


def test_429_with_retry_after_waits_at_least_that_long_then_succeeds(arxiv: ReplayArxiv) -> None:
    arxiv.script.append(Reply(status=429, feed="", headers={"Retry-After": "2"}))
    run = _run()
    assert run.status == RunStatus.SUCCEEDED
    assert run.attempts == 2
    assert len(arxiv.arrivals) == 2
    assert arxiv.gaps()[0] >= 2.0
    assert run.waited_seconds >= 2.0


def test_four_503s_are_three_retries_then_a_recorded_failure(arxiv: ReplayArxiv) -> None:
    arxiv.script.extend(Reply(status=503, feed="") for _ in range(4))
    run = _run()
    assert len(arxiv.arrivals) == 4
    # arXiv is down: the search is degraded (issue 26), not failed.
    assert (run.status, run.attempts, run.error_type, run.retryable) == (
        RunStatus.DEGRADED,
        4,
        "retryable",
        True,
    )
    assert "503" in run.error
    assert _events(run) == ["arxiv.tool.started", "arxiv.tool.degraded"]
    # arXiv is down: the search answers from the stored papers (none here), degraded (test_outage.py).
    outcome = search_run_outcome(run=run)
    assert (outcome["degraded"], outcome["source"], outcome["items"], "error" in outcome) == (
        True,
        "stored",
        [],
        False,
    )


def test_an_error_feed_is_not_retried_and_carries_arxivs_message(arxiv: ReplayArxiv) -> None:
    arxiv.script.append(Reply(status=400, feed="constructed_2026_error_feed_http400.xml"))
    run = _run()
    assert len(arxiv.arrivals) == 1
    assert (run.status, run.attempts, run.retryable) == (RunStatus.FAILED, 1, False)
    outcome = search_run_outcome(run=run)
    assert outcome["status"] == "failed"
    assert outcome["error"] == {
        "code": "upstream_error",
        "message": "[brAInwav] arXiv rejected the request: incorrect id format for 1706.0376",
        "details": {
            "runId": str(run.pk),
            "type": run.error_type,
            "executions": 1,
            "upstream": "arxiv",
            "retryable": False,
        },
    }
    assert f"[brAInwav] {run.error}" == outcome["error"]["message"]  # the row keeps arXiv's own words


def test_a_run_whose_turn_is_past_its_deadline_is_refused_at_once(arxiv: ReplayArxiv, settings) -> None:
    settings.ARXIV_MIN_INTERVAL_SECONDS = 3.0
    settings.ARXIV_RUN_DEADLINE_SECONDS = 2.0
    limiter = arxiv_limiter()
    for _ in range(3):
        limiter.reserve()  # other processes hold the next slots: this run's turn is 9 s away
    run = _run()
    assert arxiv.arrivals == []
    assert run.status == RunStatus.RATE_LIMITED
    assert 8.5 <= run.retry_after <= 9.0
    assert run.duration_ms < 500
    assert _events(run) == ["arxiv.tool.started", "arxiv.rate_limited"]
    outcome = search_run_outcome(run=run)
    assert (outcome["status"], outcome["error"]["code"]) == ("rate_limited", "rate_limited")
    assert outcome["error"]["details"]["retryAfter"] == run.retry_after


def test_lookup_by_id_upserts_and_never_downgrades_the_latest_version(arxiv: ReplayArxiv) -> None:
    arxiv.script.append(Reply(feed="idlist_1605.08386.xml"))
    run = search_run_execute(run_id=str(lookup_submit(ids=["1605.08386"]).pk))
    assert run.status == RunStatus.SUCCEEDED
    assert arxiv.arrivals[0].params["id_list"] == ["1605.08386"]
    [paper] = run.papers.all()
    assert paper.arxiv_id == "1605.08386"
    latest = paper.latest_version
    older = {**search_run_outcome(run=run)["items"][0], "version": latest - 1, "title": "Old title"}
    from apps.arxiv.services import paper_upsert

    paper_upsert(entry=older)
    paper.refresh_from_db()
    assert (paper.latest_version, paper.title) == (latest, search_run_outcome(run=run)["items"][0]["title"])
    assert sorted(paper.versions.values_list("version", flat=True)) == [latest - 1, latest]


def test_switched_off_arxiv_answers_a_clear_503(settings) -> None:
    settings.FEATURE_ARXIV = False
    with pytest.raises(FeatureDisabled) as caught:
        search_submit(payload=SearchIn(query="testing"))
    assert caught.value.status_code == 503
    assert caught.value.details == {"flag": "FEATURE_ARXIV"}
