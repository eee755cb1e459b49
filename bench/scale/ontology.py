"""Ontology reads and queries at 1k and 10k classes, rdflib against pyoxigraph (issue 27 item 4).

Per size (``BENCH_SCALE_ONTOLOGY_SIZES``, default ``1000,10000``) the ontology comes from
``bench/ontology.py``'s seeded generator, its OWL 2 RL closure is built once by ``graph_build``
(rdflib + ``owlrl``, as every process does: about 2 minutes at 10k) and copied into an Oxigraph
store (``closure_store``, less the generalised triples ``owlrl`` derives, which are not RDF).
Both stores then answer the same operations on the same closure:

- the store operations of the reads agents make (``apps/ontology/selectors.py``): ``read`` looks up
  a class's disjointness and relationship objects in the closure and tests each found triple's
  membership; ``validate`` tests a subclass axiom's membership and lists the disjoint pairs;
  ``traverse`` and ``discover`` make none (the hierarchy maps, the lexical index and pgvector);
- three typical SPARQL queries, every row materialised (rdflib evaluates the parsed and translated
  query, as ``query_answer`` does; Oxigraph parses the text in its figure): a
  level-4 class's subclasses in the closure with labels, ``ORDER BY``, ``LIMIT 50``; a class's
  relationships (object properties) with the targets' labels; labels matched by ``REGEX`` in a
  ``FILTER`` (rdflib's own operator here; the tool runs it on RE2);
- the validation ``ontology_query`` runs before either engine (rdflib's parser and the checks);
- the copy of the closure into Oxigraph (n=3) and what the store adds to the process's memory.

p50/p95 over ``BENCH_SCALE_ONTOLOGY_ROUNDS`` calls (default 50) after 5 warm-up calls, each call on
a class drawn (seeded) from the level named. Nothing touches the database: no rows are written.
"""

from __future__ import annotations

import gc
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import psutil
import pyoxigraph as ox
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.namespace import OWL, RDFS
from rdflib.plugins.sparql import prepareQuery
from rdflib.plugins.sparql.sparql import Query
from rdflib.term import Node

from apps.ontology.graph import OntologyGraph, graph_build, relationship_property
from apps.ontology.models import RELATIONSHIP_TYPES
from apps.ontology.sparql import query_validate
from bench import timed
from bench.__main__ import percentile
from bench.ontology import generated
from bench.scale.table import ms, print_table, ratio

SIZES = [int(size) for size in os.environ.get("BENCH_SCALE_ONTOLOGY_SIZES", "1000,10000").split(",") if size]
ROUNDS = int(os.environ.get("BENCH_SCALE_ONTOLOGY_ROUNDS", "50"))
WARMUP = 5
SEED = 27

PREFIXES = (
    "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> PREFIX owl: <http://www.w3.org/2002/07/owl#> "
)
QUERIES = {
    "subclasses (closure) of a level-4 class with labels, ORDER BY, LIMIT 50": (
        4,
        PREFIXES + "SELECT ?sub ?label WHERE {{ ?sub rdfs:subClassOf <{iri}> ; rdfs:label ?label }} "
        "ORDER BY ?label LIMIT 50",
    ),
    "relationships of a level-6 class (object properties) with the targets' labels": (
        6,
        PREFIXES + "SELECT ?rel ?target ?label WHERE {{ <{iri}> ?rel ?target . ?rel a owl:ObjectProperty . "
        "?target rdfs:label ?label }}",
    ),
    "labels by FILTER(REGEX(…, 'i')), ORDER BY, LIMIT 50": (
        None,
        PREFIXES + 'SELECT ?c ?label WHERE {{ ?c rdfs:label ?label FILTER(REGEX(?label, "^{word}", "i")) }} '
        "ORDER BY ?label LIMIT 50",
    ),
}
WORDS = ("secure tok", "data", "access pol", "quantum", "vendor led")


@dataclass(frozen=True)
class ClosureStore:
    """An in-memory Oxigraph store holding a closure's RDF triples in its default graph."""

    store: ox.Store
    triples: int
    skipped: int  # generalised triples (a literal subject) left out: not RDF, no store holds them


def _term(term: Node) -> ox.NamedNode | ox.BlankNode | ox.Literal:
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


def closure_store(closure: Graph) -> ClosureStore:
    """``closure`` copied into a new in-memory Oxigraph store, less its generalised triples."""
    counts = {"triples": 0, "skipped": 0}
    default = ox.DefaultGraph()

    def quads() -> Iterator[ox.Quad]:
        # Made one by one and dropped once stored: a list of them all lives long enough to make the
        # collector walk the closure's heap again and again (about 20 s instead of 3 at 10k).
        for subject, predicate, obj in closure:
            if not isinstance(subject, URIRef | BNode) or not isinstance(predicate, URIRef):
                counts["skipped"] += 1
                continue
            head = ox.NamedNode(str(subject)) if isinstance(subject, URIRef) else ox.BlankNode(str(subject))
            counts["triples"] += 1
            yield ox.Quad(head, ox.NamedNode(str(predicate)), _term(obj), default)

    store = ox.Store()
    store.extend(quads())
    return ClosureStore(store=store, triples=counts["triples"], skipped=counts["skipped"])


def _figures(function: Callable[[], object]) -> list[float]:
    timed(function, WARMUP)
    return timed(function, ROUNDS)


def _row(name: str, rdflib: list[float], oxigraph: list[float]) -> list[str]:
    slow, fast = percentile(rdflib, 0.5), percentile(oxigraph, 0.5)
    return [
        name,
        ms(slow),
        ms(percentile(rdflib, 0.95)),
        ms(fast),
        ms(percentile(oxigraph, 0.95)),
        ratio(slow, fast),
    ]


def _read_rdflib(closure: Graph, iri: str) -> int:
    subject = URIRef(iri)
    found = 0
    for prop in (OWL.disjointWith, *(relationship_property(kind) for kind in RELATIONSHIP_TYPES)):
        for obj in closure.objects(subject, prop):
            found += (subject, prop, obj) in closure
    return found


def _read_oxigraph(store: ox.Store, iri: str) -> int:
    subject = ox.NamedNode(iri)
    found = 0
    for prop in (OWL.disjointWith, *(relationship_property(kind) for kind in RELATIONSHIP_TYPES)):
        predicate = ox.NamedNode(str(prop))
        for quad in store.quads_for_pattern(subject, predicate, None, ox.DefaultGraph()):
            found += quad in store
    return found


def _validate_rdflib(closure: Graph, pair: tuple[str, str]) -> int:
    member = (URIRef(pair[0]), RDFS.subClassOf, URIRef(pair[1])) in closure
    return member + len(list(closure.subject_objects(OWL.disjointWith)))


def _validate_oxigraph(store: ox.Store, pair: tuple[str, str]) -> int:
    quad = ox.Quad(ox.NamedNode(pair[0]), ox.NamedNode(str(RDFS.subClassOf)), ox.NamedNode(pair[1]))
    disjoint = ox.NamedNode(str(OWL.disjointWith))
    return (quad in store) + len(list(store.quads_for_pattern(None, disjoint, None, ox.DefaultGraph())))


def _query_rdflib(closure: Graph, query: Query) -> int:
    return len([tuple(row) for row in closure.query(query)])  # type: ignore[arg-type]


def _query_oxigraph(store: ox.Store, text: str) -> int:
    return len([tuple(solution) for solution in store.query(text)])  # type: ignore[union-attr]


def _size(size: int) -> None:
    classes, levels = generated(size)
    started = time.perf_counter()
    graph: OntologyGraph = graph_build(classes, 0)
    build = time.perf_counter() - started
    closure = graph.closure
    process = psutil.Process()
    gc.collect()
    before = process.memory_info().rss
    loaded = closure_store(closure)
    added = process.memory_info().rss - before
    loads = []
    for _ in range(3):
        started = time.perf_counter()
        closure_store(closure)
        loads.append(time.perf_counter() - started)
    store = loaded.store
    rng = random.Random(SEED + size)
    every = [iri for level in levels for iri in level]
    rows: list[list[str]] = []

    picks = iter(rng.choices(every, k=10 * ROUNDS))
    rows.append(
        _row(
            "`read`: a class's disjointness and relationship objects in the closure, each membership-tested",
            _figures(lambda: _read_rdflib(closure, next(picks))),
            _figures(lambda: _read_oxigraph(store, next(picks))),
        )
    )
    pairs = [(iri, sorted(graph.ancestors[iri])[0]) for iri in every if graph.ancestors.get(iri)]
    chosen = iter(rng.choices(pairs, k=10 * ROUNDS))
    rows.append(
        _row(
            "`validate`: a subclass axiom's membership and the disjoint pairs",
            _figures(lambda: _validate_rdflib(closure, next(chosen))),
            _figures(lambda: _validate_oxigraph(store, next(chosen))),
        )
    )
    rows.append(
        ["`traverse`, `discover`: no store operation (hierarchy maps, lexical index, pgvector)"] + ["—"] * 5
    )
    for name, (level, template) in QUERIES.items():
        pool = levels[level] if level is not None else None
        texts = [
            template.format(iri=rng.choice(pool)) if pool else template.format(word=rng.choice(WORDS))
            for _ in range(WARMUP + ROUNDS)
        ]
        # rdflib's parser alone takes 10-30 ms a query, and ontology_query parses with it to validate
        # whichever engine evaluates: rdflib is timed on the parsed and translated query, as
        # query_answer evaluates it; Oxigraph parses the text itself, inside its figure.
        prepared = [prepareQuery(text) for text in texts]
        assert _query_rdflib(closure, prepared[0]) == _query_oxigraph(store, texts[0]), name
        parsed, plain = iter(prepared), iter(texts)
        rows.append(
            _row(
                f"SPARQL: {name}",
                _figures(lambda parsed=parsed: _query_rdflib(closure, next(parsed))),
                _figures(lambda plain=plain: _query_oxigraph(store, next(plain))),
            )
        )
    cycle = iter(texts)
    validation = _figures(lambda: query_validate(next(cycle), graph))
    rows.append(
        [
            "`ontology_query`'s validation, before either engine (rdflib's parser, checks; last query)",
            ms(percentile(validation, 0.5)),
            ms(percentile(validation, 0.95)),
            "(the same)",
            "",
            "",
        ]
    )
    print_table(
        f"scale: ontology at {size:,} classes",
        ["operation", "rdflib p50", "rdflib p95", "Oxigraph p50", "Oxigraph p95", "rdflib / Oxigraph (p50)"],
        rows,
        f"{size:,} classes generated by bench/ontology.py (seeded, synthetic), "
        f"{len(graph.asserted):,} asserted triples, {len(closure):,} in the OWL 2 RL closure "
        f"(graph_build: {build:.1f} s); the same closure in both stores. "
        f"n={ROUNDS} per row after {WARMUP} warm-up calls. Oxigraph store "
        f"(pyoxigraph {ox.__version__}): {loaded.triples:,} triples, {loaded.skipped:,} generalised "
        f"triples left out, copied in {ms(percentile(loads, 0.5))} p50 (n=3), "
        f"{added / 2**20:.0f} MiB added to the process.",
    )


def run() -> None:
    for size in SIZES:
        _size(size)
