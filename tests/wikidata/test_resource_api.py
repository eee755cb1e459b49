"""``/api/facts/`` and ``/api/fact-runs/``: read-only, token-protected, filterable."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from apps.wikidata.models import Fact, FactRun, FactRunStatus

pytestmark = pytest.mark.django_db

GUID = "Q42$F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"


@pytest.fixture
def stored() -> Fact:
    run = FactRun.objects.create(
        question="What is Douglas Adams?", status=FactRunStatus.SUCCEEDED, degraded=True
    )
    FactRun.objects.create(question="Other", status=FactRunStatus.FAILED)
    return Fact.objects.create(
        run=run, position=1, text="Douglas Adams — instance of — human", score=0.86, qid="Q42", pid="P31",
        claim_guid=GUID, rank="normal", endpoint="https://www.wikidata.org/w/api.php",
        retrieved_at=datetime(2026, 11, 23, tzinfo=UTC), embedding=[0.0] * 383 + [1.0],
    )  # fmt: skip


def test_facts_are_listed_with_provenance_and_filterable(read_client: Client, stored: Fact) -> None:
    body = read_client.get("/api/facts/?qid=Q42").json()
    assert body["count"] == 1
    fact = body["results"][0]
    assert fact["claim_guid"] == GUID and fact["run"] == str(stored.run_id) and "embedding" not in fact
    assert read_client.get("/api/facts/?pid=P569").json()["count"] == 0
    assert read_client.get(f"/api/facts/{stored.pk}/").json()["qid"] == "Q42"


def test_runs_filter_by_status_and_degraded_and_refuse_bad_values(read_client: Client, stored: Fact) -> None:
    assert read_client.get("/api/fact-runs/?degraded=true").json()["count"] == 1
    assert read_client.get("/api/fact-runs/?status=failed").json()["results"][0]["question"] == "Other"
    bad = read_client.get("/api/fact-runs/?status=done")
    assert bad.status_code in (400, 422) and "status" in bad.json()["error"]["message"]


def test_writes_are_not_allowed_and_a_token_is_required(read_client: Client, stored: Fact) -> None:
    assert Client().get("/api/facts/").status_code == 401
    assert read_client.delete(f"/api/facts/{stored.pk}/").status_code in (403, 405)
    assert Fact.objects.filter(pk=stored.pk).exists()
