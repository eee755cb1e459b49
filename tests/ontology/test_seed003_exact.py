"""Seed 003 to the letter (issue #25 item 4): ``ontology_query``'s ``cypher`` input (a read-only
subset translated to SPARQL that runs on the same hardened path), short names wherever an IRI is,
and ProposalResult ``status`` as ``Staged | PRCreated | Merged | Rejected``.

The seed (/work/shared/seeds/003_*.txt), quoted:

    ontology_query … Input: | cypher | string | yes | Cypher query (read-only) |
    ontology_propose … action: "amend" — { "target_iri": string, "amendment": NoteAmendment }
    status | enum | Staged | PRCreated | Merged | Rejected
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from apps.mcp_server.services import Caller, mcp_tool_call
from apps.ontology.cypher import SUPPORTED_HINT
from apps.ontology.models import NAMESPACE, OntologyProposal
from apps.ontology.proposals import proposal_approve, proposal_reject
from tests.conftest import make_user
from tests.ontology.test_query_and_propose import ontology, propose, writer  # noqa: F401 - fixtures

CW = NAMESPACE
SEED_CYPHER = "MATCH (a)-[:subClassOf]->(b) WHERE a.iri = 'cw:CWE89SqlInjection' RETURN a, b LIMIT 10"


def post_query(body: dict[str, Any]) -> Any:
    return Client().post("/ontology-agent/query", body, content_type="application/json")


def test_the_seeds_cypher_request_is_translated_and_answered(ontology: None) -> None:  # noqa: F811
    response = post_query({"cypher": SEED_CYPHER})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["translated_sparql"] == (
        "SELECT ?a ?b\n"
        "WHERE {\n"
        "  ?a a owl:Class .\n"
        "  ?b a owl:Class .\n"
        "  ?a rdfs:subClassOf ?b .\n"
        "  FILTER(?a != ?b)\n"
        "  FILTER(?a = cw:CWE89SqlInjection)\n"
        "}\n"
        "LIMIT 10"
    )
    assert body["success"] is True and body["validation"] == {"valid": True, "errors": [], "hints": []}
    assert body["result"]["columns"] == ["a", "b"]
    # The asserted parent and what the reasoner derives above it (the closure), never the class itself.
    parents = sorted(row["b"] for row in body["result"]["rows"])
    assert parents == [
        "http://www.w3.org/2002/07/owl#Thing",
        CW + "CWE707ImproperNeutralization",
        CW + "CWE74Injection",
        CW + "CWE943ImproperNeutralizationInDataQueryLogic",
        CW + "CweWeakness",
        CW + "SecurityWeakness",
    ]
    assert {row["a"] for row in body["result"]["rows"]} == {CW + "CWE89SqlInjection"}


def test_properties_paths_and_boolean_conditions_translate_exactly(ontology: None) -> None:  # noqa: F811
    cypher = (
        'MATCH (w:Class)-[:subClassOf*1..2]->(p) WHERE w.label CONTAINS "SQL" AND '
        "(p.name STARTS WITH 'CWE7' OR NOT p.label ENDS WITH 'x\\'') "
        "RETURN DISTINCT w.label, p.name AS parent"
    )
    body = post_query({"cypher": cypher}).json()
    assert body["translated_sparql"] == (
        'SELECT DISTINCT ?w__label (REPLACE(STR(?p), "^.*[#/]", "") AS ?parent)\n'
        "WHERE {\n"
        "  ?w a owl:Class .\n"
        "  ?p a owl:Class .\n"
        "  ?w (rdfs:subClassOf|rdfs:subClassOf/rdfs:subClassOf) ?p .\n"
        "  FILTER(?w != ?p)\n"
        "  ?w rdfs:label ?w__label .\n"
        "  ?p rdfs:label ?p__label .\n"
        '  FILTER(CONTAINS(STR(?w__label), "SQL") && (STRSTARTS(REPLACE(STR(?p), "^.*[#/]", ""), "CWE7") || '
        '!(STRENDS(STR(?p__label), "x\'"))))\n'
        "}"
    )
    assert body["validation"]["valid"] is True, body
    assert body["result"]["columns"] == ["w.label", "parent"]
    # Two hops on the closure reach every superclass with a label (owl:Thing has none).
    assert sorted(row["parent"] for row in body["result"]["rows"]) == [
        "CWE707ImproperNeutralization",
        "CWE74Injection",
        "CWE943ImproperNeutralizationInDataQueryLogic",
        "CweWeakness",
        "SecurityWeakness",
    ]
    assert {row["w.label"] for row in body["result"]["rows"]} == {"CWE-89 SQL Injection"}


def test_a_note_relationship_named_as_in_the_notes(ontology: None) -> None:  # noqa: F811
    body = post_query(
        {"cypher": "MATCH (a)-[:`relates-to`]->(b) WHERE a.name = 'CWE89SqlInjection' RETURN b.iri"}
    ).json()
    assert "?a cw:relatesTo ?b ." in body["translated_sparql"]
    assert body["result"]["rows"] == [{"b.iri": CW + "Injection"}]
    # No LIMIT: the row cap is applied and said, as for SPARQL (the same path).
    assert body["validation"]["hints"] == ["The query has no LIMIT: LIMIT 1000 (the row cap) was applied."]


@pytest.mark.parametrize(
    ("cypher", "error"),
    [
        (
            "CREATE (a:Class {name: 'X'})",
            "Cypher CREATE changes the graph: ontology_query is read-only; "
            "changes go through ontology_propose.",
        ),
        (
            "MATCH (a) SET a.label = 'x' RETURN a",
            "Cypher SET changes the graph: ontology_query is read-only; changes go through ontology_propose.",
        ),
        (
            "MATCH (a) DETACH DELETE a",
            "Cypher DETACH changes the graph: ontology_query is read-only; changes "
            "go through ontology_propose.",
        ),
        (
            "MERGE (a) RETURN a",
            "Cypher MERGE changes the graph: ontology_query is read-only; changes go "
            "through ontology_propose.",
        ),
        ("CALL db.labels()", "Cypher CALL is outside the supported subset."),
        ("MATCH (a) MATCH (b) RETURN a, b", "Only one MATCH clause is supported."),
        ("MATCH (a) RETURN a ORDER BY a", "Cypher ORDER is outside the supported subset."),
        (
            "MATCH (a)-[:parentOf]->(b) RETURN a",
            "Unknown relationship type 'parentOf'; the ontology's are "
            "causes, derivedFrom, disjointWith, enables, hasPart, implements, isPartOf, mitigates, "
            "regulates, relatesTo, requires, subClassOf, uses.",
        ),
        (
            "MATCH (a) WHERE a.score = '1' RETURN a",
            "Property a.score is unknown: classes have iri, name and label.",
        ),
        ("MATCH (a) RETURN b", "Variable b is not in the MATCH pattern."),
        (
            "MATCH (a)-[:subClassOf*0..9]->(b) RETURN a",
            "Variable-length relationships start at 1 hop (*1..n).",
        ),
        (
            "MATCH (a) WHERE a.iri = 'x> } ; DROP' RETURN a",
            "'x> } ; DROP' is not an IRI or a short name such as cw:CWE89SqlInjection.",
        ),
        (
            "MATCH (a) WHERE a.label =~ '.*' RETURN a",
            "Unsupported comparison '=~' at character 25: use =, <>, CONTAINS, STARTS WITH or ENDS WITH.",
        ),
        ("MATCH (a) RETURN a LIMIT 5; MATCH (b) RETURN b", "Unexpected character ';' at character 27."),
        (
            "MATCH (a:Person) RETURN a",
            "Node label :Person is unknown: nodes are classes (:Class or no label).",
        ),
    ],
)
def test_everything_outside_the_subset_is_refused_with_the_supported_forms(
    ontology: None,  # noqa: F811
    cypher: str,
    error: str,
) -> None:
    response = post_query({"cypher": cypher})
    assert response.status_code == 200, response.content
    assert response.json() == {
        "success": False,
        "validation": {"valid": False, "errors": [error], "hints": [SUPPORTED_HINT]},
        "query_type": None,
        "translated_sparql": None,
        "result": None,
    }


def test_a_translated_unknown_class_is_refused_by_the_sparql_validation(ontology: None) -> None:  # noqa: F811
    body = post_query({"cypher": "MATCH (a) WHERE a.iri = 'cw:CWE89SqlInjectoin' RETURN a LIMIT 1"}).json()
    assert body["validation"]["valid"] is False, body
    assert body["validation"]["errors"] == [
        "cw:CWE89SqlInjectoin is not a class or property of the ontology."
    ]
    assert body["translated_sparql"].endswith("FILTER(?a = cw:CWE89SqlInjectoin)\n}\nLIMIT 1")


@pytest.mark.parametrize("body", [{}, {"cypher": "MATCH (a) RETURN a", "sparql": "ASK { ?s ?p ?o }"}])
def test_neither_or_both_fields_is_a_422_that_says_what_to_send(ontology: None, body: dict) -> None:  # noqa: F811
    response = post_query(body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert "Send exactly one of `cypher`" in error["message"] + str(error["details"]), error


def test_the_cypher_request_over_mcp_answers_as_over_rest(ontology: None) -> None:  # noqa: F811
    anonymous = Caller(transport="mcp-http", token=None)
    outcome = mcp_tool_call(name="ontology_query", arguments={"cypher": SEED_CYPHER}, caller=anonymous)
    assert outcome.is_error is False, outcome.text
    assert outcome.structured == post_query({"cypher": SEED_CYPHER}).json()


def test_amend_takes_a_short_name_and_status_uses_the_seeds_values(
    ontology: None,  # noqa: F811
    writer: tuple[Any, Client],  # noqa: F811
) -> None:
    _, client = writer
    amend = {
        "action": "amend",
        "target_iri": "cw:CWE89SqlInjection",
        "amendment": {"add_alt_terms": ["SQLi attack"]},
    }
    response = propose(client, amend)
    assert response.status_code == 200, response.content
    result = response.json()["proposal"]
    assert (result["target_iri"], result["status"]) == (CW + "CWE89SqlInjection", "Staged")
    operator = make_user("seed003-operator")
    assert proposal_approve(proposal_id=result["proposal_id"], reviewer=operator).status == "merged"
    other = propose(client, {**amend, "target_iri": "CWE89SqlInjection"}).json()["proposal"]
    proposal_reject(proposal_id=other["proposal_id"], reviewer=operator, note="dup")
    rows = {str(p.id): p for p in OntologyProposal.objects.all()}
    assert [
        rows[result["proposal_id"]].get_status_display(),
        rows[other["proposal_id"]].get_status_display(),
    ] == [
        "Merged",
        "Rejected",
    ]
