"""Ontology reads: the five read tools of seed 003 (discover, read, traverse, validate, status).

Everything here reads the graph of the current ontology version (``graph.ontology_graph()``: the
asserted axioms, their OWL 2 RL closure computed by ``owlrl``, and the hierarchy maps) plus, for
``discover``, the class embeddings in Postgres. Answers are plain dicts in the seed's snake_case
shapes; the HTTP endpoints and the MCP tools return them as they are.

``whelk_inferred`` / ``is_inferred`` keep VisionClaw's names (its reasoner is Whelk, OWL 2 EL) so
its clients work unchanged; here they mark what the OWL 2 RL closure derives and no note asserts.
"""

from __future__ import annotations

import difflib
import heapq
import re
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pgvector.django import CosineDistance
from rdflib import URIRef
from rdflib.namespace import OWL, SKOS

from apps.core.errors import NotFound, ValidationFailed
from apps.embeddings.fields import hnsw_filtered_scan
from apps.embeddings.services import embed_text
from apps.ontology.graph import OntologyGraph, ontology_graph, relationship_property, subclass_depths
from apps.ontology.lexical import normal
from apps.ontology.models import RELATIONSHIP_TYPES, OntologyClass
from apps.ontology.notes import PREFIXES, NoteError, iri_compact, iri_expand

SERVICE = "ontology-agent"
SUBCLASS_OF = "subClassOf"
DISJOINT_WITH = "disjointWith"
#: Edge names of related notes and traversals: the hierarchy, disjointness and the note relationships.
EDGE_TYPES = (SUBCLASS_OF, DISJOINT_WITH, *RELATIONSHIP_TYPES)
#: The seed's capability list, in its order; ``status`` lists those this server has (not itself).
SEED_CAPABILITIES = (
    "ontology_discover",
    "ontology_read",
    "ontology_query",
    "ontology_traverse",
    "ontology_propose",
    "ontology_validate",
)

# --- discover's scoring (see ``ontology_discover``; the lexical scores are in ``lexical.py``) ----
LEXICAL_WEIGHT = 0.6
SEMANTIC_WEIGHT = 0.4
# MiniLM cosine similarities of related short texts sit above ~0.45; below that a class is only
# "about the same field", which the hierarchy expansion covers better.
SEMANTIC_FLOOR = 0.45
SEMANTIC_CANDIDATES = 30
EXPANSION_DECAY = 0.8
# Below the ranking's rounding (6 decimals): a match whose subclasses could still tie is expanded.
_RANK_TOLERANCE = 1e-6
SUMMARY_CHARS = 200

MAX_TRAVERSAL_NODES = 500
MAX_DEPTH = 5


# --- Shared helpers ---------------------------------------------------------------------------


def summary(definition: str) -> str:
    """A definition's first sentence, at most ``SUMMARY_CHARS`` characters."""
    first = re.split(r"(?<=[.!?])\s", definition.strip(), maxsplit=1)[0]
    return first if len(first) <= SUMMARY_CHARS else first[: SUMMARY_CHARS - 1].rstrip() + "…"


def _term(graph: OntologyGraph, iri: str) -> str:
    cls = graph.classes.get(iri)
    return cls.preferred_term if cls is not None else iri_compact(iri)


def _suggestions(graph: OntologyGraph, name: str, count: int = 3) -> list[str]:
    """The closest classes to ``name`` by local name or preferred term, as ``cw:`` names."""
    wanted = name.rsplit("#", 1)[-1].rsplit(":", 1)[-1].lower()
    keys: dict[str, str] = {}
    for iri, cls in graph.classes.items():
        keys.setdefault(cls.local_name.lower(), iri)
        keys.setdefault(cls.preferred_term.lower(), iri)
    close = difflib.get_close_matches(wanted, list(keys), n=count * 2, cutoff=0.5)
    found = list(dict.fromkeys(keys[key] for key in close))[:count]
    if not found:  # no close spelling: classes whose name contains the word
        found = sorted(
            iri for iri, cls in graph.classes.items() if wanted and wanted in cls.local_name.lower()
        )
        found = found[:count]
    return [iri_compact(iri) for iri in found]


def iri_resolve(name: str) -> str:
    """A full IRI from a full IRI, ``cw:Name``/``prov:Name`` or a bare ``Name`` (as written, or the
    text itself when it is none of these, so that the lookup can say what was not found)."""
    try:
        return iri_expand(name)
    except NoteError:
        return name.strip()


def class_get(graph: OntologyGraph, name: str, *, field: str = "iri") -> OntologyClass:
    """The class ``name`` names; ``NotFound`` with "did you mean" suggestions otherwise."""
    iri = iri_resolve(name)
    cls = graph.classes.get(iri)
    if cls is None:
        suggestions = _suggestions(graph, iri)
        hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
        raise NotFound(
            f"No ontology class has the IRI {name!r}.{hint}",
            details={"field": field, "iri": name, "suggestions": suggestions},
        )
    return cls


# --- discover ---------------------------------------------------------------------------------


@dataclass
class _Candidate:
    iri: str
    score: float
    direct: bool
    # Whether a matched class is an asserted parent of this one (only for expansion results).
    asserted_path: bool = False


_descendants_cache: dict[int, dict[str, set[str]]] = {}
_descendants_lock = threading.Lock()


def _descendants(graph: OntologyGraph) -> dict[str, set[str]]:
    """Superclass → every subclass in the closure (asserted or inferred), once per graph version."""
    found = _descendants_cache.get(graph.version)
    if found is not None:
        return found
    inverted: dict[str, set[str]] = {}
    for iri, ancestors in graph.ancestors.items():
        for ancestor in ancestors:
            inverted.setdefault(ancestor, set()).add(iri)
    with _descendants_lock:
        _descendants_cache.clear()
        _descendants_cache[graph.version] = inverted
    return inverted


def _similarities(query: str, domain: str | None) -> dict[str, float]:
    """Cosine similarity of the query to its ``SEMANTIC_CANDIDATES`` nearest classes (pgvector)."""
    vector = embed_text(text=query)
    rows = OntologyClass.objects.filter(embedding__isnull=False)
    if domain:
        rows = rows.filter(domain=domain)
    with hnsw_filtered_scan():
        nearest = list(
            rows.annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance")
            .values_list("iri", "distance")[:SEMANTIC_CANDIDATES]
        )
    return {iri: 1 - float(distance) for iri, distance in nearest}


def domain_check(graph: OntologyGraph, domain: str | None) -> str | None:
    if not domain:
        return None
    known = graph.lexical.domains
    if domain not in known:
        raise NotFound(
            f"Unknown ontology domain {domain!r}; known domains: {', '.join(known) or 'none yet'}.",
            details={"field": "domain", "domain": domain, "known": known},
        )
    return domain


def ontology_discover(*, query: str, limit: int = 20, domain: str | None = None) -> list[dict[str, Any]]:
    """Classes for ``query``, best first, in the seed's result shape.

    Scoring: a class matches directly with ``relevance = 0.6·L + 0.4·S`` where ``L`` is the lexical
    score (1.0 the query is the preferred or an alternative term; 0.9 it is a phrase of the
    preferred term, 0.8 of an alternative term, 0.6 of the definition; otherwise 0.5 × the share of
    the query's words, stop words aside, found in the terms and definition) and ``S`` the cosine
    similarity of the query's and the class's embeddings (0 unless the class is among the 30
    nearest). A class is a direct match when ``L > 0`` or ``S ≥ 0.45``. Then the hierarchy: every
    subclass (in the OWL 2 RL closure) of a direct match joins with ``relevance(match) × 0.8^d``,
    ``d`` its distance down the asserted hierarchy, unless it scores better directly. A class
    that joined only through subsumptions the reasoner inferred (no match is its asserted parent)
    has ``whelk_inferred: true``. Ties go to the higher quality score, then the IRI.

    ``L`` comes from the version's lexical index (``lexical.py``), not a scan of the classes. A
    match is expanded only while ``relevance(match) × 0.8`` — the most any of its subclasses can
    get — can still reach the ``limit``-th best direct match in scope: a subclass below that
    cannot enter the answer, so leaving it out changes nothing.
    """
    text = normal(query)
    if len(text) < 2:
        raise ValidationFailed("The query must hold at least 2 characters.", details={"field": "query"})
    graph = ontology_graph()
    domain = domain_check(graph, domain)
    lexical = graph.lexical.scores(text)
    similarities = _similarities(text, domain)
    semantic = {iri for iri, similarity in similarities.items() if similarity >= SEMANTIC_FLOOR}
    candidates: dict[str, _Candidate] = {}
    for iri in lexical.keys() | semantic:
        if iri in graph.classes:
            similarity = similarities.get(iri, 0.0)
            score = LEXICAL_WEIGHT * lexical.get(iri, 0.0) + SEMANTIC_WEIGHT * max(similarity, 0.0)
            candidates[iri] = _Candidate(iri, score, direct=True)
    direct = sorted(candidates.values(), key=lambda candidate: -candidate.score)
    direct_iris = set(candidates)

    def rank(candidate: _Candidate) -> tuple[float, float, str]:
        return (-round(candidate.score, 6), -graph.classes[candidate.iri].quality_score, candidate.iri)

    def in_scope() -> Iterator[_Candidate]:
        return (c for c in candidates.values() if not domain or graph.classes[c.iri].domain == domain)

    best = heapq.nsmallest(limit, in_scope(), key=rank)
    reachable = round(best[-1].score, 6) - _RANK_TOLERANCE if len(best) == limit else float("-inf")
    descendants = _descendants(graph)
    for match in direct:
        if match.score * EXPANSION_DECAY < reachable:
            break
        below = descendants.get(match.iri, set())
        if not below:
            continue
        depths = subclass_depths(graph, {match.iri})
        for iri in below:
            score = match.score * EXPANSION_DECAY ** depths.get(iri, 2)
            found = candidates.get(iri)
            if found is None:
                candidates[iri] = _Candidate(iri, score, direct=False)
            elif not found.direct:
                found.score = max(found.score, score)
    ranked = heapq.nsmallest(limit, in_scope(), key=rank)
    for candidate in ranked:
        if not candidate.direct:  # joined through an asserted parent that matched directly?
            candidate.asserted_path = not direct_iris.isdisjoint(graph.parents.get(candidate.iri, ()))
    return [_discovery_result(graph, candidate) for candidate in ranked]


def _discovery_result(graph: OntologyGraph, candidate: _Candidate) -> dict[str, Any]:
    cls = graph.classes[candidate.iri]
    relationships = [
        {"rel_type": SUBCLASS_OF, "target_iri": parent, "target_term": _term(graph, parent)}
        for parent in cls.parent_iris
    ] + [
        {"rel_type": item["type"], "target_iri": item["target"], "target_term": _term(graph, item["target"])}
        for item in cls.relationships
    ]
    return {
        "iri": cls.iri,
        "preferred_term": cls.preferred_term,
        "definition_summary": summary(cls.definition),
        "relevance_score": round(candidate.score, 4),
        "quality_score": cls.quality_score,
        "domain": cls.domain,
        "relationships": relationships,
        "whelk_inferred": not candidate.direct and not candidate.asserted_path,
    }


# --- read -------------------------------------------------------------------------------------


def _incoming(graph: OntologyGraph, iri: str) -> list[tuple[str, str]]:
    """(subject, kind) of every note relationship and disjointness whose object is ``iri``."""
    return list(graph.incoming.get(iri, ()))


def _axioms(graph: OntologyGraph, cls: OntologyClass) -> list[dict[str, Any]]:
    """Axioms about ``cls`` as subject: SubClassOf (asserted and inferred), DisjointWith and the
    relationships, each marked ``is_inferred`` when only the OWL 2 RL closure holds it."""
    subject = URIRef(cls.iri)
    axioms = [
        {"axiom_type": "SubClassOf", "subject": cls.iri, "object": parent, "is_inferred": False}
        for parent in sorted(graph.parents.get(cls.iri, ()))
    ]
    axioms += [
        {"axiom_type": "SubClassOf", "subject": cls.iri, "object": ancestor, "is_inferred": True}
        for ancestor in sorted(graph.inferred_ancestors(cls.iri))
    ]
    disjoint = {str(o) for o in graph.closure.objects(subject, OWL.disjointWith)}
    axioms += [
        {
            "axiom_type": "DisjointWith",
            "subject": cls.iri,
            "object": other,
            "is_inferred": graph.is_inferred(cls.iri, OWL.disjointWith, other),
        }
        for other in sorted(disjoint)
    ]
    for kind in RELATIONSHIP_TYPES:
        prop = relationship_property(kind)
        for target in sorted(str(o) for o in graph.closure.objects(subject, prop) if isinstance(o, URIRef)):
            inferred = graph.is_inferred(cls.iri, prop, target)
            axioms.append({"axiom_type": kind, "subject": cls.iri, "object": target, "is_inferred": inferred})
    return axioms


def _related_notes(graph: OntologyGraph, cls: OntologyClass) -> list[dict[str, Any]]:
    edges: list[tuple[str, str, str]] = [(parent, SUBCLASS_OF, "outgoing") for parent in cls.parent_iris]
    edges += [(child, SUBCLASS_OF, "incoming") for child in sorted(graph.children.get(cls.iri, ()))]
    edges += [(other, DISJOINT_WITH, "outgoing") for other in cls.disjoint_iris]
    edges += [(item["target"], item["type"], "outgoing") for item in cls.relationships]
    edges += [(subject, kind, "incoming") for subject, kind in _incoming(graph, cls.iri)]
    related = []
    for iri, kind, direction in dict.fromkeys(edges):
        other = graph.classes.get(iri)
        related.append(
            {
                "iri": iri,
                "preferred_term": other.preferred_term if other else iri_compact(iri),
                "relationship_type": kind,
                "direction": direction,
                "summary": summary(other.definition) if other else "",
            }
        )
    return related


def schema_context(graph: OntologyGraph, cls: OntologyClass) -> str:
    """A text an agent can ground SPARQL on: prefixes, this class, its neighbourhood, the properties."""
    compact = iri_compact
    prefixes = {**PREFIXES, "skos": str(SKOS)}
    lines = [f"PREFIX {prefix}: <{namespace}>" for prefix, namespace in prefixes.items()]
    lines += [
        "",
        f"Class {compact(cls.iri)} — {cls.preferred_term!r} ({cls.term_id}, domain {cls.domain}).",
        f"Superclasses (asserted, rdfs:subClassOf): {', '.join(map(compact, cls.parent_iris)) or 'none'}.",
        "Superclasses (inferred by OWL 2 RL): "
        + (", ".join(map(compact, sorted(graph.inferred_ancestors(cls.iri)))) or "none")
        + ".",
        f"Subclasses: {', '.join(map(compact, sorted(graph.children.get(cls.iri, ())))) or 'none'}.",
    ]
    if cls.disjoint_iris:
        lines.append(f"Disjoint with (owl:disjointWith): {', '.join(map(compact, cls.disjoint_iris))}.")
    used = sorted(
        {item["type"] for item in cls.relationships} | {kind for _, kind in _incoming(graph, cls.iri)}
    )
    for kind in used:
        if kind == DISJOINT_WITH:
            continue
        targets = [compact(item["target"]) for item in cls.relationships if item["type"] == kind]
        lines.append(
            f"{compact(str(relationship_property(kind)))}: {', '.join(targets) or '(incoming only)'}."
        )
    lines += [
        "Properties on every class: rdfs:label (preferred term), skos:altLabel, skos:definition, "
        "cw:termId, cw:domain, rdfs:subClassOf, owl:disjointWith; relationships between classes: "
        + ", ".join(compact(str(relationship_property(kind))) for kind in RELATIONSHIP_TYPES)
        + ".",
        "Example: SELECT ?sub ?label WHERE { ?sub rdfs:subClassOf "
        f"{compact(cls.iri)} ; rdfs:label ?label }} LIMIT 50",
    ]
    return "\n".join(lines)


def ontology_read(*, iri: str) -> dict[str, Any]:
    """The enriched note of the class ``iri`` (a full IRI or ``cw:Name``)."""
    graph = ontology_graph()
    cls = class_get(graph, iri)
    return {
        "iri": cls.iri,
        "term_id": cls.term_id,
        "preferred_term": cls.preferred_term,
        "markdown_content": cls.markdown,
        "ontology_metadata": {
            "owl_class": iri_compact(cls.iri),
            "physicality": cls.physicality,
            "role": cls.role,
            "domain": cls.domain,
            "quality_score": cls.quality_score,
            "authority_score": cls.authority_score,
            "maturity": cls.maturity,
            "status": cls.status,
            "parent_classes": list(cls.parent_iris),
        },
        "whelk_axioms": _axioms(graph, cls),
        "related_notes": _related_notes(graph, cls),
        "schema_context": schema_context(graph, cls),
    }


# --- traverse ---------------------------------------------------------------------------------


def _neighbours(
    graph: OntologyGraph, cls: OntologyClass, incoming: dict[str, list[tuple[str, str]]]
) -> Iterator[tuple[str, tuple[str, str, str]]]:
    """(neighbour, (source, target, type)) of every asserted edge touching ``cls``."""
    iri = cls.iri
    for parent in cls.parent_iris:
        yield parent, (iri, parent, SUBCLASS_OF)
    for child in sorted(graph.children.get(iri, ())):
        yield child, (child, iri, SUBCLASS_OF)
    for other in cls.disjoint_iris:
        yield other, (iri, other, DISJOINT_WITH)
    for item in cls.relationships:
        yield item["target"], (iri, item["target"], item["type"])
    for subject, kind in incoming.get(iri, ()):
        yield subject, (subject, iri, kind)


def ontology_traverse(
    *, start_iri: str, depth: int = 3, relationship_types: list[str] | None = None
) -> dict[str, Any]:
    """Breadth-first from ``start_iri`` over the asserted edges (subclass both ways, disjointness and
    the note relationships, both ways), ``depth`` steps at most, each class once; edges to IRIs that
    are not ontology classes (e.g. ``prov:Entity``) are skipped."""
    if not 1 <= depth <= MAX_DEPTH:
        raise ValidationFailed(f"depth must be 1 to {MAX_DEPTH}.", details={"field": "depth"})
    if relationship_types is not None:
        unknown = sorted(set(relationship_types) - set(EDGE_TYPES))
        if unknown:
            raise ValidationFailed(
                f"Unknown relationship types: {', '.join(unknown)}; known: {', '.join(EDGE_TYPES)}.",
                details={"field": "relationshipTypes", "known": list(EDGE_TYPES)},
            )
    allowed = set(relationship_types) if relationship_types is not None else set(EDGE_TYPES)
    graph = ontology_graph()
    start = class_get(graph, start_iri, field="startIri")
    incoming = graph.incoming  # built once per ontology version
    depths = {start.iri: 0}
    nodes = [start]
    edges: dict[tuple[str, str, str], None] = {}
    queue = deque([start])
    while queue and len(depths) < MAX_TRAVERSAL_NODES:
        current = queue.popleft()
        if depths[current.iri] >= depth:
            continue
        for neighbour, edge in _neighbours(graph, current, incoming):
            if edge[2] not in allowed or neighbour not in graph.classes:
                continue
            edges.setdefault(edge)
            if neighbour not in depths and len(depths) < MAX_TRAVERSAL_NODES:
                depths[neighbour] = depths[current.iri] + 1
                nodes.append(graph.classes[neighbour])
                queue.append(graph.classes[neighbour])
    return {
        "start_iri": start.iri,
        "nodes": [
            {"iri": n.iri, "preferred_term": n.preferred_term, "domain": n.domain, "depth": depths[n.iri]}
            for n in nodes
        ],
        "edges": [
            {"source_iri": source, "target_iri": target, "relationship_type": kind}
            for source, target, kind in edges
            if source in depths and target in depths
        ],
    }


# --- validate ---------------------------------------------------------------------------------


def _axiom_kind(axiom_type: str) -> str | None:
    """``SubClassOf``/``subClassOf`` → ``SubClassOf``; ``DisjointWith`` likewise; a relationship name
    (``mitigates``, ``has-part`` or ``hasPart``) → itself; anything else ``None``."""
    key = re.sub(r"[^a-z]", "", axiom_type.lower())
    if key == "subclassof":
        return "SubClassOf"
    if key in ("disjointwith", "disjointclasses"):
        return "DisjointWith"
    for kind in RELATIONSHIP_TYPES:
        if key == kind.replace("-", ""):
            return kind
    return None


def _disjoint_pairs(graph: OntologyGraph) -> set[frozenset[str]]:
    return {
        frozenset((str(s), str(o)))
        for s, o in graph.closure.subject_objects(OWL.disjointWith)
        if isinstance(s, URIRef) and isinstance(o, URIRef)
    }


def _with_ancestors(graph: OntologyGraph, iri: str) -> set[str]:
    return {iri, *graph.ancestors.get(iri, set()), *graph.parents.get(iri, set())}


@dataclass
class _Checks:
    """What ``ontology_validate`` reads once per batch, and what it finds."""

    graph: OntologyGraph
    known: set[str]
    disjoint: set[frozenset[str]]
    descendants: dict[str, set[str]]
    errors: list[str]
    hints: list[str]


def ontology_validate(*, axioms: list[dict[str, str]]) -> dict[str, Any]:
    """Each axiom checked against the current ontology and its closure, as if added alone.

    Errors: an unknown axiom type; a subject that is not an ontology class, an object that is not
    a known class (ontology classes and the external superclasses they name, e.g. ``prov:Entity``);
    ``SubClassOf`` that closes a subclass cycle, or that puts the subject under a class disjoint
    with one of its (closure) superclasses — the subject would be unsatisfiable (``owl:Nothing``);
    ``DisjointWith`` of a class with itself, between a class and one of its super- or subclasses,
    or between two classes with a common subclass. Hints: what is already asserted or inferred,
    and "did you mean" for unknown names.
    """
    graph = ontology_graph()
    checks = _Checks(
        graph=graph,
        known=set(graph.classes) | {parent for parents in graph.parents.values() for parent in parents},
        disjoint=_disjoint_pairs(graph),
        descendants=_descendants(graph),
        errors=[],
        hints=[],
    )
    for index, axiom in enumerate(axioms):
        _axiom_check(checks, f"axioms[{index}]", axiom)
    return {
        "success": True,
        "valid": not checks.errors,
        "errors": checks.errors,
        "hints": checks.hints,
        "axiom_count": len(axioms),
    }


def _axiom_check(checks: _Checks, at: str, axiom: dict[str, str]) -> None:
    graph = checks.graph
    kind = _axiom_kind(axiom["axiom_type"])
    if kind is None:
        checks.errors.append(f"{at}: unknown axiom_type {axiom['axiom_type']!r}.")
        checks.hints.append(
            f"{at}: axiom_type is SubClassOf, DisjointWith or a relationship: "
            + ", ".join(RELATIONSHIP_TYPES)
            + "."
        )
        return
    subject, obj = iri_resolve(axiom["subject"]), iri_resolve(axiom["object"])
    unknown = False
    for role, iri, pool in (("subject", subject, set(graph.classes)), ("object", obj, checks.known)):
        if iri not in pool:
            unknown = True
            checks.errors.append(f"{at}: the {role} {axiom[role]!r} is not a class of the ontology.")
            if suggestions := _suggestions(graph, iri):
                checks.hints.append(f"{at}: did you mean {', '.join(suggestions)}?")
    if unknown:
        return
    if kind == "SubClassOf":
        _subclass_check(checks, at, subject, obj)
    elif kind == "DisjointWith":
        _disjoint_check(checks, at, subject, obj)
    else:
        triple = (URIRef(subject), relationship_property(kind), URIRef(obj))
        s, o = iri_compact(subject), iri_compact(obj)
        if triple in graph.asserted:
            checks.hints.append(f"{at}: {s} {kind} {o} is already asserted.")
        elif triple in graph.closure:
            checks.hints.append(f"{at}: {s} {kind} {o} is already inferred (OWL 2 RL).")


def _subclass_check(checks: _Checks, at: str, subject: str, obj: str) -> None:
    graph = checks.graph
    s, o = iri_compact(subject), iri_compact(obj)
    if subject == obj:
        checks.hints.append(f"{at}: {s} SubClassOf itself always holds; it adds nothing.")
    elif obj in graph.parents.get(subject, set()):
        checks.hints.append(f"{at}: {s} SubClassOf {o} is already asserted.")
    elif obj in graph.ancestors.get(subject, set()):
        checks.hints.append(f"{at}: {s} SubClassOf {o} is already inferred (OWL 2 RL).")
    elif subject in _with_ancestors(graph, obj):
        checks.errors.append(f"{at}: {s} SubClassOf {o} closes a subclass cycle ({o} is already under {s}).")
    else:
        clash = sorted(
            (upper, lower)
            for upper in _with_ancestors(graph, obj)
            for lower in _with_ancestors(graph, subject)
            if frozenset((upper, lower)) in checks.disjoint
        )
        if clash:
            upper, lower = clash[0]
            checks.errors.append(
                f"{at}: {s} SubClassOf {o} makes {s} unsatisfiable: {iri_compact(upper)} and "
                f"{iri_compact(lower)} are disjoint."
            )


def _disjoint_check(checks: _Checks, at: str, subject: str, obj: str) -> None:
    graph = checks.graph
    s, o = iri_compact(subject), iri_compact(obj)
    common = sorted(checks.descendants.get(subject, set()) & checks.descendants.get(obj, set()))
    if subject == obj:
        checks.errors.append(f"{at}: {s} cannot be disjoint with itself (it would be unsatisfiable).")
    elif frozenset((subject, obj)) in checks.disjoint:
        checks.hints.append(f"{at}: {s} DisjointWith {o} already holds.")
    elif obj in _with_ancestors(graph, subject) or subject in _with_ancestors(graph, obj):
        checks.errors.append(f"{at}: {s} and {o} are sub- and superclass; disjoint, the subclass is empty.")
    elif common:
        checks.errors.append(
            f"{at}: {s} and {o} have a common subclass, {iri_compact(common[0])}, which would be "
            "unsatisfiable."
        )


# --- status -----------------------------------------------------------------------------------


def ontology_status() -> dict[str, Any]:
    """Health and capabilities: ``healthy`` when the graph holds classes and none is unsatisfiable."""
    from apps.mcp_server.tools import CORTEX_TOOLS_BY_NAME  # the tools import this module

    graph = ontology_graph()
    healthy = bool(graph.classes) and not graph.unsatisfiable
    return {
        "service": SERVICE,
        "status": "healthy" if healthy else "degraded",
        "capabilities": [name for name in SEED_CAPABILITIES if name in CORTEX_TOOLS_BY_NAME],
        "ontology_version": graph.version,
        "class_count": len(graph.classes),
        "inferred_triple_count": len(graph.closure) - len(graph.asserted),
        "unsatisfiable_classes": sorted(graph.unsatisfiable),
        "reasoner": "owlrl (OWL 2 RL)",
        "graph_build_ms": round(graph.build_ms, 1),
    }
