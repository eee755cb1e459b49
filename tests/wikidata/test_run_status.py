"""Honest fact-run statuses (issue 26 item 1): a run that could not reach Wikidata is ``degraded`` — its
own status over REST, the resource API, MCP, the /facts list (its own badge colour and filter) and the
dashboard — never "Succeeded"; a degraded run says what it answered from and the list counts what it
returned."""

from __future__ import annotations

import json
import re
import typing

import pytest
from django.test import Client

from apps.core.models import RunStatus
from apps.dashboard.selectors import fact_run_outcomes
from apps.knowledge.services import entries_import, pack_parse_json
from apps.mcp_server.services import Caller, mcp_tool_call
from apps.wikidata.models import FactRun, FactRunStatus
from apps.wikidata.schemas import FactRunOut
from tests.conftest import role_client
from tests.wikidata.replay_server import ReplayWikidata, Reply
from tests.wikidata.test_facts import _ask as _ask_here
from tests.wikidata.test_facts import q42  # noqa: F401 - the Q42 replay
from tests.wikidata.test_pages import make_run

BUSY = "Wikidata search failed: the Wikidata Action API is busy or failing (HTTP 503); retry later"
PASSWORDS = {
    "id": "SEC-001",
    "topic": "Password storage",
    "source": "OWASP Password Storage Cheat Sheet",
    "content": "Passwords must be stored with a slow, salted hash such as Argon2id, scrypt or bcrypt. "
    "Fast hashes such as MD5 or SHA-1 must never be used for passwords.",
}


@pytest.fixture
def knowledge_entry(db) -> None:
    """One curated entry (embedded on import) a degraded run can answer a password question from."""
    pack = pack_parse_json(json.dumps([PASSWORDS]))
    entries_import(domain_name="security", pack=pack, source_name="security", location="test")


def _wikidata_down(replay: ReplayWikidata, settings) -> None:
    """Every Wikidata upstream answers 503 (the vector database, the Action API, WDQS)."""
    settings.WIKIDATA_MAX_RETRIES = 0  # the outage, not the backoff, is under test
    replay.default_vector = Reply(status=503, body={"detail": "Service Unavailable"})
    replay.default_sparql = Reply(status=503, body={"detail": "Service Unavailable"})
    replay.script("/w/api.php", *[Reply(status=503, body={})] * 60)


def _ask(client: Client, question: str) -> dict:
    response = client.post(
        "/v1/facts/query", {"query": question, "waitSeconds": 20}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def _row(content: str, run: FactRun) -> str:
    """The /facts list's row of ``run``."""
    match = re.search(rf'<tr data-run-id="{run.pk}">(.*?)</tr>', content, re.S)
    assert match, content
    return match.group(1)


@pytest.mark.django_db(transaction=True)
def test_wikidata_answering_503_leaves_a_degraded_run_over_rest_and_on_the_facts_page(
    celery_worker, wikidata: ReplayWikidata, wikidata_registry: None, upstream_client: Client, settings
) -> None:
    _wikidata_down(wikidata, settings)

    body = _ask(upstream_client, "Who discovered penicillin?")

    run = FactRun.objects.get(pk=body["runId"])
    assert (run.status, run.degraded, run.degraded_reason) == ("degraded", True, BUSY)
    assert {
        key: body[key] for key in ("status", "degraded", "degradedReason", "answeredFrom", "results")
    } == {
        "status": "degraded",
        "degraded": True,
        "degradedReason": BUSY,
        "answeredFrom": "nothing",
        "results": [],
    }
    assert "error" not in body  # degraded is an answer (from stored data, here none), not an error
    assert upstream_client.get(f"/v1/facts/runs/{run.pk}").json() == body
    # The resource API: the status, and its filter.
    listed = upstream_client.get("/api/fact-runs/?status=degraded").json()
    assert [(item["id"], item["status"]) for item in listed["results"]] == [(str(run.pk), "degraded")]
    assert upstream_client.get("/api/fact-runs/?status=succeeded").json()["results"] == []

    content = role_client("wikidata.view_factrun").get("/facts").content.decode()
    row = _row(content, run)
    assert (
        '<td><span class="badge status-degraded">Degraded</span> · '
        '<span class="run-answered">no answer: nothing stored matches</span></td>' in row
    )
    assert "Succeeded" not in row
    assert "<td>0</td>" in row  # it returned nothing


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker", "wikidata_registry", "knowledge_entry")
def test_a_degraded_run_that_answered_from_knowledge_says_so_and_counts_its_answers(
    wikidata: ReplayWikidata, upstream_client: Client, make_token, settings
) -> None:
    _wikidata_down(wikidata, settings)

    body = _ask(upstream_client, "How must passwords be stored?")

    run = FactRun.objects.get(pk=body["runId"])
    entries = [item["metadata"]["knowledge"]["entryId"] for item in body["results"]]
    assert (body["status"], entries, body["answeredFrom"]) == ("degraded", ["SEC-001"], "1 knowledge entry")
    reader = role_client("wikidata.view_factrun")
    row = _row(reader.get("/facts").content.decode(), run)
    assert (
        '<span class="badge status-degraded">Degraded</span> · '
        '<span class="run-answered">answered from 1 knowledge entry</span>' in row
    )
    # The list counts what the run returned: the knowledge entry ("Facts 0" before).
    assert re.findall(r"<td>(\d+)</td>", row) == ["1"]
    detail = reader.get(f"/facts/runs/{run.pk}").content.decode()
    assert f"<dt>Degraded</dt><dd>Answered from 1 knowledge entry: {BUSY}</dd>" in detail
    # Over MCP: the status and what answered, in the text an agent reads first.
    token, _ = make_token("read")
    outcome = mcp_tool_call(
        name="facts.run", arguments={"runId": str(run.pk)}, caller=Caller(transport="http", token=token)
    )
    assert outcome.is_error is False
    assert (outcome.structured or {})["status"] == "degraded"
    assert outcome.text.splitlines()[0] == f"Fact run {run.pk}: degraded, answered from 1 knowledge entry"


@pytest.mark.django_db
def test_the_facts_list_filters_by_status_and_counts_stored_facts_and_entries() -> None:
    degraded = make_run(
        "Who discovered penicillin?",
        status=FactRunStatus.DEGRADED,
        degraded=True,
        degraded_reason=BUSY,
        knowledge=[{"entryId": f"MED-00{n}", "content": "…", "similarity": 0.6} for n in range(1, 5)],
    )
    succeeded = make_run("When was Douglas Adams born?")
    client = role_client("wikidata.view_factrun")

    content = client.get("/facts?status=degraded").content.decode()
    assert re.findall(r'<tr data-run-id="([^"]+)">', content) == [str(degraded.pk)]
    assert 'href="?status=degraded" aria-current="page">Degraded</a>' in content
    assert '<span class="run-answered">answered from 4 knowledge entries</span>' in _row(content, degraded)
    assert re.findall(r"<td>(\d+)</td>", _row(content, degraded)) == ["4"]
    everything = client.get("/facts").content.decode()
    assert re.findall(r'<tr data-run-id="([^"]+)">', everything) == [str(succeeded.pk), str(degraded.pk)]
    assert '<span class="badge status-succeeded">Succeeded</span></td>' in _row(everything, succeeded)


@pytest.mark.django_db
def test_an_unknown_status_filter_is_a_400_saying_what_it_takes() -> None:
    make_run()
    response = role_client("wikidata.view_factrun").get("/facts?status=sucess")
    assert response.status_code == 400
    content = response.content.decode()
    assert (
        '<p class="notice notice-error" role="alert">?status= takes one of queued, running, succeeded, '
        "degraded, failed, not &#x27;sucess&#x27;.</p>" in content
    )
    assert "<tr data-run-id=" not in content  # no runs listed under a filter that was not understood


@pytest.mark.django_db
def test_degraded_is_finished_everywhere_the_status_is_read() -> None:
    run = make_run(status=FactRunStatus.DEGRADED, degraded=True, degraded_reason=BUSY)
    assert not run.pending
    assert list(FactRun.objects.finished()) == [run]
    assert list(FactRun.objects.pending()) == []
    # The dashboard counts it as degraded, not as queued or running.
    outcomes = fact_run_outcomes()
    assert (outcomes.pending, sum(day.degraded for day in outcomes.days)) == (0, 1)
    assert sum(day.succeeded for day in outcomes.days) == 0


def test_the_published_status_enum_is_the_models() -> None:
    published = typing.get_args(FactRunOut.model_fields["status"].annotation)
    assert (
        list(published)
        == FactRunStatus.values
        == [
            "queued",
            "running",
            "succeeded",
            "degraded",
            "failed",
        ]
    )
    assert FactRunStatus is RunStatus


# --- A run that reached Wikidata partly (docs/api.md "Run statuses") ----------------------------


@pytest.mark.django_db
def test_a_run_whose_sparql_step_could_not_reach_wikidata_keeps_its_facts_and_is_degraded(
    q42: ReplayWikidata,  # noqa: F811
    settings,
) -> None:
    settings.WIKIDATA_MAX_RETRIES = 0
    q42.script("/sparql", Reply(status=503, body={"detail": "Service Unavailable"}))
    run = _ask_here()
    sparql = next(step for step in run.steps if step["name"] == "sparql")
    assert (sparql["status"], sparql["retryable"]) == ("failed", True)
    assert (
        run.status,
        run.degraded,
        run.facts.count(),
        run.facts.filter(derived_from__isnull=True).count(),
    ) == (
        "degraded",
        True,
        5,
        5,
    )
    assert run.degraded_reason == (
        f"Wikidata sparql failed: {sparql['error']} (the facts are Wikidata's, without what those steps add)"
    )
    assert run.answered_from == "5 Wikidata facts"


@pytest.mark.django_db
def test_a_sparql_step_wikidata_answered_with_an_error_leaves_the_run_succeeded(
    q42: ReplayWikidata,  # noqa: F811
) -> None:
    q42.script("/sparql", Reply(status=400, body=b"Parse error"))
    run = _ask_here()
    assert (run.status, run.degraded, run.facts.count()) == ("succeeded", False, 5)
