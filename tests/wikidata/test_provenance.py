"""PROV-O export of fact runs: Turtle and JSON-LD parsed back with rdflib, triple by triple.

The statements are Q42's ``P31`` statement and one of the blue whale's (GUIDs, ranks and the P248
reference hash as recorded in ``tests/fixtures/wikidata``); the ``P854`` reference URL of the first
fact is **constructed** (the recorded Q42 P31 references carry no reference URL).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from rdflib import RDF, RDFS, Graph, Literal, URIRef
from rdflib import namespace as rdf_namespace
from rdflib.namespace import DCTERMS, PROV

from apps.wikidata.models import Fact, FactRun, FactRunStatus
from apps.wikidata.provenance import CORTEX, PR, WD, WDREF, WIKIBASE, fact_run_prov, query_uri
from apps.wikidata.sparql import statements_provenance_query

pytestmark = pytest.mark.django_db

Q42_GUID = "Q42$F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"
Q42_STATEMENT = URIRef("http://www.wikidata.org/entity/statement/Q42-F078E5B3-F9A8-480E-B7AC-D97778CBBEF9")
WHALE_GUID = "q42196$B9CF4287-5028-42B9-B481-4B887B8F4AC9"  # lowercase entity part, as Wikibase stored it
WHALE_STATEMENT = URIRef(
    "http://www.wikidata.org/entity/statement/q42196-B9CF4287-5028-42B9-B481-4B887B8F4AC9"
)
API = "https://www.wikidata.org/w/api.php"
WDQS = "https://query.wikidata.org/sparql"
REFERENCE_URL = "https://www.example.org/douglas-adams-biography"  # constructed
Q42_REFERENCE_HASH = "a4d108601216cffd2ff1819ccf12b483486b62e7"
STARTED = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
FINISHED = datetime(2026, 3, 1, 12, 0, 4, 500000, tzinfo=UTC)
DATETIME = rdf_namespace.XSD.dateTime
RETRIEVED = datetime(2026, 3, 1, 12, 0, 2, tzinfo=UTC)


def _run(**fields) -> FactRun:
    values = {
        "question": "What is Douglas Adams an instance of?",
        "status": FactRunStatus.SUCCEEDED,
        "started_at": STARTED,
        "finished_at": FINISHED,
    }
    values.update(fields)
    return FactRun.objects.create(**values)


def _q42_references() -> list[dict]:
    return [
        {
            "hash": Q42_REFERENCE_HASH,
            "snaks": [
                {
                    "property": "P248",
                    "snaktype": "value",
                    "datatype": "wikibase-item",
                    "value": {"type": "wikibase-entityid", "id": "Q19938912", "entityType": "item"},
                    "hash": "def9f19d84b65167a2a17ce38364d264c16127fc",
                    "propertyLabel": "stated in",
                    "text": "Bibliothèque nationale de France",
                },
                {
                    "property": "P854",
                    "snaktype": "value",
                    "datatype": "url",
                    "value": {"type": "string", "value": REFERENCE_URL},
                    "hash": None,
                    "propertyLabel": "reference URL",
                    "text": REFERENCE_URL,
                },
                {
                    "property": "P813",
                    "snaktype": "value",
                    "datatype": "time",
                    "value": {
                        "type": "time",
                        "time": "+2022-10-09T00:00:00Z",
                        "precision": 11,
                        "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
                        "timezone": 0,
                        "before": 0,
                        "after": 0,
                    },
                    "hash": "f44435a8f14d71ab1b0c0aad17c46fcc01fc7702",
                    "propertyLabel": "retrieved",
                    "text": "9 October 2022",
                },
            ],
            "snaksOrder": ["P248", "P854", "P813"],
        }
    ]


def _fact(run: FactRun, **fields) -> Fact:
    values = {
        "position": 1,
        "text": "Douglas Adams — instance of — human",
        "score": 0.91,
        "qid": "Q42",
        "qid_label": "Douglas Adams",
        "pid": "P31",
        "pid_label": "instance of",
        "datatype": "wikibase-item",
        "value": {"type": "wikibase-entityid", "id": "Q5", "entityType": "item"},
        "value_text": "human",
        "value_label": "human",
        "claim_guid": Q42_GUID,
        "rank": "normal",
        "references": _q42_references(),
        "endpoint": API,
        "retrieved_at": RETRIEVED,
    }
    values.update(fields)
    return Fact.objects.create(run=run, **values)


def _parsed(run: FactRun) -> tuple[Graph, Graph, str, str]:
    turtle = fact_run_prov(run=run, fmt="turtle")
    json_ld = fact_run_prov(run=run, fmt="json-ld")
    return (
        Graph().parse(data=turtle, format="turtle"),
        Graph().parse(data=json_ld, format="json-ld"),
        turtle,
        json_ld,
    )


def test_run_and_facts_as_prov_o_in_both_formats() -> None:
    run = _run()
    query = statements_provenance_query([Q42_GUID, WHALE_GUID])
    first = _fact(run, sparql=query, sparql_endpoint=WDQS)
    second = _fact(
        run,
        position=2,
        text="blue whale — taxon rank — species",
        score=0.4,
        qid="Q42196",
        qid_label="blue whale",
        pid="P105",
        pid_label="taxon rank",
        value={"type": "wikibase-entityid", "id": "Q7432", "entityType": "item"},
        value_text="species",
        claim_guid=WHALE_GUID,
        rank="deprecated",
        references=[],
        sparql=query,
        sparql_endpoint=WDQS,
    )
    turtle_graph, json_graph, turtle, json_ld = _parsed(run)

    activity = URIRef(f"urn:cortexweb:fact-run:{run.pk}")
    fact1 = URIRef(f"urn:cortexweb:fact:{first.pk}")
    fact2 = URIRef(f"urn:cortexweb:fact:{second.pk}")
    sparql_node = query_uri(query)
    reference = WDREF[Q42_REFERENCE_HASH]

    # Both serialisations carry exactly the same triples (no blank nodes: plain set equality).
    assert set(turtle_graph) == set(json_graph)
    graph = turtle_graph

    # The run.
    assert (activity, RDF.type, PROV.Activity) in graph
    assert (activity, RDFS.label, Literal("What is Douglas Adams an instance of?")) in graph
    assert graph.value(activity, PROV.startedAtTime) == Literal(
        "2026-03-01T12:00:00+00:00", datatype=DATETIME
    )
    assert graph.value(activity, PROV.endedAtTime) == Literal(
        "2026-03-01T12:00:04.500000+00:00", datatype=DATETIME
    )
    assert set(graph.objects(activity, PROV.used)) == {URIRef(API), URIRef(WDQS), sparql_node}
    assert (activity, CORTEX.degraded, Literal(False)) in graph

    # The SPARQL query, its text verbatim.
    assert (sparql_node, RDF.type, PROV.Entity) in graph
    assert (sparql_node, RDF.type, CORTEX.SparqlQuery) in graph
    assert graph.value(sparql_node, PROV.value) == Literal(query)
    assert graph.value(sparql_node, CORTEX.endpoint) == URIRef(WDQS)

    # One entity per fact.
    assert set(graph.subjects(RDF.type, CORTEX.Fact)) == {fact1, fact2}
    assert (fact1, RDF.type, PROV.Entity) in graph
    assert (fact1, RDFS.label, Literal("Douglas Adams — instance of — human")) in graph
    assert (fact1, PROV.wasGeneratedBy, activity) in graph
    assert graph.value(fact1, PROV.generatedAtTime) == Literal("2026-03-01T12:00:02+00:00", datatype=DATETIME)
    assert (fact1, DCTERMS.subject, WD.Q42) in graph
    assert (fact1, CORTEX.property, WD.P31) in graph
    assert (fact1, CORTEX.valueEntity, WD.Q5) in graph
    assert (fact1, CORTEX.claimGuid, Literal(Q42_GUID)) in graph
    assert (fact1, PROV.wasInfluencedBy, sparql_node) in graph
    assert (WD.Q42, RDFS.label, Literal("Douglas Adams")) in graph

    # GUID → statement URI: "$" becomes "-", the entity part's case is kept.
    assert set(graph.objects(fact1, PROV.wasDerivedFrom)) == {Q42_STATEMENT}
    assert set(graph.objects(fact2, PROV.wasDerivedFrom)) == {WHALE_STATEMENT}
    assert (WD.Q42, URIRef("http://www.wikidata.org/prop/P31"), Q42_STATEMENT) in graph
    assert (Q42_STATEMENT, WIKIBASE.rank, WIKIBASE.NormalRank) in graph
    assert (WHALE_STATEMENT, WIKIBASE.rank, WIKIBASE.DeprecatedRank) in graph

    # The statement's reference and its reference URL.
    assert set(graph.objects(Q42_STATEMENT, PROV.wasDerivedFrom)) == {reference, URIRef(REFERENCE_URL)}
    assert (reference, RDF.type, WIKIBASE.Reference) in graph
    assert (reference, PR.P248, WD.Q19938912) in graph
    assert (reference, PR.P854, URIRef(REFERENCE_URL)) in graph
    assert (reference, PR.P813, Literal("+2022-10-09T00:00:00Z")) in graph
    assert set(graph.objects(WHALE_STATEMENT, PROV.wasDerivedFrom)) == set()

    # The prefixes are bound and used.
    for prefix in ("prov", "wd", "wds", "rdfs", "xsd", "dcterms"):
        assert f"@prefix {prefix}: " in turtle
    assert "wds:Q42-F078E5B3-F9A8-480E-B7AC-D97778CBBEF9" in turtle
    context = json.loads(json_ld)["@context"]
    assert context["wds"] == "http://www.wikidata.org/entity/statement/"
    assert context["prov"] == "http://www.w3.org/ns/prov#"

    # Deterministic: the same run exports the same text.
    assert fact_run_prov(run=run, fmt="turtle") == turtle
    assert fact_run_prov(run=run, fmt="json-ld") == json_ld


def test_degraded_fact_is_derived_from_the_stored_fact_and_its_statement() -> None:
    original_run = _run()
    stored = _fact(original_run)
    degraded_run = _run(
        degraded=True,
        degraded_reason="Wikidata search failed: could not reach the Wikidata vector database",
        rerun_of=original_run,
    )
    copy = _fact(degraded_run, derived_from=stored, references=[])
    graph, json_graph, _, _ = _parsed(degraded_run)

    activity = URIRef(f"urn:cortexweb:fact-run:{degraded_run.pk}")
    copied = URIRef(f"urn:cortexweb:fact:{copy.pk}")
    original = URIRef(f"urn:cortexweb:fact:{stored.pk}")
    assert set(graph) == set(json_graph)
    assert set(graph.objects(copied, PROV.wasDerivedFrom)) == {original, Q42_STATEMENT}
    assert (original, RDF.type, PROV.Entity) in graph
    assert (activity, PROV.used, original) in graph
    assert (activity, CORTEX.degraded, Literal(True)) in graph
    assert (activity, PROV.wasInformedBy, URIRef(f"urn:cortexweb:fact-run:{original_run.pk}")) in graph
    # Only this run's facts are exported, not the stored fact's own triples.
    assert set(graph.subjects(RDF.type, CORTEX.Fact)) == {copied}
    assert (original, PROV.wasGeneratedBy, None) not in graph


def test_empty_run_is_just_the_activity() -> None:
    run = _run(status=FactRunStatus.QUEUED, started_at=None, finished_at=None, question="Who wrote Dune?")
    graph, json_graph, _, _ = _parsed(run)
    activity = URIRef(f"urn:cortexweb:fact-run:{run.pk}")

    assert set(graph) == set(json_graph)
    assert set(graph.subjects(RDF.type, PROV.Activity)) == {activity}
    assert (activity, RDFS.label, Literal("Who wrote Dune?")) in graph
    assert (activity, CORTEX.status, Literal("queued")) in graph
    assert graph.value(activity, PROV.startedAtTime) is None
    assert graph.value(activity, PROV.endedAtTime) is None
    assert list(graph.subjects(RDF.type, CORTEX.Fact)) == []
    assert list(graph.objects(activity, PROV.used)) == []


def test_fact_without_a_valid_guid_keeps_its_guid_as_text() -> None:
    run = _run()
    fact = _fact(run, claim_guid="not-a-guid", references=[])
    graph, _, _, _ = _parsed(run)
    node = URIRef(f"urn:cortexweb:fact:{fact.pk}")
    assert (node, CORTEX.claimGuid, Literal("not-a-guid")) in graph
    assert list(graph.objects(node, PROV.wasDerivedFrom)) == []
