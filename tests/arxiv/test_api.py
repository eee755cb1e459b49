"""/v1/arxiv/ end to end: the API queues a run, a real Celery worker executes it against the replay."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client

from apps.arxiv.models import RunStatus, SearchRun
from apps.arxiv.services import arxiv_limiter
from apps.connectors.services import manifest_import
from tests.arxiv.replay_server import ReplayArxiv, Reply


@pytest.fixture
def arxiv(settings) -> Iterator[ReplayArxiv]:
    server = ReplayArxiv().start()
    settings.ARXIV_API_URL = server.url
    settings.ARXIV_MIN_INTERVAL_SECONDS = 0.05
    arxiv_limiter().reset()
    yield server
    server.stop()


@pytest.fixture
def client(make_token) -> Client:
    _, raw = make_token("read", "upstream")
    return Client(headers={"Authorization": f"Bearer {raw}"})


def _search(client: Client, **body):
    return client.post("/v1/arxiv/search", body, content_type="application/json")


@pytest.mark.django_db(transaction=True)
def test_search_runs_on_the_worker_and_answers_within_the_wait(arxiv, client, celery_worker) -> None:
    response = _search(client, query="testing", maxResults=10)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["source"], body["brand"], body["cached"]) == (
        "succeeded",
        "arxiv",
        "brAInwav",
        False,
    )
    assert [item["id"] for item in body["items"]][:2] == [
        item["id"] for item in SearchRun.objects.get(pk=body["runId"]).result["items"][:2]
    ]
    assert "poll" not in body and None not in body.values()
    again = _search(client, query="testing", maxResults=10)
    assert again.json()["cached"] is True
    assert len(arxiv.arrivals) == 1


@pytest.mark.django_db(transaction=True)
def test_a_slow_run_answers_202_and_can_be_polled(arxiv, client, celery_worker, settings) -> None:
    settings.ARXIV_WAIT_SECONDS = 0.2
    arxiv.script.append(Reply(delay=1.0))
    response = _search(client, query="slow query")
    assert response.status_code == 202
    body = response.json()
    assert body == {
        "runId": body["runId"],
        "status": body["status"],
        "poll": f"/v1/arxiv/runs/{body['runId']}",
    }
    assert body["status"] in {"queued", "running"}
    settings.ARXIV_WAIT_SECONDS = 5
    run = SearchRun.objects.get(pk=body["runId"])
    from apps.arxiv.services import search_run_wait

    assert search_run_wait(run=run, timeout=10).status == RunStatus.SUCCEEDED
    polled = client.get(body["poll"])
    assert polled.status_code == 200
    assert len(polled.json()["items"]) == 10


@pytest.mark.django_db(transaction=True)
def test_rate_limited_run_answers_with_the_run_and_its_error(arxiv, client, celery_worker, settings) -> None:
    """The one failed-run contract: a finished run is the answer (200), its status says how it ended
    and ``error`` why — polling and the first answer read alike."""
    settings.ARXIV_MIN_INTERVAL_SECONDS = 5.0
    settings.ARXIV_RUN_DEADLINE_SECONDS = 1.0
    arxiv_limiter().reserve()  # someone else's request: the next slot is 5 s away
    response = _search(client, query="busy")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "rate_limited"
    assert (body["error"]["code"], body["error"]["details"]["retryable"]) == ("rate_limited", True)
    assert 4 <= body["error"]["details"]["retryAfter"] <= 5
    assert client.get(f"/v1/arxiv/runs/{body['runId']}").json() == body
    assert arxiv.arrivals == []


@pytest.mark.django_db(transaction=True)
def test_arxiv_search_through_the_tool_gateway_and_the_planner(arxiv, client, celery_worker) -> None:
    manifest = json.loads(
        (Path(django_settings.BASE_DIR) / "config" / "connectors.manifest.json").read_text()
    )
    manifest_import(data=manifest)
    plan = client.post(
        "/v1/agents/plan",
        {"intent": "literature_search", "query": "testing"},
        content_type="application/json",
    ).json()
    step = plan["steps"][0]
    response = client.post(
        "/v1/tools/call",
        {"name": step["tool"], "arguments": step["arguments"]},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["tool"], body["connector"]) == ("arxiv.search", "arxiv")
    assert len(body["result"]["items"]) == 10


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        {"query": "x"},
        {"query": "x" * 600},
        {"query": "testing", "maxResults": 0},
        {"query": "testing", "maxResults": 51},
        {"query": "testing", "sortBy": "popularity"},
        {"query": "testing", "dateFrom": "2024-13-01"},
        {"query": "testing", "dateFrom": "2024-05-02", "dateTo": "2024-05-01"},
        {"query": "testing", "start": -1},
        {"query": "testing", "extra": True},
        {"query": "(unbalanced"},
    ],
)
def test_bad_search_input_is_a_422(client, body: dict) -> None:
    response = _search(client, **body)
    assert response.status_code == 422, (body, response.content)
    assert response.json()["error"]["code"] == "validation_error"
    assert not SearchRun.objects.exists()


@pytest.mark.django_db
def test_bad_lookup_ids_are_named(client) -> None:
    response = client.post(
        "/v1/arxiv/lookup", {"ids": ["1605.08386", "not an id"]}, content_type="application/json"
    )
    assert response.status_code == 422
    assert "ids.1" in json.dumps(response.json()["error"]["details"])


@pytest.mark.django_db
def test_switched_off_feature_is_a_503_naming_the_flag(client, settings) -> None:
    settings.FEATURE_ARXIV = False
    for path, body in (
        ("/v1/arxiv/search", {"query": "testing"}),
        ("/v1/arxiv/lookup", {"ids": ["1605.08386"]}),
    ):
        response = client.post(path, body, content_type="application/json")
        assert response.status_code == 503
        assert response.json()["error"]["details"] == {"flag": "FEATURE_ARXIV"}


@pytest.mark.django_db
def test_switched_off_arxiv_is_absent_from_map_catalogue_and_plans(client, settings) -> None:
    manifest = json.loads(
        (Path(django_settings.BASE_DIR) / "config" / "connectors.manifest.json").read_text()
    )
    manifest_import(data=manifest)
    settings.FEATURE_ARXIV = False
    service_map = Client().get("/v1/connectors/service-map").json()
    assert [connector["id"] for connector in service_map["connectors"]] == ["perplexity", "wikidata"]
    assert "arxiv.search" not in [tool["name"] for tool in Client().get("/v1/tools").json()]
    plan = client.post(
        "/v1/agents/plan", {"intent": "literature_search", "query": "x"}, content_type="application/json"
    )
    assert plan.status_code == 422
    call = client.post(
        "/v1/tools/call",
        {"name": "arxiv.search", "arguments": {"query": "x y"}},
        content_type="application/json",
    )
    assert call.status_code == 503
    assert call.json()["error"]["details"]["flag"] == "FEATURE_ARXIV"


@pytest.mark.django_db
def test_unknown_run_is_404(client) -> None:
    response = client.get("/v1/arxiv/runs/00000000-0000-0000-0000-000000000000")
    assert response.status_code == 404
    assert client.get("/v1/arxiv/runs/not-a-uuid").status_code == 422
