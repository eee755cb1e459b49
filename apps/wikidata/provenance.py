"""PROV-O export of a fact run (rdflib): what was asked, what was read where, what each fact came from.

The graph, in W3C PROV-O terms (``prov:``) with Wikidata's own vocabulary where Wikidata has one
(``wd:`` items and properties, ``wds:`` statement nodes, ``wdref:`` reference nodes, ``p:``/``pr:``
predicates, ``wikibase:`` ranks, exactly as the Wikidata Query Service names them, so the export
joins WDQS data):

* the run — ``<urn:cortexweb:fact-run:{uuid}>``, a ``prov:Activity`` labelled with the question,
  ``prov:startedAtTime``/``prov:endedAtTime``, ``prov:wasAssociatedWith`` CortexWeb (a
  ``prov:SoftwareAgent``), ``prov:used`` every endpoint it read and every SPARQL query it ran;
  ``prov:wasInformedBy`` the run it re-runs;
* each SPARQL query — ``<urn:cortexweb:sparql-query:{sha256 of the text}>``, a ``prov:Entity`` of
  type ``cortex:SparqlQuery`` whose ``prov:value`` is the query text;
* each fact — ``<urn:cortexweb:fact:{id}>``, a ``prov:Entity`` labelled with the fact text,
  ``prov:wasGeneratedBy`` the run, ``prov:generatedAtTime`` when the statement was read,
  ``dcterms:subject`` the item, ``cortex:property`` the property, ``prov:wasDerivedFrom`` its
  statement (``wds:Q42-F078…`` for the GUID ``Q42$F078…``) and, for a degraded run's copy, the
  stored fact it copies; ``prov:wasInfluencedBy`` the query that enriched it;
* each knowledge answer of a degraded run — ``<urn:cortexweb:fact-run:{uuid}:knowledge:{n}>``, a
  ``prov:Entity`` of type ``cortex:KnowledgeAnswer`` labelled with the entry's content,
  ``prov:wasGeneratedBy`` the run and ``prov:wasDerivedFrom`` the knowledge entry
  (``<urn:cortexweb:knowledge-entry:{entryId}>``, which the run ``prov:used``; it is derived from
  its source URL);
* each statement — a ``prov:Entity`` and ``wikibase:Statement`` with its ``wikibase:rank``, linked
  from its item by ``p:P…``, ``prov:wasDerivedFrom`` each of its references (``wdref:{hash}``,
  carrying the reference snaks as ``pr:P…`` values) and each reference URL (``P854``).

Only IRIs are used (no blank nodes) and both serialisations are sorted, so the same run always
exports the same text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote

from rdflib import RDF, RDFS, XSD, Graph, Namespace, URIRef
from rdflib import Literal as RdfLiteral
from rdflib.namespace import DCTERMS, PROV
from rdflib.term import Node

from apps.core.errors import ValidationFailed
from apps.wikidata.models import Fact, FactRun
from apps.wikidata.sparql import statement_uri
from apps.wikidata.statements import entity_id_pattern

WD = Namespace("http://www.wikidata.org/entity/")
WDS = Namespace("http://www.wikidata.org/entity/statement/")
WDREF = Namespace("http://www.wikidata.org/reference/")
WIKIBASE = Namespace("http://wikiba.se/ontology#")
P = Namespace("http://www.wikidata.org/prop/")
PR = Namespace("http://www.wikidata.org/prop/reference/")
CORTEX = Namespace("urn:cortexweb:vocab:")

AGENT = URIRef("urn:cortexweb:agent:cortexweb")
REFERENCE_URL_PROPERTY = "P854"

PREFIXES: dict[str, str] = {
    "prov": str(PROV),
    "wd": str(WD),
    "wds": str(WDS),
    "wdref": str(WDREF),
    "wikibase": str(WIKIBASE),
    "p": str(P),
    "pr": str(PR),
    "rdfs": str(RDFS),
    "xsd": str(XSD),
    "dcterms": str(DCTERMS),
    "cortex": str(CORTEX),
}

_RANKS = {
    "preferred": WIKIBASE.PreferredRank,
    "normal": WIKIBASE.NormalRank,
    "deprecated": WIKIBASE.DeprecatedRank,
}
_ENTITY_ID_RE = entity_id_pattern("QPL", sub_entities=False)
_HASH_RE = re.compile(r"^[0-9a-f]{40}$")
# An absolute http(s) IRI with none of the characters Turtle cannot write inside <…>.
_HTTP_IRI_RE = re.compile(r"^https?://[^\s<>\"{}|\\^`]+$")


def run_uri(run_id: Any) -> URIRef:
    return URIRef(f"urn:cortexweb:fact-run:{run_id}")


def fact_uri(fact_id: Any) -> URIRef:
    return URIRef(f"urn:cortexweb:fact:{fact_id}")


def query_uri(text: str) -> URIRef:
    return URIRef(f"urn:cortexweb:sparql-query:{hashlib.sha256(text.encode('utf-8')).hexdigest()}")


def fact_run_prov(*, run: FactRun, fmt: Literal["turtle", "json-ld"]) -> str:
    """The run's provenance as PROV-O, serialised as Turtle or JSON-LD (compacted with the prefixes)."""
    graph = fact_run_graph(run=run)
    if fmt == "turtle":
        return graph.serialize(format="turtle")
    if fmt == "json-ld":
        return sorted_json_ld(graph.serialize(format="json-ld", context=dict(PREFIXES)))
    raise ValidationFailed(f"unknown provenance format {fmt!r}; use 'turtle' or 'json-ld'")


def fact_run_graph(*, run: FactRun) -> Graph:
    """The PROV-O graph of a run and its facts (one query for the facts)."""
    graph = Graph(bind_namespaces="none")
    for prefix, namespace in PREFIXES.items():
        graph.bind(prefix, namespace)
    activity = run_uri(run.pk)
    _run_add(graph, run, activity)
    facts = list(run.facts.order_by("position", "pk"))
    for fact in facts:
        _fact_add(graph, fact, activity)
    for position, item in enumerate(run.knowledge or [], start=1):
        if isinstance(item, Mapping):
            _knowledge_add(graph, run, position, item, activity)
    return graph


def knowledge_entry_uri(entry_id: str) -> URIRef:
    return URIRef(f"urn:cortexweb:knowledge-entry:{quote(entry_id, safe='')}")


def knowledge_answer_uri(run_id: Any, position: int) -> URIRef:
    return URIRef(f"urn:cortexweb:fact-run:{run_id}:knowledge:{position}")


def _knowledge_add(
    graph: Graph, run: FactRun, position: int, item: Mapping[str, Any], activity: URIRef
) -> None:
    """A degraded run's answer from a knowledge entry: the answer (generated by the run, derived from
    the entry) and the entry it used, with the entry's own source."""
    entry_id = str(item.get("entryId") or "")
    if not entry_id:
        return
    answer = knowledge_answer_uri(run.pk, position)
    entry = knowledge_entry_uri(entry_id)
    graph.add((answer, RDF.type, PROV.Entity))
    graph.add((answer, RDF.type, CORTEX.KnowledgeAnswer))
    graph.add((answer, PROV.wasGeneratedBy, activity))
    graph.add((answer, PROV.wasDerivedFrom, entry))
    graph.add((answer, CORTEX.position, RdfLiteral(position)))
    if isinstance(item.get("content"), str):
        graph.add((answer, RDFS.label, RdfLiteral(item["content"])))
    if isinstance(item.get("similarity"), int | float):
        graph.add((answer, CORTEX.score, RdfLiteral(float(item["similarity"]), datatype=XSD.double)))
    if run.finished_at is not None:
        graph.add((answer, PROV.generatedAtTime, xsd_datetime(run.finished_at)))
    graph.add((activity, PROV.used, entry))
    graph.add((entry, RDF.type, PROV.Entity))
    graph.add((entry, RDF.type, CORTEX.KnowledgeEntry))
    graph.add((entry, CORTEX.entryId, RdfLiteral(entry_id)))
    if item.get("topic"):
        graph.add((entry, RDFS.label, RdfLiteral(str(item["topic"]))))
    if item.get("domain"):
        graph.add((entry, CORTEX.domain, RdfLiteral(str(item["domain"]))))
    if item.get("source"):
        graph.add((entry, DCTERMS.source, RdfLiteral(str(item["source"]))))
    url = str(item.get("url") or "")
    if _HTTP_IRI_RE.match(url):
        graph.add((entry, PROV.wasDerivedFrom, URIRef(url)))
        graph.add((URIRef(url), RDF.type, PROV.Entity))


def xsd_datetime(value: datetime) -> RdfLiteral:
    """An ``xsd:dateTime`` in UTC (stable text whatever the server's time zone)."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return RdfLiteral(value.isoformat(), datatype=XSD.dateTime)


def _iri_or_literal(text: str) -> Node:
    return URIRef(text) if _HTTP_IRI_RE.match(text) else RdfLiteral(text, datatype=XSD.anyURI)


def _run_add(graph: Graph, run: FactRun, activity: URIRef) -> None:
    graph.add((activity, RDF.type, PROV.Activity))
    graph.add((activity, RDF.type, CORTEX.FactRun))
    graph.add((activity, RDFS.label, RdfLiteral(run.question)))
    graph.add((activity, PROV.wasAssociatedWith, AGENT))
    graph.add((AGENT, RDF.type, PROV.SoftwareAgent))
    graph.add((AGENT, RDFS.label, RdfLiteral("CortexWeb")))
    graph.add((activity, CORTEX.status, RdfLiteral(str(run.status))))
    graph.add((activity, CORTEX.language, RdfLiteral(run.language)))
    graph.add((activity, CORTEX.degraded, RdfLiteral(bool(run.degraded))))
    if run.degraded_reason:
        graph.add((activity, CORTEX.degradedReason, RdfLiteral(run.degraded_reason)))
    if run.error:
        graph.add((activity, CORTEX.error, RdfLiteral(run.error)))
    if run.started_at is not None:
        graph.add((activity, PROV.startedAtTime, xsd_datetime(run.started_at)))
    if run.finished_at is not None:
        graph.add((activity, PROV.endedAtTime, xsd_datetime(run.finished_at)))
    if run.rerun_of_id is not None:
        graph.add((activity, PROV.wasInformedBy, run_uri(run.rerun_of_id)))


def _endpoint_add(graph: Graph, activity: URIRef, endpoint: str) -> Node | None:
    if not endpoint:
        return None
    node = _iri_or_literal(endpoint)
    if isinstance(node, URIRef):
        graph.add((activity, PROV.used, node))
        graph.add((node, RDF.type, PROV.Entity))
        graph.add((node, RDF.type, CORTEX.Endpoint))
    return node


def _query_add(graph: Graph, activity: URIRef, text: str, endpoint: str) -> URIRef:
    query = query_uri(text)
    graph.add((query, RDF.type, PROV.Entity))
    graph.add((query, RDF.type, CORTEX.SparqlQuery))
    graph.add((query, PROV.value, RdfLiteral(text)))
    graph.add((activity, PROV.used, query))
    endpoint_node = _endpoint_add(graph, activity, endpoint)
    if endpoint_node is not None:
        graph.add((query, CORTEX.endpoint, endpoint_node))
    return query


def _fact_add(graph: Graph, fact: Fact, activity: URIRef) -> None:
    node = fact_uri(fact.pk)
    graph.add((node, RDF.type, PROV.Entity))
    graph.add((node, RDF.type, CORTEX.Fact))
    graph.add((node, RDFS.label, RdfLiteral(fact.text)))
    graph.add((node, PROV.wasGeneratedBy, activity))
    graph.add((node, PROV.generatedAtTime, xsd_datetime(fact.retrieved_at)))
    graph.add((node, CORTEX.position, RdfLiteral(int(fact.position))))
    graph.add((node, CORTEX.score, RdfLiteral(float(fact.score), datatype=XSD.double)))
    graph.add((node, CORTEX.claimGuid, RdfLiteral(fact.claim_guid)))
    graph.add((node, CORTEX.rank, RdfLiteral(fact.rank)))
    if fact.value_text:
        graph.add((node, CORTEX.value, RdfLiteral(fact.value_text)))
    value_id = (fact.value or {}).get("id") if isinstance(fact.value, Mapping) else None
    if isinstance(value_id, str) and _ENTITY_ID_RE.match(value_id):
        graph.add((node, CORTEX.valueEntity, WD[value_id]))
    subject = WD[fact.qid] if _ENTITY_ID_RE.match(fact.qid) else None
    prop = WD[fact.pid] if _ENTITY_ID_RE.match(fact.pid) else None
    if subject is not None:
        graph.add((node, DCTERMS.subject, subject))
        if fact.qid_label:
            graph.add((subject, RDFS.label, RdfLiteral(fact.qid_label)))
    if prop is not None:
        graph.add((node, CORTEX.property, prop))
        if fact.pid_label:
            graph.add((prop, RDFS.label, RdfLiteral(fact.pid_label)))
    endpoint = _endpoint_add(graph, activity, fact.endpoint)
    if endpoint is not None:
        graph.add((node, CORTEX.endpoint, endpoint))
    if fact.sparql:
        graph.add(
            (node, PROV.wasInfluencedBy, _query_add(graph, activity, fact.sparql, fact.sparql_endpoint))
        )
    if fact.derived_from_id is not None:
        stored = fact_uri(fact.derived_from_id)
        graph.add((node, PROV.wasDerivedFrom, stored))
        graph.add((stored, RDF.type, PROV.Entity))
        graph.add((activity, PROV.used, stored))
    statement = _statement_node(fact.claim_guid)
    if statement is None:
        return
    graph.add((node, PROV.wasDerivedFrom, statement))
    graph.add((statement, RDF.type, PROV.Entity))
    graph.add((statement, RDF.type, WIKIBASE.Statement))
    if fact.rank in _RANKS:
        graph.add((statement, WIKIBASE.rank, _RANKS[fact.rank]))
    if subject is not None and _ENTITY_ID_RE.match(fact.pid):
        graph.add((subject, P[fact.pid], statement))
    _references_add(graph, statement, fact.references or [])


def _statement_node(claim_guid: str) -> URIRef | None:
    """``wds:Q42-F078…`` for the GUID; ``None`` for a fact that names no valid statement."""
    if not claim_guid:
        return None
    try:
        return URIRef(statement_uri(claim_guid))
    except ValidationFailed:
        return None


def _references_add(graph: Graph, statement: URIRef, references: Iterable[Any]) -> None:
    for reference in references:
        if not isinstance(reference, Mapping):
            continue
        snaks = [snak for snak in reference.get("snaks") or [] if isinstance(snak, Mapping)]
        ref_hash = reference.get("hash")
        ref_node = WDREF[ref_hash] if isinstance(ref_hash, str) and _HASH_RE.match(ref_hash) else None
        if ref_node is not None:
            graph.add((statement, PROV.wasDerivedFrom, ref_node))
            graph.add((ref_node, RDF.type, PROV.Entity))
            graph.add((ref_node, RDF.type, WIKIBASE.Reference))
        for snak in snaks:
            prop = snak.get("property")
            value = _snak_value(snak)
            if value is None or not isinstance(prop, str) or not _ENTITY_ID_RE.match(prop):
                continue
            if ref_node is not None:
                graph.add((ref_node, PR[prop], value))
            if prop == REFERENCE_URL_PROPERTY and isinstance(value, URIRef):
                # The statement's source on the web: PROV's derivation, as WDQS models references.
                graph.add((statement, PROV.wasDerivedFrom, value))
                graph.add((value, RDF.type, PROV.Entity))


def _snak_value(snak: Mapping[str, Any]) -> Node | None:
    """A reference snak's value as an RDF term (``None`` for unknown/no value)."""
    value = snak.get("value")
    if snak.get("snaktype", "value") != "value" or not isinstance(value, Mapping):
        return None
    kind = value.get("type")
    term: Node | None = None
    if kind == "wikibase-entityid":
        entity_id = value.get("id")
        term = WD[entity_id] if isinstance(entity_id, str) and _ENTITY_ID_RE.match(entity_id) else None
    elif kind == "string" and isinstance(value.get("value"), str):
        text = value["value"]
        term = _iri_or_literal(text) if snak.get("datatype") == "url" else RdfLiteral(text)
    elif kind == "monolingualtext" and isinstance(value.get("text"), str):
        term = RdfLiteral(value["text"], lang=str(value.get("language") or "") or None)
    elif kind == "time" and isinstance(value.get("time"), str):
        term = RdfLiteral(value["time"])  # Wikibase's own form (+2022-10-09T00:00:00Z): BCE-safe
    elif kind == "quantity" and value.get("amount") is not None:
        term = RdfLiteral(str(value["amount"]), datatype=XSD.decimal)
    elif isinstance(snak.get("text"), str) and snak["text"]:
        term = RdfLiteral(snak["text"])
    return term


def sorted_json_ld(text: str) -> str:
    """rdflib's JSON-LD with nodes ordered by ``@id`` and multi-valued properties sorted (RDF values
    are unordered), so the same graph always gives the same text."""
    document = json.loads(text)

    def normalised(value: Any) -> Any:
        if isinstance(value, list):
            items = [normalised(item) for item in value]
            return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, ensure_ascii=False))
        if isinstance(value, dict):
            return {key: normalised(item) if key != "@context" else item for key, item in value.items()}
        return value

    return json.dumps(normalised(document), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
