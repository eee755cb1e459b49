"""The five ontology read tools (seed 003) on HTTP (/ontology-agent/) and MCP, against the starter
ontology: exact values, the seed's casing (camelCase requests, snake_case answers), bad input as a
4xx in the error shape, and the same answer on both transports."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from apps.embeddings.services import embed_texts
from apps.mcp_server.services import Caller, mcp_tool_call
from apps.ontology import lexical, services
from apps.ontology.graph import ontology_graph
from apps.ontology.models import NAMESPACE
from apps.ontology.notes import note_parse

pytestmark = pytest.mark.django_db

CW = NAMESPACE
SQLI = CW + "CWE89SqlInjection"
CWE943 = CW + "CWE943ImproperNeutralizationInDataQueryLogic"
CWE74 = CW + "CWE74Injection"
CWE707 = CW + "CWE707ImproperNeutralization"


_vectors: dict[tuple[str, ...], Any] = {}


def _embed_once(*, texts: list[str]) -> Any:
    # The starter ontology's 211 embeddings, computed once for the module (the real model, the same
    # vectors): every test loads the ontology into its own transaction.
    key = tuple(texts)
    if key not in _vectors:
        _vectors[key] = embed_texts(texts=texts)
    return _vectors[key]


@pytest.fixture(autouse=True)
def starter_ontology(monkeypatch) -> None:
    monkeypatch.setattr(services, "embed_texts", _embed_once)
    services.ontology_load_default_if_empty()


def _post(tool: str, body: Any) -> Any:
    return Client().post(f"/ontology-agent/{tool}", data=json.dumps(body), content_type="application/json")


def _mcp(name: str, arguments: dict[str, Any]) -> Any:
    return mcp_tool_call(name=name, arguments=arguments, caller=Caller(transport="mcp-http", token=None))


def _both(tool: str, body: dict[str, Any]) -> dict[str, Any]:
    """The HTTP answer (200), checked equal to the MCP tool's structured result."""
    response = _post(tool, body)
    assert response.status_code == 200, response.content
    outcome = _mcp(f"ontology_{tool}", body)
    assert outcome.is_error is False, outcome.text
    assert outcome.structured == response.json()
    return response.json()


def _refused(tool: str, body: Any, status: int, code: str) -> dict[str, Any]:
    response = _post(tool, body)
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and isinstance(error["details"], dict)
    outcome = _mcp(f"ontology_{tool}", body)
    assert outcome.is_error is True and outcome.text.startswith(f"{code}:"), outcome.text
    return error


# --- read -------------------------------------------------------------------------------------


def test_read_gives_the_enriched_note_with_asserted_and_inferred_axioms() -> None:
    answer = _both("read", {"iri": "cw:CWE89SqlInjection"})
    assert _both("read", {"iri": SQLI}) == answer  # a full IRI or cw:Name
    assert answer["success"] is True
    note = answer["note"]
    assert set(note) == {
        "iri", "term_id", "preferred_term", "markdown_content", "ontology_metadata", "whelk_axioms",
        "related_notes", "schema_context",
    }  # fmt: skip
    assert (note["iri"], note["term_id"], note["preferred_term"]) == (
        SQLI,
        "CW-SEC-0018",
        "CWE-89 SQL Injection",
    )
    assert note["markdown_content"].startswith("- ### OntologyBlock\n  - term-id:: CW-SEC-0018")
    assert note["ontology_metadata"] == {
        "owl_class": "cw:CWE89SqlInjection",
        "physicality": "AbstractEntity",
        "role": "Concept",
        "domain": "security",
        "quality_score": 0.9,
        "authority_score": 0.95,
        "maturity": "mature",
        "status": "complete",
        "parent_classes": [CWE943],
    }
    subclass = {
        a["object"]: a["is_inferred"] for a in note["whelk_axioms"] if a["axiom_type"] == "SubClassOf"
    }
    assert subclass == {
        CWE943: False,
        CWE74: True,
        CWE707: True,
        CW + "CweWeakness": True,
        CW + "SecurityWeakness": True,
    }
    assert {
        "axiom_type": "relates-to",
        "subject": SQLI,
        "object": CW + "Injection",
        "is_inferred": False,
    } in (note["whelk_axioms"])
    related = {(r["iri"], r["relationship_type"], r["direction"]) for r in note["related_notes"]}
    assert {
        (CWE943, "subClassOf", "outgoing"),
        (CW + "Injection", "relates-to", "outgoing"),
        (CW + "ParameterisedQuery", "mitigates", "incoming"),
    } <= related
    parent = next(r for r in note["related_notes"] if r["iri"] == CWE943)
    assert parent["preferred_term"] == "CWE-943 Data Query Logic Injection" and parent["summary"]
    context = note["schema_context"]
    assert "PREFIX cw: <https://cortexweb.dev/ontology#>" in context
    assert (
        "Superclasses (asserted, rdfs:subClassOf): cw:CWE943ImproperNeutralizationInDataQueryLogic."
        in context
    )
    assert "cw:CWE74Injection" in context and "cw:relatesTo: cw:Injection." in context


def test_read_of_an_unknown_iri_is_a_404_with_suggestions() -> None:
    error = _refused("read", {"iri": "cw:SqlInjektion"}, 404, "not_found")
    assert "cw:CWE89SqlInjection" in error["details"]["suggestions"]
    assert "Did you mean" in error["message"]


@pytest.mark.parametrize(
    "body",
    [{}, {"iri": ""}, {"IRI": "cw:CWE89SqlInjection"}, {"iri": "cw:CWE89SqlInjection", "extra": 1}],
)
def test_read_refuses_bad_input(body: dict[str, Any]) -> None:
    _refused("read", body, 422, "validation_error")


# --- discover ---------------------------------------------------------------------------------


def test_discover_marks_results_reached_only_through_inference() -> None:
    answer = _both("discover", {"query": "CWE-707"})
    assert answer["success"] is True and answer["count"] == len(answer["results"]) > 0
    results = {item["iri"]: item for item in answer["results"]}
    top = answer["results"][0]
    assert set(top) == {
        "iri", "preferred_term", "definition_summary", "relevance_score", "quality_score", "domain",
        "relationships", "whelk_inferred",
    }  # fmt: skip
    assert (top["iri"], top["whelk_inferred"]) == (CWE707, False)  # matched directly
    assert results[CWE74]["whelk_inferred"] is False  # an asserted subclass of the match
    # CWE-89 is under CWE-707 only through 943 → 74 → 707: the closure's subsumption, marked.
    assert results[SQLI]["whelk_inferred"] is True
    assert results[SQLI]["relevance_score"] < top["relevance_score"]
    assert {
        "rel_type": "subClassOf",
        "target_iri": CWE943,
        "target_term": "CWE-943 Data Query Logic Injection",
    } in (results[SQLI]["relationships"])
    scores = [item["relevance_score"] for item in answer["results"]]
    assert scores == sorted(scores, reverse=True)


def test_discover_matches_terms_and_filters_by_domain() -> None:
    answer = _both("discover", {"query": "SQLi", "limit": 3})
    assert answer["count"] <= 3 and answer["results"][0]["iri"] == SQLI  # an alternative term
    assert answer["results"][0]["relevance_score"] >= 0.6  # the exact-term lexical score alone
    assert answer["results"][0]["definition_summary"].startswith(
        "The product assembles all or part of an SQL"
    )
    narrowed = _both("discover", {"query": "password hashing", "domain": "security"})
    assert narrowed["results"] and {item["domain"] for item in narrowed["results"]} == {"security"}
    assert narrowed["results"][0]["preferred_term"] == "Password Hashing"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"query": ""}, 422, "validation_error"),
        ({"query": "   "}, 422, "validation_error"),
        ({"query": "sql", "limit": 0}, 422, "validation_error"),
        ({"Query": "sql"}, 422, "validation_error"),
        ({"query": "sql", "domain": "astrology"}, 404, "not_found"),
    ],
)
def test_discover_refuses_bad_input(body: dict[str, Any], status: int, code: str) -> None:
    _refused("discover", body, status, code)


def _scanned(graph: Any, query: str) -> dict[str, float]:
    """The lexical rule applied class by class with the regular expression (what ``discover`` did
    before its index): the reference the index must agree with."""
    words = lexical.words(query)
    found = {}
    for iri, cls in graph.classes.items():
        preferred = lexical.normal(cls.preferred_term)
        alternatives = [lexical.normal(term) for term in cls.alt_terms]
        definition = lexical.normal(cls.definition)
        if query == preferred or query in alternatives:
            found[iri] = 1.0
        elif lexical.contains_phrase(preferred, query):
            found[iri] = 0.9
        elif any(lexical.contains_phrase(term, query) for term in alternatives):
            found[iri] = 0.8
        elif lexical.contains_phrase(definition, query):
            found[iri] = 0.6
        elif words:
            text = " ".join([preferred, *alternatives, definition])
            if matched := sum(1 for word in words if lexical.contains_phrase(text, word)):
                found[iri] = 0.5 * matched / len(words)
    return found


@pytest.mark.parametrize(
    "query",
    [
        "sqli",  # an alternative term
        "cwe-89 sql injection",  # a preferred term
        "sql injection",  # a phrase of terms, and words elsewhere
        "cwe-707",  # one word of two runs
        "sql command",
        "sql.",  # a phrase that is not a single run
        "('sql injection')",
        "user's data",
        "data data",  # a word twice counts twice
        "of the",  # stop words only: phrases alone
        "--",  # no word character: checked class by class
        "tls 1.3",
        "quokka",
    ],
)
def test_discover_lexical_index_agrees_with_the_phrase_rule(query: str) -> None:
    graph = ontology_graph()
    assert graph.lexical.scores(query) == _scanned(graph, query)


def test_discover_lexical_index_scores_each_kind_of_match() -> None:
    index = ontology_graph().lexical
    assert index.scores("sqli")[SQLI] == 1.0  # an alternative term
    assert index.scores("cwe-707")[CWE707] == 0.9  # in the preferred term
    assert index.scores("sql command")[SQLI] == 0.8  # in an alternative term
    assert index.scores("the intended command")[SQLI] == 0.6  # in the definition
    assert index.scores("intended quokka")[SQLI] == 0.25  # one of two words


QUOKKA_NOTE = """- ### OntologyBlock
  - term-id:: CW-TEC-0990
  - preferred-term:: Quokka Ledger
  - alt-terms:: Marsupial Journal
  - definition:: A ledger kept by a test of the discover index, to check a new version is searched.
  - owl-class:: cw:QuokkaLedger
  - physicality:: VirtualEntity
  - role:: Object
  - domain:: technology
  - quality-score:: 0.5
  - authority-score:: 0.5
  - maturity:: draft
  - status:: draft
  - source:: tests/ontology/test_read_tools.py
"""


def test_a_new_ontology_version_rebuilds_the_discover_index() -> None:
    before = ontology_graph()
    assert before.lexical is before.lexical  # built once for the version
    quokka = CW + "QuokkaLedger"
    assert quokka not in before.lexical.scores("quokka ledger")
    assert quokka not in {item["iri"] for item in _both("discover", {"query": "quokka ledger"})["results"]}
    services.ontology_load(notes=[(note_parse(QUOKKA_NOTE), QUOKKA_NOTE)])
    after = ontology_graph()
    assert after.version == before.version + 1 and after.lexical is not before.lexical
    assert after.lexical.scores("quokka ledger")[quokka] == 1.0
    assert after.lexical.scores("marsupial")[quokka] == 0.8
    assert after.lexical.domains == before.lexical.domains
    top = _both("discover", {"query": "Quokka  Ledger", "domain": "technology"})["results"][0]
    assert (top["iri"], top["preferred_term"], top["whelk_inferred"]) == (quokka, "Quokka Ledger", False)
    assert top["relevance_score"] >= 0.6  # the exact-term lexical score alone


# --- traverse ---------------------------------------------------------------------------------


def test_traverse_walks_breadth_first_bounded_and_deduplicated() -> None:
    answer = _both(
        "traverse", {"startIri": "cw:CWE89SqlInjection", "depth": 3, "relationshipTypes": ["subClassOf"]}
    )
    assert answer["success"] is True
    traversal = answer["traversal"]
    assert traversal["start_iri"] == SQLI
    depths = {node["iri"]: node["depth"] for node in traversal["nodes"]}
    assert len(depths) == len(traversal["nodes"])  # each class once
    assert (depths[SQLI], depths[CWE943], depths[CWE74], depths[CWE707]) == (0, 1, 2, 3)
    assert max(depths.values()) == 3
    assert set(traversal["nodes"][0]) == {"iri", "preferred_term", "domain", "depth"}
    edges = [(e["source_iri"], e["target_iri"], e["relationship_type"]) for e in traversal["edges"]]
    assert len(edges) == len(set(edges))
    assert {kind for _, _, kind in edges} == {"subClassOf"}
    assert (SQLI, CWE943, "subClassOf") in edges and (CWE74, CWE707, "subClassOf") in edges
    # prov:Entity and other IRIs outside the ontology are skipped, never nodes.
    assert all(iri.startswith(CW) for iri in depths)
    default = _both("traverse", {"startIri": SQLI})
    assert max(node["depth"] for node in default["traversal"]["nodes"]) <= 3
    assert (SQLI, CW + "Injection", "relates-to") in {
        (e["source_iri"], e["target_iri"], e["relationship_type"]) for e in default["traversal"]["edges"]
    }


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"startIri": SQLI, "depth": 100}, 422, "validation_error"),
        ({"startIri": SQLI, "depth": 0}, 422, "validation_error"),
        ({"start_iri": SQLI}, 422, "validation_error"),
        ({"startIri": SQLI, "relationship_types": ["subClassOf"]}, 422, "validation_error"),
        ({"startIri": SQLI, "relationshipTypes": ["likes"]}, 422, "validation_error"),
        ({"startIri": "cw:NoSuchClass"}, 404, "not_found"),
    ],
)
def test_traverse_refuses_bad_input(body: dict[str, Any], status: int, code: str) -> None:
    _refused("traverse", body, status, code)


# --- validate ---------------------------------------------------------------------------------


def test_validate_checks_each_axiom_against_the_closure() -> None:
    answer = _both(
        "validate",
        {
            "axioms": [
                {"axiom_type": "SubClassOf", "subject": "cw:CWE707ImproperNeutralization", "object": SQLI},
                {"axiom_type": "SubClassOf", "subject": "cw:SafeMethod", "object": "cw:NonIdempotentMethod"},
                {"axiom_type": "DisjointWith", "subject": "cw:HttpMethod", "object": "cw:IdempotentMethod"},
                {"axiom_type": "SubClassOf", "subject": "cw:AccesControl", "object": "cw:CWE74Injection"},
                {"axiom_type": "Likes", "subject": SQLI, "object": CWE74},
                {"axiom_type": "SubClassOf", "subject": SQLI, "object": CWE74},
            ]
        },
    )
    assert (answer["success"], answer["valid"], answer["axiom_count"]) == (True, False, 6)
    assert answer["errors"] == [
        "axioms[0]: cw:CWE707ImproperNeutralization SubClassOf cw:CWE89SqlInjection closes a subclass cycle "
        "(cw:CWE89SqlInjection is already under cw:CWE707ImproperNeutralization).",
        "axioms[1]: cw:SafeMethod SubClassOf cw:NonIdempotentMethod makes cw:SafeMethod unsatisfiable: "
        "cw:NonIdempotentMethod and cw:IdempotentMethod are disjoint.",
        "axioms[2]: cw:HttpMethod and cw:IdempotentMethod are sub- and superclass; disjoint, the subclass is "
        "empty.",
        "axioms[3]: the subject 'cw:AccesControl' is not a class of the ontology.",
        "axioms[4]: unknown axiom_type 'Likes'.",
    ]
    assert answer["hints"][0].startswith("axioms[3]: did you mean ")
    assert (
        "axioms[5]: cw:CWE89SqlInjection SubClassOf cw:CWE74Injection is already inferred (OWL 2 RL)."
        in (answer["hints"])
    )


def test_validate_is_valid_only_without_errors() -> None:
    answer = _both(
        "validate",
        {
            "axioms": [
                {"axiom_type": "mitigates", "subject": "cw:ParameterisedQuery", "object": "cw:CWE74Injection"}
            ]
        },
    )
    assert (answer["valid"], answer["errors"], answer["axiom_count"]) == (True, [], 1)


@pytest.mark.parametrize(
    "body",
    [
        {"axioms": []},
        {},
        {"axioms": [{"axiomType": "SubClassOf", "subject": SQLI, "object": CWE74}]},
        {"axioms": [{"axiom_type": "SubClassOf", "subject": SQLI}]},
    ],
)
def test_validate_refuses_bad_input(body: dict[str, Any]) -> None:
    _refused("validate", body, 422, "validation_error")


# --- status -----------------------------------------------------------------------------------


def test_status_gives_health_and_capabilities() -> None:
    response = Client().get("/ontology-agent/status")
    assert response.status_code == 200
    answer = response.json()
    outcome = _mcp("ontology_status", {})
    assert outcome.is_error is False and outcome.structured == answer
    assert (answer["service"], answer["status"], answer["ontology_version"]) == (
        "ontology-agent",
        "healthy",
        1,
    )
    assert answer["class_count"] == 211 and answer["unsatisfiable_classes"] == []
    assert answer["graph_build_ms"] > 0 and answer["reasoner"] == "owlrl (OWL 2 RL)"
    # The seed's order; status itself is not listed (it is the introspection endpoint).
    mine = ["ontology_discover", "ontology_read", "ontology_traverse", "ontology_validate"]
    assert [name for name in answer["capabilities"] if name in mine] == mine
    assert "ontology_status" not in answer["capabilities"]
    refused = _mcp("ontology_status", {"unexpected": 1})  # no arguments, strictly
    assert refused.is_error is True and refused.text.startswith("validation_error:")
