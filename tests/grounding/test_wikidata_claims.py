"""Claims about named entities are checked on Wikidata through the fact workflow, citing statement
GUIDs (the local Wikidata replay; see tests/wikidata); a verification whose Wikidata could not be
reached says so, and its fact run is marked as made on its behalf (issue 24)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from apps.core.models import UpstreamRequest
from apps.grounding import services
from apps.grounding.models import Verification
from apps.mcp_server.services import Caller, mcp_tool_call
from apps.wikidata import clients, vectordb
from apps.wikidata import tasks as wikidata_tasks
from apps.wikidata.models import FactRun
from tests.conftest import role_client
from tests.grounding.test_judges import shipped_packs  # noqa: F401 - fixture
from tests.wikidata.conftest import wikidata, wikidata_registry  # noqa: F401 - fixtures
from tests.wikidata.replay_server import ReplayWikidata, Reply
from tests.wikidata.test_facts import CLOSED_PORT_URL, P31_GUID, Q42_KEYWORD_HIT, Q42_VECTOR_HIT

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
    # Wikidata answered: not degraded, and the run is the verification's.
    run = FactRun.objects.get()
    assert (run.purpose, run.status, run.degraded) == ("verification", "succeeded", False)
    assert (verification.degraded, verification.degraded_reason, verification.fact_run_id) == (
        False,
        "",
        run.pk,
    )
    assert verification.sources_note == "Wikidata was asked: 5 facts found."
    assert (result["degraded"], result["sourcesNote"], result["factRunId"]) == (
        False,
        "Wikidata was asked: 5 facts found.",
        str(run.pk),
    )
    assert "degradedReason" not in result


def test_a_named_claim_the_packs_hold_close_evidence_on_is_not_put_to_wikidata(
    q42: ReplayWikidata,
    shipped_packs: None,  # noqa: F811
) -> None:
    verification = services.claim_verify(
        claim="Core Web Vitals treat a Largest Contentful Paint of up to 2.5 seconds as good."
    )

    assert FactRun.objects.count() == 0 and q42.made("/w/api.php") == []
    assert verification.verdict == "unverified" and verification.leaning != "none"
    assert verification.fact_run_id is None and verification.degraded is False
    assert verification.sources_note == services.PACKS_SPEAK_NOTE
    # A named claim the packs know nothing close to is still put to Wikidata.
    services.claim_verify(claim="Douglas Adams was a human.")
    assert FactRun.objects.count() == 1


def _vector_slots_spent(settings) -> None:
    settings.WIKIDATA_VECTOR_INTERVAL_SECONDS = 2.0  # the product's budget (the replay barely spaces)
    vector_budget = clients.upstream_limiter(vectordb.UPSTREAM)
    vector_budget.reset()
    while vector_budget.try_acquire():  # the vector database's burst spent: the next slot is ~2 s away
        pass


def test_a_verification_does_not_wait_for_a_vector_slot_it_searches_by_keyword(
    q42: ReplayWikidata, settings
) -> None:
    _vector_slots_spent(settings)
    q42.script("/w/api.php", Reply(body=Q42_KEYWORD_HIT))

    verification = services.claim_verify(claim="Douglas Adams was a human.")

    assert q42.made("/item/query/") == []
    run = FactRun.objects.get()
    search = next(step for step in run.steps if step["name"] == "search")
    assert search["detail"] == {"via": "keyword", "phrase": "Douglas Adams", "hits": 1}
    assert re.fullmatch(
        r"the vector database was not asked: the Wikidata vector database had no free slot \(the next in "
        r"\d\.\d s\), and a caller who is waiting for an answer does not wait for one",
        search["fallback"],
    ), search["fallback"]
    assert verification.verdict == "supported" and verification.wikidata[0]["claimGuid"] == P31_GUID
    assert (run.degraded, verification.degraded) == (False, False)
    # Not a refusal the rate-limit alert would count: the caller went another way.
    assert not UpstreamRequest.objects.filter(upstream=vectordb.UPSTREAM).exists()


def test_a_verification_searches_wikidata_by_its_names_alone(q42: ReplayWikidata, settings) -> None:
    _vector_slots_spent(settings)  # keyword search, which finds nothing here

    services.claim_verify(claim="Douglas Adams was born in Cambridge in the spring of 1952.")

    searched = [request.params["search"] for request in q42.made("/w/api.php", action="wbsearchentities")]
    # Not also the claim's content words or the whole sentence: no label starts like those.
    assert searched == ["Douglas Adams", "Cambridge"]
    assert FactRun.objects.get().purpose == "verification"


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
    # A deployment without the fact tools did not ask Wikidata: said, but not a source that was down.
    assert verification.sources_note.startswith("Wikidata was not asked: ")
    assert (verification.degraded, verification.fact_run_id) == (False, None)
    assert FactRun.objects.count() == 0


# --- When Wikidata is down (issue 24: "unverified in 2.5 s with no word that Wikidata was unreachable") ---

CURIE = "Marie Curie won the Nobel Prize in Physics in 1903"
BUSY = "Wikidata search failed: the Wikidata Action API is busy or failing (HTTP 503); retry later"
# Refused connections open the Action API's breaker during the run's first keyword search (three
# failures in a row, apps.core.breaker); the run's later searches are refused unsent, and say so.
REFUSED = re.compile(
    r"Wikidata search failed: the Wikidata Action API could not be reached 3 times in a row "
    r"\(last: ConnectError: \[Errno 111\] Connection refused\); not tried again before \d\d:\d\d:\d\d UTC"
)


def _down(replay: ReplayWikidata, settings, how: str) -> re.Pattern[str]:
    """Wikidata answering 503 to everything, or refusing connections; the reason the run will give."""
    if how == "503":
        replay.default_vector = Reply(status=503, body={"detail": "Service Unavailable"})
        replay.script("/w/api.php", *[Reply(status=503, body={})] * 60)
        return re.compile(re.escape(BUSY))
    settings.WIKIDATA_API_URL = settings.WIKIDATA_VECTOR_URL = settings.WIKIDATA_SPARQL_URL = CLOSED_PORT_URL
    return REFUSED


@pytest.mark.parametrize("how", ["503", "refused"])
def test_an_unreachable_wikidata_is_said_and_leaves_no_succeeded_run(
    wikidata: ReplayWikidata,  # noqa: F811
    wikidata_registry: None,  # noqa: F811
    settings,
    make_token,
    how: str,
) -> None:
    expected_reason = _down(wikidata, settings, how)

    verification = services.claim_verify(claim=CURIE)

    reason = verification.degraded_reason
    assert expected_reason.fullmatch(reason), reason
    note = f"Wikidata could not be reached ({reason}), so the claim was judged on the knowledge base alone."
    assert verification.verdict == "unverified" and verification.wikidata == []
    assert (verification.degraded, verification.degraded_reason, verification.sources_note) == (
        True,
        reason,
        note,
    )
    # The run says what happened to it, and whom it was for: not a "succeeded" run with nothing.
    run = FactRun.objects.get()
    assert verification.fact_run_id == run.pk
    assert (run.purpose, run.status, run.degraded, run.degraded_reason) == (
        "verification",
        "degraded",
        True,
        reason,
    )
    assert run.facts.count() == 0 and run.knowledge == []
    result = services.verification_result(verification=verification)
    expected = {"degraded": True, "degradedReason": reason, "sourcesNote": note, "factRunId": str(run.pk)}
    assert {key: result[key] for key in expected} == expected

    # The same on /v1/knowledge/verify, the MCP tool, and /api/verifications/.
    token, raw = make_token("read", "verify")
    body = (
        Client(headers={"Authorization": f"Bearer {raw}"})
        .post("/v1/knowledge/verify", {"claim": CURIE}, content_type="application/json")
        .json()
    )
    assert {key: body[key] for key in ("degraded", "degradedReason", "sourcesNote")} == {
        "degraded": True,
        "degradedReason": reason,
        "sourcesNote": note,
    }
    assert FactRun.objects.get(pk=body["factRunId"]).status == "degraded"
    mcp = mcp_tool_call(
        name="knowledge.verify", arguments={"claim": CURIE}, caller=Caller("http", token=token)
    )
    assert {key: mcp.structured[key] for key in ("degraded", "degradedReason", "sourcesNote")} == {
        "degraded": True,
        "degradedReason": reason,
        "sourcesNote": note,
    }
    assert f"Wikidata could not be reached ({reason})" in mcp.text
    listed = (
        Client(headers={"Authorization": f"Bearer {raw}"}).get("/api/verifications/?degraded=true").json()
    )
    assert listed["count"] == 3
    record = next(item for item in listed["results"] if item["id"] == verification.pk)
    assert {key: record[key] for key in ("degraded", "degraded_reason", "sources_note", "fact_run")} == {
        "degraded": True,
        "degraded_reason": reason,
        "sources_note": note,
        "fact_run": str(run.pk),
    }
    assert FactRun.objects.filter(purpose="verification", status="degraded", degraded=True).count() == 3


def test_while_wikidata_is_unreachable_later_verifications_do_not_wait_for_it(
    wikidata: ReplayWikidata,  # noqa: F811
    wikidata_registry: None,  # noqa: F811
    settings,
) -> None:
    settings.WIKIDATA_API_URL = settings.WIKIDATA_VECTOR_URL = settings.WIKIDATA_SPARQL_URL = CLOSED_PORT_URL
    first = services.claim_verify(claim=CURIE)
    sent = UpstreamRequest.objects.count()
    assert sent == 6  # the vector database and the Action API, each tried three times

    second = services.claim_verify(claim="Albert Einstein was born in Ulm in 1879.")

    # Refused unsent by the breakers, with no backoff waited; still said, and still degraded.
    assert UpstreamRequest.objects.count() == sent
    assert (second.degraded, second.degraded_reason) == (True, first.degraded_reason)
    assert REFUSED.fullmatch(second.degraded_reason), second.degraded_reason
    run = FactRun.objects.get(pk=second.fact_run_id)
    assert (run.purpose, run.status, run.degraded) == ("verification", "degraded", True)


def test_the_pages_say_the_source_was_down_and_whom_the_run_was_for(
    wikidata: ReplayWikidata,  # noqa: F811
    wikidata_registry: None,  # noqa: F811
    settings,
) -> None:
    expected_reason = _down(wikidata, settings, "refused")
    verification = services.claim_verify(claim=CURIE)
    reason = verification.degraded_reason
    assert expected_reason.fullmatch(reason), reason
    run = FactRun.objects.get()
    client = role_client("grounding.view_verification", "wikidata.view_factrun")

    page = client.get(f"/verifications/{verification.pk}").content.decode()
    assert '<span class="badge badge-warn">source unreachable</span>' in page
    assert (
        '<dt>Wikidata</dt><dd class="sources-note degraded">Wikidata could not be reached '
        f"({reason}), so the claim was judged on the knowledge base alone. "
        f'(<a href="/facts/runs/{run.pk}">the fact run</a>)</dd>'
    ) in page

    run_page = client.get(f"/facts/runs/{run.pk}").content.decode()
    assert (
        '<dt>Made for</dt><dd class="run-purpose">a grounding verification checking this claim on Wikidata: '
        f'<a href="/verifications/{verification.pk}">verification {verification.pk}</a></dd>'
    ) in run_page
    assert (
        '<span class="badge status-degraded">Degraded</span> · '
        '<span class="run-answered">no answer: nothing stored matches</span>'
    ) in run_page
    assert (
        "<dt>Degraded</dt><dd>Wikidata could not be reached and no stored fact or knowledge entry "
        f"answers the question: {reason}</dd>"
    ) in run_page
    runs = client.get("/facts").content.decode()
    assert '<span class="badge">for a verification</span>' in runs


def test_stored_facts_stand_in_for_an_unreachable_wikidata_and_the_verification_says_so(
    q42: ReplayWikidata, settings
) -> None:
    services.claim_verify(claim="Douglas Adams was a human.")  # Wikidata up: its facts are stored
    settings.WIKIDATA_API_URL = settings.WIKIDATA_VECTOR_URL = settings.WIKIDATA_SPARQL_URL = CLOSED_PORT_URL

    verification = services.claim_verify(claim="Douglas Adams was a human being.")

    run = FactRun.objects.get(pk=verification.fact_run_id)
    reason = run.degraded_reason
    # Its one name tried three times, refused each time (the breaker opens after it).
    assert reason == (
        "Wikidata search failed: could not reach the Wikidata Action API (ConnectError: [Errno 111] "
        "Connection refused)"
    )
    assert (run.purpose, run.status, run.degraded) == ("verification", "degraded", True)
    assert verification.verdict == "supported" and verification.wikidata[0]["claimGuid"] == P31_GUID
    assert verification.wikidata[0]["degraded"] is True
    assert (verification.degraded, verification.degraded_reason) == (True, reason)
    assert verification.sources_note == (
        f"Wikidata could not be reached ({reason}); the claim was compared with 5 Wikidata facts stored by "
        "earlier runs instead."
    )
    assert Verification.objects.filter(degraded=False).count() == 1


def test_names_are_told_from_acronyms() -> None:
    assert services.names_entity("Marie Curie was born in Warsaw.")
    assert not services.names_entity("GDPR requires a DPO for large-scale processing.")


@pytest.mark.parametrize(
    ("claim", "named"),
    [
        # A first word that opens the sentence is capitalised anyway: one product is not a two-word name.
        ("Under SemVer 2.0.0, bug fixes bump the patch version.", False),
        ("Since Django 3.1, JSONField works on every backend.", False),
        ("Use Django's cache framework for pages.", False),
        ("Applying Little's law gives the queue length.", False),
        # What stays after the opening word still names something.
        ("The European Commission adopted the decision in July 2023.", True),
        ("In 1903 Marie Curie won the Nobel Prize in Physics.", True),
        ("Marie Curie won the Nobel Prize in Physics in 1903.", True),
    ],
)
def test_a_sentence_s_opening_word_is_not_part_of_a_name(claim: str, named: bool) -> None:
    assert services.names_entity(claim) is named


def test_the_fact_run_apis_tell_a_verification_s_runs_from_questions(
    q42: ReplayWikidata, read_client: Client
) -> None:
    from apps.wikidata import selectors as fact_selectors
    from apps.wikidata import services as fact_services

    asked = fact_services.fact_run_execute(
        run_id=str(fact_services.fact_query_submit(query="What is Douglas Adams?", enqueue=False).pk)
    )
    verification = services.claim_verify(claim="Douglas Adams was a human.")

    assert fact_selectors.fact_run_outcome(run=asked)["purpose"] == "question"
    listed = read_client.get("/api/fact-runs/?purpose=verification").json()
    assert [(run["id"], run["purpose"]) for run in listed["results"]] == [
        (str(verification.fact_run_id), "verification")
    ]
    assert read_client.get("/api/fact-runs/?purpose=question").json()["results"][0]["id"] == str(asked.pk)
    bad = read_client.get("/api/fact-runs/?purpose=audit")
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == "?purpose= takes one of question, verification, not 'audit'."
