"""Honest arXiv run statuses (issue 26 item 1): a search while arXiv is down is ``degraded`` — its own
status over REST, MCP and on the /papers runs list (badge colour and filter) — not "failed" with an
answer, never "Succeeded"; the list says what it answered from and counts the papers it returned."""

from __future__ import annotations

import re
import typing

import pytest
from django.test import Client

from apps.arxiv.models import Paper, RunStatus, SearchRun
from apps.arxiv.schemas import RunOut
from apps.core.models import Event
from apps.mcp_server.services import Caller, mcp_tool_call
from tests.arxiv.test_outage import TRANSFORMER, arxiv, client  # noqa: F401 - fixtures
from tests.conftest import role_client

REASON = (
    "[brAInwav] arXiv is unavailable (arXiv is busy (HTTP 503); retry later); "
    "answered from 1 matching stored papers."
)


def _row(content: str, run: SearchRun) -> str:
    match = re.search(rf'<tr data-run-id="{run.pk}">(.*?)</tr>', content, re.S)
    assert match, content
    return match.group(1)


@pytest.mark.django_db(transaction=True)
def test_a_search_while_arxiv_answers_503_is_degraded_over_rest_mcp_and_the_papers_page(
    arxiv,  # noqa: F811
    client,  # noqa: F811
    make_token,
    celery_worker,
) -> None:
    Paper.objects.create(**TRANSFORMER)

    body = client.post(
        "/v1/arxiv/search", {"query": "transformer attention"}, content_type="application/json"
    ).json()

    run = SearchRun.objects.get(pk=body["runId"])
    assert (run.status, body["status"], body["source"], body["degraded"], body["reason"]) == (
        "degraded",
        "degraded",
        "stored",
        True,
        REASON,
    )
    assert [item["id"] for item in body["items"]] == ["1706.03762"] and "error" not in body
    assert client.get(f"/v1/arxiv/runs/{run.pk}").json() == body
    assert list(Event.objects.filter(payload__runId=str(run.pk)).values_list("name", flat=True)) == [
        "arxiv.tool.degraded",
        "arxiv.tool.started",
    ]
    assert list(SearchRun.objects.finished()) == [run] and not run.pending

    token, _ = make_token("read", "upstream")
    outcome = mcp_tool_call(
        name="arxiv.search",
        arguments={"query": "transformer attention"},
        caller=Caller(transport="http", token=token),
    )
    assert (outcome.is_error, (outcome.structured or {})["status"]) == (False, "degraded")

    reader = role_client("arxiv.view_searchrun")
    content = reader.get("/papers").content.decode()
    first = _row(content, run)
    assert (
        '<td><span class="badge status-degraded">Degraded</span> · '
        '<span class="run-answered">answered from 1 stored paper</span></td>' in first
    )
    assert "Failed" not in first and "Succeeded" not in first
    assert re.findall(r"<td>(\d+)</td>", first) == ["1"]
    # The filter: both searches were degraded; none failed.
    filtered = reader.get("/papers?status=degraded").content.decode()
    assert len(re.findall(r'<tr data-run-id="', filtered)) == 2
    assert 'href="?status=degraded" aria-current="page">Degraded</a>' in filtered
    assert re.findall(r'<tr data-run-id="', reader.get("/papers?status=failed").content.decode()) == []


@pytest.mark.django_db
def test_an_unknown_status_filter_on_papers_is_a_400_saying_what_it_takes() -> None:
    response = role_client("arxiv.view_searchrun").get("/papers?status=down")
    assert response.status_code == 400
    assert (
        '<p class="notice notice-error" role="alert">?status= takes one of queued, running, succeeded, '
        "degraded, failed, rate_limited, not &#x27;down&#x27;.</p>" in response.content.decode()
    )


@pytest.mark.django_db
def test_the_runs_list_is_only_for_run_readers() -> None:
    assert "Recent runs" not in Client().get("/papers").content.decode()
    # A visitor's ?status= is not a filter of anything they see: no 400 for it.
    assert Client().get("/papers?status=down").status_code == 200


def test_the_published_status_enum_is_the_models() -> None:
    published = typing.get_args(RunOut.model_fields["status"].annotation)
    assert (
        list(published)
        == RunStatus.values
        == [
            "queued",
            "running",
            "succeeded",
            "degraded",
            "failed",
            "rate_limited",
        ]
    )
