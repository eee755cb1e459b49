"""The ontology as an rdflib graph with its OWL 2 RL closure, built from the classes in Postgres
once per ontology version per process.

Each process keeps the graph of the version it last built; every call reads the current version
(one indexed row) and rebuilds when it moved, so a merge made by any process is seen by all of
them from the next call on. Asserted and inferred axioms are told apart: ``asserted`` is the graph
the notes say, ``closure`` adds what OWL 2 RL (``owlrl``) derives, and ``inferred`` is the
difference, restricted to axioms between the ontology's own classes.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from functools import cached_property

import owlrl
from rdflib import RDF, RDFS, Graph, Literal, Namespace, URIRef
from rdflib.namespace import OWL, SKOS

from apps.core.logging import get_logger
from apps.ontology.lexical import LexicalIndex
from apps.ontology.models import NAMESPACE, RELATIONSHIP_TYPES, OntologyClass, OntologyState
from apps.ontology.notes import PREFIXES

logger = get_logger(__name__)

CW = Namespace(NAMESPACE)
PROV = Namespace(PREFIXES["prov"])


def relationship_property(kind: str) -> URIRef:
    """``has-part`` → ``cw:hasPart``."""
    head, *rest = kind.split("-")
    return CW[head + "".join(word.capitalize() for word in rest)]


# Pairs OWL 2 RL can use: one relationship read the other way round.
INVERSES = (("has-part", "is-part-of"),)


@dataclass
class OntologyGraph:
    version: int
    asserted: Graph
    closure: Graph
    classes: dict[str, OntologyClass]  # iri → row (without embedding)
    parents: dict[str, set[str]] = field(default_factory=dict)  # asserted direct superclasses
    ancestors: dict[str, set[str]] = field(default_factory=dict)  # every superclass in the closure
    children: dict[str, set[str]] = field(default_factory=dict)  # asserted direct subclasses
    unsatisfiable: set[str] = field(default_factory=set)  # classes the closure puts under owl:Nothing
    build_ms: float = 0.0

    def is_inferred(self, subject: str, predicate: URIRef, obj: str) -> bool:
        triple = (URIRef(subject), predicate, URIRef(obj))
        return triple not in self.asserted and triple in self.closure

    @cached_property
    def cw_local_names(self) -> frozenset[str]:
        """The ontology's own class names (``cw:`` local names), computed once per version."""
        return frozenset(iri[len(NAMESPACE) :] for iri in self.classes if iri.startswith(NAMESPACE))

    @cached_property
    def cw_properties(self) -> frozenset[str]:
        """The ``cw:`` properties the asserted graph uses, computed once per version (walking every
        triple per query cost most of a query's time at 10k classes; bench/ontology.py)."""
        return frozenset(
            str(p)[len(NAMESPACE) :] for p in set(self.asserted.predicates()) if str(p).startswith(NAMESPACE)
        )

    @cached_property
    def incoming(self) -> dict[str, list[tuple[str, str]]]:
        """Object IRI → ``(subject, kind)`` of every note relationship and disjointness pointing at it
        (``kind`` is the relationship name or ``disjointWith``), built once per version."""
        index: dict[str, list[tuple[str, str]]] = {}
        for other in self.classes.values():
            for item in other.relationships:
                index.setdefault(item["target"], []).append((other.iri, item["type"]))
            for target in other.disjoint_iris:
                index.setdefault(target, []).append((other.iri, "disjointWith"))
        return index

    @cached_property
    def classes_by_entry(self) -> dict[str, list[str]]:
        """Knowledge entry id → the classes whose notes name it (``knowledge-entries``), sorted:
        the notes' links read from the entry's side, once per version."""
        index: dict[str, set[str]] = {}
        for cls in self.classes.values():
            for entry_id in cls.knowledge_entries:
                index.setdefault(entry_id, set()).add(cls.iri)
        return {entry_id: sorted(iris) for entry_id, iris in index.items()}

    @cached_property
    def lexical(self) -> LexicalIndex:
        """``discover``'s lexical index of the classes, built once per version (on first use): a
        regular expression per class per call cost most of its time at 10k (bench/ontology.py)."""
        return LexicalIndex(self.classes.values())

    def inferred_ancestors(self, iri: str) -> set[str]:
        """Superclasses of ``iri`` only the reasoner found (not an asserted parent)."""
        return self.ancestors.get(iri, set()) - self.parents.get(iri, set())


def asserted_graph(classes: list[OntologyClass]) -> Graph:
    """What the notes of ``classes`` say, as OWL: classes, labels, definitions, subclass and
    disjointness axioms, and each relationship as a triple between the two classes."""
    asserted = Graph()
    for prefix, namespace in PREFIXES.items():
        asserted.bind(prefix, namespace)
    asserted.bind("skos", SKOS)
    for kind in RELATIONSHIP_TYPES:
        asserted.add((relationship_property(kind), RDF.type, OWL.ObjectProperty))
    for forward, backward in INVERSES:
        asserted.add((relationship_property(forward), OWL.inverseOf, relationship_property(backward)))
    for cls in classes:
        subject = URIRef(cls.iri)
        asserted.add((subject, RDF.type, OWL.Class))
        asserted.add((subject, RDFS.label, Literal(cls.preferred_term)))
        asserted.add((subject, SKOS.definition, Literal(cls.definition)))
        asserted.add((subject, CW.termId, Literal(cls.term_id)))
        asserted.add((subject, CW.domain, Literal(cls.domain)))
        for term in cls.alt_terms:
            asserted.add((subject, SKOS.altLabel, Literal(term)))
        for parent in cls.parent_iris:
            asserted.add((subject, RDFS.subClassOf, URIRef(parent)))
            asserted.add((URIRef(parent), RDF.type, OWL.Class))
        for other in cls.disjoint_iris:
            asserted.add((subject, OWL.disjointWith, URIRef(other)))
        for relationship in cls.relationships:
            asserted.add(
                (subject, relationship_property(relationship["type"]), URIRef(relationship["target"]))
            )
    return asserted


def graph_build(classes: list[OntologyClass], version: int) -> OntologyGraph:
    """The asserted graph of ``classes``, its OWL 2 RL closure and the hierarchy maps."""
    started = time.perf_counter()
    asserted = asserted_graph(classes)
    closure = Graph()
    for prefix, namespace in asserted.namespaces():
        closure.bind(prefix, namespace)
    for triple in asserted:
        closure.add(triple)
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics, axiomatic_triples=False, datatype_axioms=False).expand(
        closure
    )
    by_iri = {cls.iri: cls for cls in classes}
    graph = OntologyGraph(version=version, asserted=asserted, closure=closure, classes=by_iri)
    for cls in classes:
        graph.parents[cls.iri] = set(cls.parent_iris)
        for parent in cls.parent_iris:
            graph.children.setdefault(parent, set()).add(cls.iri)
    for iri in by_iri:
        found = {str(o) for o in closure.objects(URIRef(iri), RDFS.subClassOf) if isinstance(o, URIRef)}
        found -= {iri, str(OWL.Thing)}
        graph.ancestors[iri] = found
        if str(OWL.Nothing) in found:
            graph.unsatisfiable.add(iri)
    graph.build_ms = (time.perf_counter() - started) * 1000
    return graph


def ancestors_of(parents: dict[str, set[str]], iri: str) -> set[str]:
    """Every superclass reachable through ``parents`` (the asserted hierarchy), cycle-safe."""
    seen: set[str] = set()
    queue = deque(parents.get(iri, ()))
    while queue:
        current = queue.popleft()
        if current in seen:
            continue
        seen.add(current)
        queue.extend(parents.get(current, ()))
    return seen


def subclass_cycles(parents: dict[str, set[str]]) -> list[list[str]]:
    """Each subclass cycle of ``parents`` once, as the list of its classes (Tarjan-free: the graphs
    here are small and a cycle is found by walking each class's ancestors)."""
    cycles: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    for start in parents:
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        visited: set[str] = set()
        while stack:
            node, path = stack.pop()
            for parent in parents.get(node, ()):
                if parent == start:
                    key = frozenset(path)
                    if key not in seen:
                        seen.add(key)
                        cycles.append(path)
                elif parent not in visited:
                    visited.add(parent)
                    stack.append((parent, [*path, parent]))
    return cycles


_cache: dict[str, OntologyGraph] = {}
_lock = threading.Lock()


def ontology_version() -> int:
    return OntologyState.objects.filter(pk=1).values_list("version", flat=True).first() or 0


def ontology_graph() -> OntologyGraph:
    """The graph of the current version (built by this process at most once per version)."""
    version = ontology_version()
    current = _cache.get("graph")
    if current is not None and current.version == version:
        return current
    with _lock:
        current = _cache.get("graph")
        if current is not None and current.version == version:
            return current
        classes = list(OntologyClass.objects.defer("embedding"))
        current = graph_build(classes, version)
        _cache["graph"] = current
    logger.info("ontology.graph_built", version=version, classes=len(classes), ms=round(current.build_ms, 1))
    return current


def subclass_depths(graph: OntologyGraph, roots: set[str]) -> dict[str, int]:
    """Breadth-first distances down the asserted hierarchy from ``roots``."""
    depths: dict[str, int] = dict.fromkeys(roots, 0)
    queue = deque(roots)
    while queue:
        node = queue.popleft()
        for child in graph.children.get(node, ()):
            if child not in depths:
                depths[child] = depths[node] + 1
                queue.append(child)
    return depths


def inferred_members(graph: OntologyGraph) -> dict[str, set[str]]:
    """Superclass → its subclasses that only the reasoner places under it."""
    members: dict[str, set[str]] = defaultdict(set)
    for iri in graph.classes:
        for ancestor in graph.inferred_ancestors(iri):
            members[ancestor].add(iri)
    return members
