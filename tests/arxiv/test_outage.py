"""Seed 002 during an arXiv outage (issue #25 item 5): a search answers from the stored papers,
``degraded`` with the reason; errors and the feature switch speak with the ``[brAInwav]`` prefix."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.test import Client

from apps.arxiv.models import Paper, RunStatus, SearchRun
from apps.arxiv.services import (
    arxiv_limiter,
    arxiv_tool_description,
    branded,
    search_run_error,
    search_run_outcome,
)
from apps.mcp_server.services import Caller, mcp_tool_call
from tests.arxiv.replay_server import ReplayArxiv, Reply

TRANSFORMER = {
    "arxiv_id": "1706.03762",
    "latest_version": 7,
    "title": "Attention Is All You Need",
    "summary": "The dominant sequence transduction models are based on recurrent networks; we propose "
    "the Transformer, based solely on attention mechanisms.",
    "authors": ["Ashish Vaswani", "Noam Shazeer"],
    "author_details": [
        {"name": "Ashish Vaswani", "affiliations": []},
        {"name": "Noam Shazeer", "affiliations": []},
    ],
    "published": datetime(2017, 6, 12, 17, 57, 34, tzinfo=UTC),
    "updated": datetime(2023, 8, 2, 0, 41, 18, tzinfo=UTC),
    "url": "https://arxiv.org/abs/1706.03762v7",
    "pdf_url": "https://arxiv.org/pdf/1706.03762v7",
    "categories": ["cs.CL", "cs.LG"],
    "primary_category": "cs.CL",
}  # fmt: skip
TRANSFORMER_ITEM = {
    "id": "1706.03762",
    "versionedId": "1706.03762v7",
    "version": 7,
    "title": "Attention Is All You Need",
    "summary": TRANSFORMER["summary"],
    "published": "2017-06-12T17:57:34Z",
    "updated": "2023-08-02T00:41:18Z",
    "authors": ["Ashish Vaswani", "Noam Shazeer"],
    "authorDetails": TRANSFORMER["author_details"],
    "url": "https://arxiv.org/abs/1706.03762v7",
    "pdfUrl": "https://arxiv.org/pdf/1706.03762v7",
    "categories": ["cs.CL", "cs.LG"],
    "primaryCategory": "cs.CL",
    "doi": "",
    "journalRef": "",
    "comment": "",
}


@pytest.fixture
def arxiv(settings) -> Iterator[ReplayArxiv]:
    server = ReplayArxiv().start()
    server.default = Reply(status=503)  # arXiv is down for every request
    settings.ARXIV_API_URL = server.url
    settings.ARXIV_MIN_INTERVAL_SECONDS = 0.05
    settings.ARXIV_BACKOFF_BASE_SECONDS = 0.01
    settings.ARXIV_BACKOFF_MAX_SECONDS = 0.05
    arxiv_limiter().reset()
    yield server
    server.stop()
    arxiv_limiter().reset()


@pytest.fixture
def refused(settings) -> str:
    """An address nothing listens on: every connection is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.ARXIV_API_URL = f"http://127.0.0.1:{port}/api/query"
    settings.ARXIV_MIN_INTERVAL_SECONDS = 0.05
    settings.ARXIV_BACKOFF_BASE_SECONDS = 0.01
    settings.ARXIV_BACKOFF_MAX_SECONDS = 0.05
    arxiv_limiter().reset()
    return settings.ARXIV_API_URL


@pytest.fixture
def client(make_token) -> Client:
    _, raw = make_token("read", "upstream")
    return Client(headers={"Authorization": f"Bearer {raw}"})


def _search(client: Client, **body):
    return client.post("/v1/arxiv/search", body, content_type="application/json")


@pytest.mark.django_db(transaction=True)
def test_search_while_arxiv_answers_503_answers_from_stored_papers(arxiv, client, celery_worker) -> None:
    Paper.objects.create(**TRANSFORMER)
    Paper.objects.create(
        **{**TRANSFORMER, "arxiv_id": "2101.00001", "title": "Gardening", "summary": "Roses."}
    )
    response = _search(client, query="transformer attention", maxResults=5)
    assert response.status_code == 200, response.content
    body = response.json()
    run = SearchRun.objects.get(pk=body["runId"])
    assert (run.status, run.attempts, len(arxiv.arrivals)) == (RunStatus.DEGRADED, 4, 4)  # 1 + 3 retries
    assert body == {
        "runId": str(run.pk),
        "status": "degraded",
        "source": "stored",
        "brand": "brAInwav",
        "degraded": True,
        "reason": "[brAInwav] arXiv is unavailable (arXiv is busy (HTTP 503); retry later); "
        "answered from 1 matching stored papers.",
        "items": [TRANSFORMER_ITEM],
        "totalResults": 1,
        "start": 0,
        "itemsPerPage": 5,
    }
    assert client.get(f"/v1/arxiv/runs/{run.pk}").json() == body
    assert search_run_error(run=run) is None  # the tool gateway and the live page answer too


@pytest.mark.django_db(transaction=True)
def test_search_with_no_stored_match_still_answers_degraded_and_empty(arxiv, client, celery_worker) -> None:
    Paper.objects.create(**TRANSFORMER)
    body = _search(client, query="quantum chromodynamics").json()
    assert {key: body[key] for key in ("status", "source", "degraded", "items", "totalResults")} == {
        "status": "degraded",
        "source": "stored",
        "degraded": True,
        "items": [],
        "totalResults": 0,
    }
    assert body["reason"] == (
        "[brAInwav] arXiv is unavailable (arXiv is busy (HTTP 503); retry later); "
        "no stored paper matches this search."
    )
    assert "error" not in body


@pytest.mark.django_db(transaction=True)
def test_search_while_arxiv_refuses_connections_answers_from_stored_papers(
    refused, client, celery_worker
) -> None:
    Paper.objects.create(**TRANSFORMER)
    body = _search(client, query="attention", categories=["cs.LG"]).json()
    assert (body["status"], body["source"], body["degraded"]) == ("degraded", "stored", True)
    assert body["items"] == [TRANSFORMER_ITEM]
    assert body["reason"].startswith("[brAInwav] arXiv is unavailable (could not reach arXiv (ConnectError: ")
    assert body["reason"].endswith("); answered from 1 matching stored papers.")
    fielded = _search(client, query="ti:attention AND au:vaswani ANDNOT abs:gardening").json()
    assert [item["id"] for item in fielded["items"]] == ["1706.03762"]  # arXiv's syntax, read as text
    other_category = _search(client, query="attention", categories=["math.CO"]).json()
    assert (other_category["degraded"], other_category["items"]) == (True, [])


@pytest.mark.django_db(transaction=True)
def test_the_mcp_tool_answers_degraded_alike(arxiv, make_token, celery_worker) -> None:
    Paper.objects.create(**TRANSFORMER)
    token, _ = make_token("read", "upstream")
    outcome = mcp_tool_call(
        name="arxiv.search", arguments={"query": "attention"}, caller=Caller(transport="http", token=token)
    )
    assert outcome.is_error is False, outcome.text
    structured = outcome.structured or {}
    assert (structured["degraded"], structured["source"], structured["items"]) == (
        True,
        "stored",
        [TRANSFORMER_ITEM],
    )
    assert "error" not in structured
    # The text an agent reads says where the papers came from, not "N papers on arXiv".
    assert outcome.text.splitlines()[0] == structured["reason"]
    assert outcome.text.splitlines()[1].startswith("- 1706.03762: ")


def test_the_mcp_arxiv_tools_are_described_as_the_seed_brands_them() -> None:
    from apps.mcp_server.tools import CORTEX_TOOLS_BY_NAME

    for name in ("arxiv.search", "arxiv.lookup"):
        assert CORTEX_TOOLS_BY_NAME[name].description.startswith("brAInwav arXiv integration: "), name


@pytest.mark.django_db(transaction=True)
def test_a_lookup_during_the_outage_is_still_the_branded_error(arxiv, client, celery_worker) -> None:
    body = client.post("/v1/arxiv/lookup", {"ids": ["1706.03762"]}, content_type="application/json").json()
    assert (body["status"], body["source"]) == ("failed", "arxiv")
    assert body["error"]["message"] == "[brAInwav] arXiv is busy (HTTP 503); retry later"
    assert "degraded" not in body
    run = SearchRun.objects.get(pk=body["runId"])
    assert search_run_error(run=run).message == body["error"]["message"]
    assert search_run_outcome(run=run) == body


def test_the_tool_description_names_the_brands_arxiv_integration(settings) -> None:
    assert arxiv_tool_description("Searches arXiv.") == "brAInwav arXiv integration: Searches arXiv."
    settings.CORTEX_BRAND = "Acme"
    assert arxiv_tool_description("Searches arXiv.") == "Acme arXiv integration: Searches arXiv."
    assert branded("arXiv is busy") == "[Acme] arXiv is busy" == branded("[Acme] arXiv is busy")


@pytest.mark.django_db
def test_the_switched_off_feature_speaks_with_the_brand(client, settings) -> None:
    settings.FEATURE_ARXIV = False
    response = _search(client, query="attention")
    assert response.status_code == 503
    assert response.json()["error"]["message"] == (
        "[brAInwav] arXiv search is switched off (FEATURE_ARXIV is false); use local knowledge instead."
    )
