"""``/v1/facts/``: bad input, unknown runs, the 202 path, and a question answered end to end
through the API and a real Celery worker against the local Wikidata replay."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.wikidata.models import Fact, FactRun
from tests.conftest import role_client
from tests.wikidata.replay_server import ReplayWikidata, Reply
from tests.wikidata.test_facts import P31_GUID, P31_STATEMENT_URI, Q42_VECTOR_HIT

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   \n  "}, "query"),
        ({"query": "x" * 600}, "query"),
        ({"query": "Douglas Adams", "topK": 0}, "topK"),
        ({"query": "Douglas Adams", "topK": 100}, "topK"),
        ({"query": "Douglas Adams", "waitSeconds": 31}, "waitSeconds"),
        ({"query": "Douglas Adams", "scope": "everything"}, "scope"),
        ({"query": "Douglas Adams", "topk": 5}, "topk"),
        ({}, "query"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field_and_creates_no_run(
    upstream_client: Client, wikidata_registry: None, body: dict, field: str
) -> None:
    response = upstream_client.post("/v1/facts/query", body, content_type="application/json")
    assert 400 <= response.status_code < 500
    error = response.json()["error"]
    assert field in str(error)
    assert FactRun.objects.count() == 0


def test_a_malformed_body_is_a_400(upstream_client: Client) -> None:
    response = upstream_client.post("/v1/facts/query", "{not json", content_type="application/json")
    assert response.status_code == 400 and "error" in response.json()


def test_a_token_is_required(client: Client) -> None:
    response = client.post("/v1/facts/query", {"query": "Douglas Adams"}, content_type="application/json")
    assert response.status_code == 401


def test_an_unknown_run_is_a_404(upstream_client: Client) -> None:
    response = upstream_client.get("/v1/facts/runs/6b1f7c1e-5d0b-4a47-9f55-2f0c3f4b1a11")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert upstream_client.get("/v1/facts/runs/not-a-uuid").status_code in (404, 422)


def test_without_waiting_the_answer_is_202_with_the_run_to_poll(
    upstream_client: Client, wikidata_registry: None
) -> None:
    response = upstream_client.post(
        "/v1/facts/query", {"query": "Douglas Adams", "waitSeconds": 0}, content_type="application/json"
    )
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued" and body["poll"] == f"/v1/facts/runs/{body['runId']}"
    assert body["plan"]["steps"][0]["tool"] == "wikidata.vector_search_items"
    polled = upstream_client.get(body["poll"])
    assert polled.status_code == 202 and polled.json()["runId"] == body["runId"]


@pytest.mark.django_db(transaction=True)
def test_a_question_end_to_end_through_the_api_and_a_worker(
    celery_worker, wikidata: ReplayWikidata, wikidata_registry: None, upstream_client: Client
) -> None:
    wikidata.default_vector = Reply(body=Q42_VECTOR_HIT)
    response = upstream_client.post(
        "/v1/facts/query",
        {"query": "What is Douglas Adams an instance of?", "topK": 5, "waitSeconds": 30},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "succeeded" and body["degraded"] is False
    assert len(body["results"]) == 5
    best = body["results"][0]
    assert best["metadata"]["wikidata"]["claimGuid"] == P31_GUID
    assert best["metadata"]["wikidata"]["statementUri"] == P31_STATEMENT_URI
    assert "SELECT" in best["metadata"]["wikidata"]["sparql"]
    assert best["text"] == "Douglas Adams — instance of — human"
    assert [step["tool"] for step in body["plan"]["steps"]][:2] == [
        "wikidata.vector_search_items",
        "wikidata.get_claims",
    ]
    fact = Fact.objects.get(run_id=body["runId"], claim_guid=P31_GUID)
    assert best["provenanceUrl"] == f"http://testserver/facts/{fact.pk}"
    # the run as stored, and the provenance page an analyst opens
    again = upstream_client.get(f"/v1/facts/runs/{body['runId']}")
    assert again.status_code == 200 and again.json()["results"] == body["results"]
    page = role_client("wikidata.view_factrun").get(f"/facts/{fact.pk}")  # an analyst with the role
    assert page.status_code == 200
    assert P31_GUID in page.content.decode()
    turtle = upstream_client.get(f"/v1/facts/runs/{body['runId']}/prov.ttl")
    assert turtle.status_code == 200 and P31_STATEMENT_URI.rsplit("/", 1)[1] in turtle.content.decode()
