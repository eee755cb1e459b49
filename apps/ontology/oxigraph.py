"""The ontology's closure in an Oxigraph store (``pyoxigraph``), where ``ontology_query`` evaluates
SPARQL: 3–8× faster than rdflib's evaluator on the same closure (docs/operations.md, "scale:
ontology"). The OWL 2 RL closure is still computed by ``owlrl`` on rdflib (``graph.py``); this
module only copies it, once per ontology version per process.

Not every triple of the closure is RDF: ``owlrl`` derives *generalised* triples (a literal as
subject, e.g. ``"SQL injection" rdf:type rdfs:Literal``), which no SPARQL store holds and no query
over the notes' terms needs. They are left out and counted (:attr:`ClosureStore.skipped`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyoxigraph as ox
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.namespace import XSD
from rdflib.term import Node


@dataclass(frozen=True)
class ClosureStore:
    """An in-memory Oxigraph store holding a closure's RDF triples in its default graph."""

    store: ox.Store
    triples: int
    skipped: int  # generalised triples (a literal subject or a non-IRI predicate) left out


def to_oxigraph(term: Node) -> ox.NamedNode | ox.BlankNode | ox.Literal:
    if isinstance(term, URIRef):
        return ox.NamedNode(str(term))
    if isinstance(term, BNode):
        return ox.BlankNode(str(term))
    if isinstance(term, Literal):
        if term.language:
            return ox.Literal(str(term), language=term.language)
        if term.datatype is not None:
            return ox.Literal(str(term), datatype=ox.NamedNode(str(term.datatype)))
        return ox.Literal(str(term))
    raise TypeError(f"not an RDF term: {term!r}")


def from_oxigraph(term: ox.NamedNode | ox.BlankNode | ox.Literal | None) -> Node | None:
    """An Oxigraph term as the rdflib term ``sparql._json_value`` turns into JSON, so both stores'
    answers are written by the same code. Oxigraph types a plain literal ``xsd:string`` (RDF 1.1);
    rdflib's plain ``Literal`` has no datatype: both give the same Python string."""
    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return URIRef(term.value)
    if isinstance(term, ox.BlankNode):
        return BNode(term.value)
    if isinstance(term, ox.Literal):
        if term.language:
            return Literal(term.value, lang=term.language)
        datatype = term.datatype.value
        return (
            Literal(term.value)
            if datatype == str(XSD.string)
            else Literal(term.value, datatype=URIRef(datatype))
        )
    raise TypeError(f"not a term a SELECT binds: {term!r}")


def closure_store(closure: Graph) -> ClosureStore:
    """``closure`` copied into a new in-memory Oxigraph store, less its generalised triples."""
    quads = []
    skipped = 0
    default = ox.DefaultGraph()
    for subject, predicate, obj in closure:
        if not isinstance(subject, URIRef | BNode) or not isinstance(predicate, URIRef):
            skipped += 1
            continue
        head = ox.NamedNode(str(subject)) if isinstance(subject, URIRef) else ox.BlankNode(str(subject))
        quads.append(ox.Quad(head, ox.NamedNode(str(predicate)), to_oxigraph(obj), default))
    store = ox.Store()
    store.extend(quads)
    return ClosureStore(store=store, triples=len(quads), skipped=skipped)
