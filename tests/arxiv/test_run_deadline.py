"""An arXiv run's deadline is enforced (issue #23): with arXiv answering only after longer than the
run has left, the request is cut off at the deadline, no request starts after it, and the run ends
there with the reason."""

from __future__ import annotations

import pytest

from apps.arxiv.models import SearchRun
from tests.arxiv.replay_server import ReplayArxiv, Reply
from tests.arxiv.test_api import _search, arxiv, client  # noqa: F401 - fixtures

DEADLINE = 2.0


@pytest.mark.django_db(transaction=True)
def test_a_run_ends_at_its_deadline_when_arxiv_answers_later(
    arxiv: ReplayArxiv,  # noqa: F811
    client,  # noqa: F811
    celery_worker,
    settings,
) -> None:
    settings.ARXIV_RUN_DEADLINE_SECONDS = DEADLINE
    arxiv.script.extend([Reply(status=503, delay=DEADLINE + 3)] * 5)

    response = _search(client, query="deadlines")

    assert response.status_code == 200, response.content
    body = response.json()
    run = SearchRun.objects.get(pk=body["runId"])
    deadline = run.created_at.timestamp() + DEADLINE
    ended_after_deadline = run.finished_at.timestamp() - deadline
    assert 0 <= ended_after_deadline <= 1.0, ended_after_deadline
    assert (body["status"], run.attempts) == ("rate_limited", 1)
    assert body["error"]["message"] == (
        "[brAInwav] arXiv did not answer in time (ReadTimeout), and this run's deadline leaves no time "
        "to retry; retry later."
    )
    assert (body["error"]["code"], run.error_type) == ("rate_limited", "rate_limited")
    assert [arrival.at < deadline for arrival in arxiv.arrivals] == [True]
