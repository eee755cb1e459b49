"""What the analysts' ontology pages show (``views.py``): the classes by domain, one class with its
hierarchy (asserted and inferred) and relationships in both directions, and the exports."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from typing import Any

from apps.ontology.graph import OntologyGraph, ontology_graph
from apps.ontology.models import OntologyClass
from apps.ontology.notes import iri_compact, source_link
from apps.ontology.services import ontology_export_markdown

SUBCLASS_OF = "subClassOf"
DISJOINT_WITH = "disjointWith"


@dataclass(frozen=True)
class ClassRef:
    """A class named on a page: its term, and its local name when it is one of ours (a link)."""

    iri: str
    term: str
    local_name: str = ""  # empty for external classes (prov:Entity, owl:Thing): no page


@dataclass(frozen=True)
class Relation:
    kind: str
    other: ClassRef
    outgoing: bool  # this class is the subject


@dataclass
class ClassView:
    cls: OntologyClass
    source_title: str
    source_url: str
    parents: list[ClassRef] = field(default_factory=list)
    children: list[ClassRef] = field(default_factory=list)
    inferred: list[ClassRef] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    disjoint: list[ClassRef] = field(default_factory=list)


def class_ref(graph: OntologyGraph, iri: str) -> ClassRef:
    cls = graph.classes.get(iri)
    if cls is None:
        return ClassRef(iri=iri, term=iri_compact(iri))
    return ClassRef(iri=iri, term=cls.preferred_term, local_name=cls.local_name)


def _refs(graph: OntologyGraph, iris: set[str] | list[str]) -> list[ClassRef]:
    return sorted((class_ref(graph, iri) for iri in iris), key=lambda ref: (ref.term.lower(), ref.iri))


def classes_by_domain(graph: OntologyGraph | None = None) -> list[tuple[str, list[OntologyClass]]]:
    """Every class, grouped by domain (domains and classes in alphabetical order)."""
    graph = graph or ontology_graph()
    domains: dict[str, list[OntologyClass]] = {}
    for cls in graph.classes.values():
        domains.setdefault(cls.domain, []).append(cls)
    return [
        (domain, sorted(classes, key=lambda c: c.preferred_term.lower()))
        for domain, classes in sorted(domains.items())
    ]


def class_view(local_name: str) -> ClassView | None:
    """The class page of ``local_name`` (exact), or ``None`` when there is no such class."""
    graph = ontology_graph()
    cls = next((c for c in graph.classes.values() if c.local_name == local_name), None)
    if cls is None:
        return None
    title, url = source_link(cls.source)
    view = ClassView(
        cls=cls,
        source_title=title,
        source_url=url if url.startswith(("https://", "http://")) else "",
        parents=_refs(graph, graph.parents.get(cls.iri, set())),
        children=_refs(graph, graph.children.get(cls.iri, set())),
        inferred=_refs(graph, graph.inferred_ancestors(cls.iri)),
        disjoint=_refs(graph, cls.disjoint_iris),
    )
    relations = [Relation(item["type"], class_ref(graph, item["target"]), True) for item in cls.relationships]
    for other in graph.classes.values():
        for item in other.relationships:
            if item["target"] == cls.iri:
                relations.append(Relation(item["type"], class_ref(graph, other.iri), False))
        if cls.iri in other.disjoint_iris and other.iri not in cls.disjoint_iris:
            view.disjoint.append(class_ref(graph, other.iri))
    view.relations = sorted(relations, key=lambda r: (not r.outgoing, r.kind, r.other.term.lower()))
    return view


def export_turtle(*, inferred: bool = False) -> str:
    """The asserted graph (or its OWL 2 RL closure) as Turtle."""
    graph = ontology_graph()
    return (graph.closure if inferred else graph.asserted).serialize(format="turtle")


def export_zip() -> bytes:
    """The notes as markdown, one folder per domain (``<domain>/<LocalName>.md``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, markdown in ontology_export_markdown().items():
            archive.writestr(f"ontology/{name}", markdown)
    return buffer.getvalue()


def facets(cls: OntologyClass) -> list[tuple[str, Any]]:
    return [
        ("Domain", cls.domain),
        ("Physicality", cls.physicality),
        ("Role", cls.role),
        ("Maturity", cls.maturity),
        ("Status", cls.status),
        ("Quality score", f"{cls.quality_score:.2f}"),
        ("Authority score", f"{cls.authority_score:.2f}"),
    ]
