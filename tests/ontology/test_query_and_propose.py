"""``ontology_query`` and ``ontology_propose`` (seed 003) on the starter ontology: the contracts with
exact values, query safety, propose's auth, limit and consistency checks, and the operators' review."""

from __future__ import annotations

import math
import multiprocessing
import time
from typing import Any

import pytest
from django.test import Client

from apps.core.errors import Conflict, ValidationFailed
from apps.mcp_server.services import Caller, mcp_tool_call
from apps.ontology import graph as ontology_graph_module
from apps.ontology import services
from apps.ontology.graph import ontology_graph
from apps.ontology.models import NAMESPACE, OntologyClass, OntologyProposal
from apps.ontology.proposals import proposal_approve, proposal_reject, propose_limiter
from apps.ontology.sparql import ROW_CAP, ontology_query
from tests.conftest import make_user
from tests.mcp_server.conftest import subprocess_environment
from tests.ontology.propose_process import propose_repeatedly

SPAWN = multiprocessing.get_context("spawn")

CW = NAMESPACE


_STARTER_VECTORS: dict[str, list[float]] = {}


@pytest.fixture
def ontology(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The starter ontology at version 1, its embeddings computed once per session (they do not change)."""

    def embed_cached(*, texts: list[str]) -> list[list[float]]:
        missing = [text for text in texts if text not in _STARTER_VECTORS]
        if missing:
            _STARTER_VECTORS.update(zip(missing, real_embed_texts(texts=missing), strict=True))
        return [_STARTER_VECTORS[text] for text in texts]

    real_embed_texts = services.embed_texts
    monkeypatch.setattr(services, "embed_texts", embed_cached)
    # The graph cache is keyed by the version alone and each test's rolled-back database restarts at 1:
    # a graph of version 1 is the starter ontology's, any other is a previous test's.
    cached = ontology_graph_module._cache.get("graph")
    if cached is not None and cached.version != 1:
        ontology_graph_module._cache.clear()
    services.ontology_load_default_if_empty()


def query(sparql: str, client: Client | None = None) -> Any:
    response = (client or Client()).post(
        "/ontology-agent/query", {"sparql": sparql}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()


# ------------------------------------------------------------------------------------------------ query


def test_query_answers_inferred_subclasses_anonymously(ontology: None) -> None:
    answer = query(
        "SELECT ?class WHERE { ?class rdfs:subClassOf cw:CWE74Injection . "
        "FILTER(?class NOT IN (cw:CWE74Injection, owl:Nothing)) } ORDER BY ?class LIMIT 50"
    )
    # CWE-89 and CWE-78 are under CWE-943 / CWE-77 in their notes: only the closure puts them here.
    assert answer == {
        "success": True,
        "validation": {"valid": True, "errors": [], "hints": []},
        "query_type": "SELECT",
        "translated_sparql": None,
        "result": {
            "columns": ["class"],
            "rows": [
                {"class": CW + "CWE77CommandInjection"},
                {"class": CW + "CWE78OsCommandInjection"},
                {"class": CW + "CWE79CrossSiteScripting"},
                {"class": CW + "CWE89SqlInjection"},
                {"class": CW + "CWE943ImproperNeutralizationInDataQueryLogic"},
            ],
            "row_count": 5,
            "truncated": False,
        },
    }


def test_ask_answers_one_boolean_row(ontology: None) -> None:
    answer = query("ASK { cw:CWE89SqlInjection rdfs:subClassOf cw:CWE707ImproperNeutralization }")
    assert answer["query_type"] == "ASK"
    assert answer["result"] == {
        "columns": ["ask"],
        "rows": [{"ask": True}],
        "row_count": 1,
        "truncated": False,
    }


def test_an_unknown_cw_name_is_refused_with_did_you_mean(ontology: None) -> None:
    answer = query("SELECT ?c WHERE { ?c rdfs:subClassOf cw:ImproperAccesControl } LIMIT 5")
    assert answer["success"] is False and answer["result"] is None
    assert answer["validation"]["errors"] == [
        "cw:ImproperAccesControl is not a class or property of the ontology."
    ]
    assert answer["validation"]["hints"][0].startswith(
        "cw:ImproperAccesControl: did you mean `cw:CWE284ImproperAccessControl`"
    )


def test_a_syntax_error_names_the_parser_message_and_position(ontology: None) -> None:
    answer = query("SELECT ?c\nWHERE { ?c ?p  }")
    assert answer["validation"] == {
        "valid": False,
        "errors": ["SPARQL syntax error at line 2, column 9: Expected SelectQuery."],
        "hints": [],
    }


@pytest.mark.parametrize(
    ("sparql", "error"),
    [
        ("INSERT DATA {{ cw:A rdfs:subClassOf cw:B }}", "found the update keyword INSERT DATA"),
        ("DELETE WHERE {{ ?s ?p ?o }}", "found the update keyword DELETE WHERE"),
        ("LOAD <{url}>", "found the update keyword LOAD"),
        ("SELECT * WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}", "found SERVICE <{url}>"),
        (
            "SELECT * WHERE {{ ?s ?p ?o OPTIONAL {{ {{ SERVICE SILENT <{url}> {{ ?s ?q ?r }} }} }} }}",
            "found SERVICE <{url}>",
        ),
        ("SELECT * FROM <{url}> WHERE {{ ?s ?p ?o }}", "FROM and FROM NAMED are not allowed"),
        ("SELECT * FROM NAMED <{url}> WHERE {{ ?s ?p ?o }}", "FROM and FROM NAMED are not allowed"),
        ("CONSTRUCT {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }}", "CONSTRUCT queries are not served here"),
    ],
)
def test_writes_federation_and_remote_graphs_are_refused_and_nothing_is_fetched(
    ontology: None, listener: Any, sparql: str, error: str
) -> None:
    answer = query(sparql.format(url=listener.url))
    assert answer["success"] is False and answer["result"] is None
    assert error.format(url=listener.url) in " ".join(answer["validation"]["errors"])
    assert listener.connections == 0


def test_a_cartesian_product_without_limit_is_capped_fast(ontology: None) -> None:
    started = time.monotonic()
    # Subjects only: with every column (long literals among the objects) the rows can pass the 1 MB
    # byte cap before the row cap, depending on which triples the graph yields first.
    answer = query("SELECT ?a ?d ?g WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }")
    assert time.monotonic() - started < 5
    assert answer["success"] is True
    assert answer["result"]["row_count"] == ROW_CAP and answer["result"]["truncated"] is True
    assert answer["validation"]["hints"] == [
        f"The query has no LIMIT: LIMIT {ROW_CAP} (the row cap) was applied."
    ]
    capped = query("SELECT ?a WHERE { ?a ?b ?c } LIMIT 5000")
    assert capped["result"]["row_count"] == ROW_CAP and capped["result"]["truncated"] is True
    assert "LIMIT 5000 is above the row cap" in capped["validation"]["hints"][0]


def test_a_query_that_never_yields_is_stopped_at_the_time_limit(ontology: None) -> None:
    ontology_query(sparql="ASK {}")  # the graph built first: only the query is timed
    started = time.monotonic()
    answer = ontology_query(
        sparql="SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } ORDER BY ?a ?d ?g", time_limit=0.5
    )
    assert time.monotonic() - started < 3
    assert answer["success"] is False and answer["result"] is None
    assert answer["validation"]["errors"][0].startswith("The query ran past the 0.5 s time limit")


@pytest.mark.parametrize("body", [{}, {"sparql": ""}, {"SPARQL": "ASK {}"}, {"sparql": "ASK {}", "extra": 1}])
def test_query_bad_input_is_a_422(ontology: None, body: dict[str, Any]) -> None:
    response = Client().post("/ontology-agent/query", body, content_type="application/json")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"


# ---------------------------------------------------------------------------------------------- propose

CREATE = {
    "action": "create",
    "preferred_term": "Server-Side Template Injection",
    "definition": "An injection weakness in which user input is embedded into a server-side template and "
    "evaluated by the template engine, letting an attacker run expressions or code on the server.",
    "owl_class": "cw:ServerSideTemplateInjection",
    "physicality": "VirtualEntity",
    "role": "Quality",
    "domain": "security",
    "is_subclass_of": ["cw:CWE74Injection"],
    "relationships": {"relates-to": ["cw:Injection"]},
    "alt_terms": ["SSTI"],
    "source": "[CWE-1336](https://cwe.mitre.org/data/definitions/1336.html)",
}


@pytest.fixture
def writer(make_token) -> tuple[Any, Client]:
    token, raw = make_token("write", name="proposer")
    propose_limiter(token=token).reset()
    return token, Client(headers={"Authorization": f"Bearer {raw}"})


def propose(client: Client, proposal: dict[str, Any], context: dict[str, Any] | None = None) -> Any:
    body = {"proposal": proposal, "agentContext": context or {"agent_type": "test"}}
    return client.post("/ontology-agent/propose", body, content_type="application/json")


def test_propose_needs_a_write_token_and_ignores_the_identity_in_the_body(
    ontology: None, make_token, writer: tuple[Any, Client]
) -> None:
    assert propose(Client(), CREATE).status_code == 401
    _, read_raw = make_token("read", name="reader")
    assert propose(Client(headers={"Authorization": f"Bearer {read_raw}"}), CREATE).status_code == 403
    token, client = writer
    response = propose(client, CREATE, {"agent_id": "someone-else", "user_id": "admin", "confidence": 0.9})
    assert response.status_code == 200, response.content
    result = response.json()["proposal"]
    assert "pr_url" not in result and result["status"] == "Staged" and result["action"] == "create"
    assert result["target_iri"] == CW + "ServerSideTemplateInjection"
    # The parent's closure ancestors come along: CWE-74 is under CWE-707.
    assert result["consistency"] == {
        "consistent": True,
        "new_subsumptions": [
            CW + "CWE707ImproperNeutralization",
            CW + "CweWeakness",
            CW + "SecurityWeakness",
        ],
        "explanation": None,
        "problems": [],
    }
    # completeness 1, definition 25+ words 1, parent known 1, cwe.mitre.org 1, consistent 1.
    assert result["quality_score"] == 1.0
    assert result["markdown_preview"].startswith("- ### OntologyBlock\n  - term-id:: CW-SEC-")
    assert "  - is-subclass-of:: [[CWE74Injection]]\n" in result["markdown_preview"]
    staged = OntologyProposal.objects.get(pk=result["proposal_id"])
    assert staged.token == token
    assert staged.agent_context == {
        "agent_id": f"token:{token.prefix}",
        "user_id": f"token:{token.pk}",
        "claimed_agent_id": "someone-else",
        "claimed_user_id": "admin",
        "confidence": 0.9,
    }


def test_inconsistent_proposals_are_staged_with_an_explanation(
    ontology: None, writer: tuple[Any, Client]
) -> None:
    _, client = writer
    cycle = propose(
        client,
        {
            "action": "amend",
            "target_iri": CW + "CWE74Injection",
            "amendment": {"add_relationships": {"is-subclass-of": ["cw:CWE89SqlInjection"]}},
        },
    ).json()["proposal"]
    assert cycle["status"] == "Staged" and cycle["consistency"]["consistent"] is False
    assert [p["kind"] for p in cycle["consistency"]["problems"]] == ["subclass_cycle"]
    assert "cw:CWE74Injection ⊑ cw:CWE89SqlInjection" in cycle["consistency"]["explanation"]
    assert "+  - is-subclass-of:: [[CWE707ImproperNeutralization]], [[CWE89SqlInjection]]" in cycle["diff"]

    unknown = propose(client, {**CREATE, "is_subclass_of": ["cw:NoSuchParent"]}).json()["proposal"]
    assert unknown["consistency"]["problems"] == [
        {
            "kind": "unknown_parent",
            "message": "cw:NoSuchParent is not a class of the ontology, so it cannot be a parent.",
        }
    ]
    assert unknown["quality_score"] < 0.7

    disjoint = OntologyClass.objects.exclude(disjoint_iris=[]).first()
    assert disjoint is not None
    both = [disjoint.iri, disjoint.disjoint_iris[0]]
    violation = propose(client, {**CREATE, "is_subclass_of": both}).json()["proposal"]
    assert [p["kind"] for p in violation["consistency"]["problems"]] == ["disjointness_violation"]
    assert "declared disjoint" in violation["consistency"]["explanation"]


def test_an_approved_proposal_is_merged_into_the_graph_and_bumps_the_version(
    ontology: None, writer: tuple[Any, Client]
) -> None:
    _, client = writer
    staged = propose(client, CREATE).json()["proposal"]
    version = ontology_graph().version
    reviewer = make_user("reviewer", "ontology.change_ontologyproposal")
    merged = proposal_approve(proposal_id=staged["proposal_id"], reviewer=reviewer)
    assert (
        merged.status == "merged" and merged.merged_version == version + 1 and merged.reviewed_by == reviewer
    )
    graph = ontology_graph()
    new = CW + "ServerSideTemplateInjection"
    assert graph.version == version + 1 and new in graph.classes
    assert CW + "CWE707ImproperNeutralization" in graph.inferred_ancestors(new)
    assert OntologyClass.objects.get(iri=new).embedding is not None
    answer = query(
        "SELECT ?c WHERE { ?c rdfs:subClassOf cw:CWE707ImproperNeutralization . ?c skos:altLabel 'SSTI' }"
    )
    assert answer["result"]["rows"] == [{"c": new}]
    with pytest.raises(Conflict):
        proposal_approve(proposal_id=staged["proposal_id"], reviewer=reviewer)


def test_an_inconsistent_proposal_cannot_be_approved_and_a_rejection_records_why(
    ontology: None, writer: tuple[Any, Client]
) -> None:
    _, client = writer
    bad = propose(client, {**CREATE, "is_subclass_of": ["cw:NoSuchParent"]}).json()["proposal"]
    reviewer = make_user("reviewer", "ontology.change_ontologyproposal")
    with pytest.raises(Conflict) as refused:
        proposal_approve(proposal_id=bad["proposal_id"], reviewer=reviewer)
    assert "cw:NoSuchParent is not a class" in refused.value.message
    with pytest.raises(ValidationFailed):
        proposal_reject(proposal_id=bad["proposal_id"], reviewer=reviewer, note=" ")
    rejected = proposal_reject(proposal_id=bad["proposal_id"], reviewer=reviewer, note="Unknown parent.")
    assert (rejected.status, rejected.review_note, rejected.reviewed_by) == (
        "rejected",
        "Unknown parent.",
        reviewer,
    )


def test_the_admin_lists_proposals_and_approves_them(ontology: None, writer: tuple[Any, Client]) -> None:
    _, client = writer
    staged = propose(client, CREATE).json()["proposal"]
    operator = make_user("operator", is_superuser=True)
    admin = Client()
    admin.force_login(operator)
    assert admin.get("/admin/ontology/ontologyproposal/").status_code == 200
    page = admin.get(f"/admin/ontology/ontologyproposal/{staged['proposal_id']}/change/")
    assert page.status_code == 200 and b"is-subclass-of:: [[CWE74Injection]]" in page.content
    response = admin.post(
        "/admin/ontology/ontologyproposal/",
        {"action": "approve", "_selected_action": [staged["proposal_id"]]},
        follow=True,
    )
    assert response.status_code == 200
    assert OntologyProposal.objects.get(pk=staged["proposal_id"]).status == "merged"
    assert admin.get("/admin/ontology/ontologyclass/?q=SSTI").status_code == 200


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"proposal": {**CREATE, "definition": "x" * (1024 * 1024)}}, 413),
        ({"Proposal": CREATE}, 422),
        ({"proposal": CREATE, "agent_context": {}}, 422),
        ({"proposal": {**CREATE, "preferredTerm": "camel"}}, 422),
        ({"proposal": {**CREATE, "action": "delete"}}, 422),
        ({"proposal": {**CREATE, "owl_class": "cw:not a name"}}, 422),
        ({"proposal": {"action": "amend", "target_iri": CW + "Nope", "amendment": {}}}, 404),
        ({"proposal": {**CREATE, "owl_class": "cw:CWE89SqlInjection"}}, 409),
    ],
)
def test_propose_bad_input_is_a_4xx_error(
    ontology: None, writer: tuple[Any, Client], body: dict[str, Any], status: int
) -> None:
    _, client = writer
    response = client.post("/ontology-agent/propose", body, content_type="application/json")
    assert response.status_code == status, response.content
    assert set(response.json()["error"]) >= {"code", "message"}


def test_the_twenty_first_proposal_in_a_minute_gets_429_with_the_wait(
    ontology: None, writer: tuple[Any, Client]
) -> None:
    _, client = writer
    amend = {
        "action": "amend",
        "target_iri": CW + "CWE89SqlInjection",
        "amendment": {"add_alt_terms": ["SQLi"]},
    }
    assert [propose(client, amend).status_code for _ in range(20)] == [200] * 20
    refused = propose(client, amend)
    assert refused.status_code == 429
    # The first of the 20 leaves the 60 s window first: the wait is the rest of its minute.
    wait = refused.json()["error"]["details"]["retryAfter"]
    assert 0 < wait <= 60 and refused["Retry-After"] == str(math.ceil(wait))


PROCESSES, PROPOSALS_EACH = 3, 12


@pytest.mark.django_db(transaction=True)
def test_three_processes_proposing_with_one_token_get_exactly_twenty(ontology: None, make_token) -> None:
    token, raw = make_token("write", name="racing-proposer")
    propose_limiter(token=token).reset()
    env = subprocess_environment(LOG_LEVEL="WARNING")
    messages, start = SPAWN.Queue(), SPAWN.Event()
    hosts = [
        SPAWN.Process(target=propose_repeatedly, args=(env, raw, PROPOSALS_EACH, messages, start))
        for _ in range(PROCESSES)
    ]
    for host in hosts:
        host.start()
    try:
        ready = [messages.get(timeout=180) for _ in hosts]
        assert sorted(pid for _, pid in ready) == sorted(host.pid for host in hosts)
        began = time.monotonic()
        start.set()
        finished = [messages.get(timeout=300) for _ in hosts]
    finally:
        for host in hosts:
            host.join(timeout=60)
    assert [host.exitcode for host in hosts] == [0] * PROCESSES
    # All within the limiter's 60 s window: exactly 20 may pass, however the processes interleave.
    assert time.monotonic() - began < 60, [seconds for _, _, seconds in finished]
    statuses = [status for _, host_statuses, _ in finished for status in host_statuses]
    assert sorted(statuses) == [200] * 20 + [429] * (PROCESSES * PROPOSALS_EACH - 20)
    assert OntologyProposal.objects.filter(token=token).count() == 20


# -------------------------------------------------------------------------------------------------- MCP


def test_the_mcp_tools_answer_as_their_http_twins(ontology: None, writer: tuple[Any, Client]) -> None:
    token, _ = writer
    sparql = "SELECT ?c WHERE { ?c rdfs:subClassOf cw:CWE943ImproperNeutralizationInDataQueryLogic } LIMIT 10"
    anonymous = Caller(transport="mcp-http", token=None)
    outcome = mcp_tool_call(name="ontology_query", arguments={"sparql": sparql}, caller=anonymous)
    # MCP leaves out null fields (translated_sparql of a SPARQL query); the rest is the same.
    rest = {key: value for key, value in query(sparql).items() if value is not None}
    assert outcome.is_error is False and outcome.structured == rest
    refused = mcp_tool_call(name="ontology_propose", arguments={"proposal": CREATE}, caller=anonymous)
    assert refused.is_error is True and refused.text.startswith("authentication_required:")
    staged = mcp_tool_call(
        name="ontology_propose",
        arguments={"proposal": CREATE, "agentContext": {"agent_id": "spoofed"}},
        caller=Caller(transport="mcp-http", token=token),
    )
    assert staged.is_error is False, staged.text
    assert staged.structured["proposal"]["status"] == "Staged"
    row = OntologyProposal.objects.get(pk=staged.structured["proposal"]["proposal_id"])
    assert (
        row.agent_context["agent_id"] == f"token:{token.prefix}"
        and row.agent_context["claimed_agent_id"] == "spoofed"
    )
