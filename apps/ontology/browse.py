"""What the analysts' ontology pages show (``views.py``): the classes by domain, one class with its
hierarchy (asserted and inferred), relationships in both directions, its About text with the
``[[Name]]`` references as links, and the knowledge entries it is about; and the exports.

Knowledge entries and classes are linked by the notes: a class's ``knowledge-entries`` property
lists the ids of the entries (``config/knowledge/<domain>/*.json``) that state facts about it —
the starter notes list 163, each an entry of the packs. ``OntologyGraph.classes_by_entry`` reads
that the other way round, once per version, for the entry's side (the knowledge admin). The link
is not added to ``ontology_read``'s answer: the seed fixes the enriched note's fields and the tool
keeps them exactly, and the ids are already in its ``markdown_content`` (the note as written).
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.urls import reverse
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString

from apps.knowledge.models import KnowledgeEntry
from apps.ontology.graph import OntologyGraph, ontology_graph
from apps.ontology.models import NAMESPACE, OntologyClass
from apps.ontology.notes import LOCAL_NAME_RE, iri_compact, source_link
from apps.ontology.services import ontology_export_markdown
from apps.wikidata.models import Fact

SUBCLASS_OF = "subClassOf"
DISJOINT_WITH = "disjointWith"
# A Logseq reference in a note's text: [[LocalName]].
_REFERENCE_RE = re.compile(r"\[\[([^\[\]]+)\]\]")


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


@dataclass(frozen=True)
class KnowledgeLink:
    """A knowledge entry a class's note names: its row when the packs hold it (``entry`` is ``None``
    for an id no loaded pack has, shown as the bare id)."""

    entry_id: str
    entry: KnowledgeEntry | None

    @property
    def url(self) -> str:
        """The entry's source URL when it is http(s) (a row can hold anything): a link, or none."""
        url = self.entry.url if self.entry else ""
        return url if url.startswith(("https://", "http://")) else ""


@dataclass
class ClassView:
    cls: OntologyClass
    source_title: str
    source_url: str
    about: list[SafeString] = field(default_factory=list)  # the About text's lines, as HTML
    knowledge: list[KnowledgeLink] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
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


@dataclass
class ClassNode:
    """A class in the index's tree, with its asserted subclasses of the same domain below it."""

    cls: OntologyClass
    terms: str  # what the filter matches, lower case: the preferred term, term id and local name
    children: list[ClassNode] = field(default_factory=list)


@dataclass
class DomainTree:
    name: str
    count: int  # classes of the domain (all of them, whatever the filter)
    nodes: list[ClassNode]
    open: bool  # shown unfolded: when a filter found classes in it


def class_tree(filter_text: str = "", graph: OntologyGraph | None = None) -> list[DomainTree]:
    """Every domain's classes as a tree: its roots are the classes with no asserted superclass in the
    domain, each with its subclasses below (a class with two parents appears under both). With
    ``filter_text``, only the classes whose terms contain it and the branches that lead to them, and
    only the domains that have one, unfolded. The page's script filters the same way as one types."""
    graph = graph or ontology_graph()
    needle = filter_text.strip().lower()
    trees = []
    for domain, classes in classes_by_domain(graph):
        by_iri = {cls.iri: cls for cls in classes}

        def node(
            cls: OntologyClass, path: frozenset[str], by_iri: dict[str, OntologyClass] = by_iri
        ) -> ClassNode:
            children = sorted(
                (
                    by_iri[iri]
                    for iri in graph.children.get(cls.iri, set())
                    if iri in by_iri and iri not in path
                ),
                key=lambda child: child.preferred_term.lower(),
            )
            return ClassNode(
                cls=cls,
                terms=_terms(cls),
                children=[node(child, path | {child.iri}) for child in children],
            )

        roots = [cls for cls in classes if not graph.parents.get(cls.iri, set()) & by_iri.keys()]
        nodes = [node(cls, frozenset({cls.iri})) for cls in roots]
        if needle:
            nodes = _pruned(nodes, needle)
            if not nodes:
                continue
        trees.append(DomainTree(name=domain, count=len(classes), nodes=nodes, open=bool(needle)))
    return trees


def class_filter_matches(filter_text: str, graph: OntologyGraph | None = None) -> int:
    """How many classes the tree's filter ``filter_text`` finds (0 without one)."""
    needle = filter_text.strip().lower()
    if not needle:
        return 0
    graph = graph or ontology_graph()
    return sum(1 for cls in graph.classes.values() if needle in _terms(cls))


def _terms(cls: OntologyClass) -> str:
    return f"{cls.preferred_term} {cls.term_id} {cls.local_name}".lower()


def _pruned(nodes: list[ClassNode], needle: str) -> list[ClassNode]:
    """The nodes that match ``needle`` or lead to one that does (with only such children)."""
    kept = []
    for item in nodes:
        children = _pruned(item.children, needle)
        if needle in item.terms or children:
            kept.append(ClassNode(cls=item.cls, terms=item.terms, children=children))
    return kept


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
        about=about_html(graph, cls.about),
        knowledge=knowledge_links(cls.knowledge_entries),
        facts=facts_about(cls),
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


#: The most stored facts a class page lists.
FACTS_ABOUT_LIMIT = 20


def facts_about(cls: OntologyClass) -> list[Fact]:
    """Stored Wikidata facts (from fact runs) whose subject or value is named by one of the class's terms
    — its preferred term or an alternative, compared without case: the facts an agent found about the
    concept. The notes carry no Wikidata ids, so the terms are the link; newest first."""
    terms = {term.strip() for term in (cls.preferred_term, *cls.alt_terms) if term and term.strip()}
    if not terms:
        return []
    named = Q()
    for term in terms:
        named |= Q(qid_label__iexact=term) | Q(value_label__iexact=term)
    return list(Fact.objects.filter(named).select_related("run").order_by("-created_at")[:FACTS_ABOUT_LIMIT])


def _reference_html(graph: OntologyGraph, name: str) -> SafeString:
    """``[[Name]]`` as a link to the class's page (its preferred term) when the ontology has the
    class; otherwise the name as plain text."""
    name = name.strip()
    cls = graph.classes.get(NAMESPACE + name) if LOCAL_NAME_RE.match(name) else None
    if cls is None:
        return escape(name)
    url = reverse("ontology:class_detail", args=[cls.local_name])
    return format_html('<a href="{}">{}</a>', url, cls.preferred_term)


def about_html(graph: OntologyGraph, about: str) -> list[SafeString]:
    """A note's About text as HTML, one item a line: every ``[[Name]]`` reference through
    ``_reference_html``, everything else escaped."""
    lines = []
    for line in about.splitlines():
        parts: list[SafeString] = []
        end = 0
        for match in _REFERENCE_RE.finditer(line):
            parts += [escape(line[end : match.start()]), _reference_html(graph, match.group(1))]
            end = match.end()
        parts.append(escape(line[end:]))
        lines.append(format_html_join("", "{}", ((part,) for part in parts)))
    return lines


def knowledge_links(entry_ids: list[str]) -> list[KnowledgeLink]:
    """The knowledge entries ``entry_ids`` name, in the note's order, with their rows."""
    rows = KnowledgeEntry.objects.filter(entry_id__in=entry_ids).select_related("domain").defer("embedding")
    by_id = {entry.entry_id: entry for entry in rows}
    return [KnowledgeLink(entry_id, by_id.get(entry_id)) for entry_id in dict.fromkeys(entry_ids)]


def classes_about_entry(entry_id: str) -> list[ClassRef]:
    """The ontology classes whose notes name the knowledge entry ``entry_id``, by term."""
    graph = ontology_graph()
    return _refs(graph, graph.classes_by_entry.get(entry_id, []))


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
