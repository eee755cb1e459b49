"""Claims about named entities are checked on Wikidata through the fact workflow, citing statement
GUIDs (the local Wikidata replay; see tests/wikidata)."""

from __future__ import annotations

import pytest

from apps.grounding import services
from apps.wikidata import tasks as wikidata_tasks
from apps.wikidata.models import FactRun
from tests.wikidata.conftest import wikidata, wikidata_registry  # noqa: F401 - fixtures
from tests.wikidata.replay_server import ReplayWikidata, Reply
from tests.wikidata.test_facts import P31_GUID, Q42_VECTOR_HIT

pytestmark = pytest.mark.django_db


@pytest.fixture
def q42(wikidata: ReplayWikidata, wikidata_registry: None) -> ReplayWikidata:  # noqa: F811
    wikidata.default_vector = Reply(body=Q42_VECTOR_HIT)
    return wikidata


def test_a_true_entity_claim_is_supported_citing_the_statement(
    q42: ReplayWikidata, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    enqueued: list[str] = []
    monkeypatch.setattr(wikidata_tasks.fact_run_execute_task, "delay", enqueued.append)
    with django_capture_on_commit_callbacks(execute=True):
        verification = services.claim_verify(claim="Douglas Adams was a human.")
    # The fact run executed here, once: it was not also handed to a worker.
    assert enqueued == []
    assert FactRun.objects.get().executions == 1
    assert verification.verdict == "supported" and verification.domain is None
    cited = verification.wikidata[0]
    assert cited["claimGuid"] == P31_GUID and cited["entry_id"] == f"wikidata:{P31_GUID}"
    result = services.verification_result(verification=verification)
    assert result["domain"] == "wikidata" and result["sources"][0]["entry_id"] == f"wikidata:{P31_GUID}"


def test_a_false_entity_claim_is_contradicted_with_the_statement_as_correction(q42: ReplayWikidata) -> None:
    verification = services.claim_verify(claim="Douglas Adams was an instance of a cat.")
    assert verification.verdict == "contradicted"
    assert (
        "Douglas Adams — instance of — human" in verification.correction
        and P31_GUID in verification.correction
    )


def test_without_the_fact_tools_an_entity_claim_stays_unverified(db) -> None:
    verification = services.claim_verify(claim="Marie Curie was born in Warsaw.")
    assert verification.verdict == "unverified" and verification.wikidata == []


def test_names_are_told_from_acronyms() -> None:
    assert services.names_entity("Marie Curie was born in Warsaw.")
    assert not services.names_entity("GDPR requires a DPO for large-scale processing.")
