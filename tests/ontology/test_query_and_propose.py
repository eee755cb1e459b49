"""``ontology_query`` and ``ontology_propose`` (seed 003) on the starter ontology: the contracts with
exact values, query safety, propose's auth, limit and consistency checks, and the operators' review."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from apps.ontology import graph as ontology_graph_module
from apps.ontology import services
from apps.ontology.models import NAMESPACE
from apps.ontology.sparql import ROW_CAP, ontology_query

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
    answer = query("SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }")
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
