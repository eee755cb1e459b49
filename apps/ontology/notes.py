"""Ontology notes as text: the Logseq-style property blocks of ``config/ontology/`` (its README is
the format) read into plain dicts, and written back from them (export, a proposal's preview).

Pure functions: no database, no graph. ``note_parse`` refuses what the format does not allow and
names the property, so a broken note is found when it is loaded, not when an agent reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from apps.ontology.models import NAMESPACE, RELATIONSHIP_TYPES, Maturity, NoteStatus, Physicality, Role

PREFIXES = {
    "cw": NAMESPACE,
    "prov": "http://www.w3.org/ns/prov#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
}
BLOCK_START = "- ### OntologyBlock"
ABOUT_START = "- ## About"
LOCAL_NAME_RE = re.compile(r"^[A-Z][A-Za-z0-9]{0,119}$")
TERM_ID_RE = re.compile(r"^CW-(COR|SEC|CMP|PRF|TEC|AGT)-\d{4}$")
DOMAINS = ("cortexweb", "security", "compliance", "performance", "technology")
_PROPERTY_RE = re.compile(r"^  - ([a-z][a-z-]*):: ?(.*)$")
_REF_RE = re.compile(r"\[\[([^\]]+)\]\]")
_LINK_RE = re.compile(r"^\[(?P<title>[^\]]+)\]\((?P<url>https?://[^)\s]+)\)$")

REQUIRED = (
    "term-id",
    "preferred-term",
    "definition",
    "owl-class",
    "physicality",
    "role",
    "domain",
    "quality-score",
    "authority-score",
    "maturity",
    "status",
    "source",
)
LIST_PROPERTIES = ("alt-terms", "knowledge-entries")
REF_PROPERTIES = ("is-subclass-of", "disjoint-with", *RELATIONSHIP_TYPES)


class NoteError(ValueError):
    """A note that does not follow the format; ``field`` names the property."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@dataclass
class Note:
    """A note's content, with every reference as a full IRI."""

    local_name: str
    term_id: str
    preferred_term: str
    definition: str
    physicality: str
    role: str
    domain: str
    quality_score: float
    authority_score: float
    maturity: str
    status: str
    source: str
    alt_terms: list[str] = field(default_factory=list)
    parent_iris: list[str] = field(default_factory=list)
    disjoint_iris: list[str] = field(default_factory=list)
    relationships: list[dict[str, str]] = field(default_factory=list)
    knowledge_entries: list[str] = field(default_factory=list)
    about: str = ""

    @property
    def iri(self) -> str:
        return NAMESPACE + self.local_name

    def as_fields(self) -> dict[str, Any]:
        """The ``OntologyClass`` fields of this note (without markdown and embedding)."""
        return {
            "iri": self.iri,
            "local_name": self.local_name,
            "term_id": self.term_id,
            "preferred_term": self.preferred_term,
            "alt_terms": self.alt_terms,
            "definition": self.definition,
            "physicality": self.physicality,
            "role": self.role,
            "domain": self.domain,
            "quality_score": self.quality_score,
            "authority_score": self.authority_score,
            "maturity": self.maturity,
            "status": self.status,
            "source": self.source,
            "parent_iris": self.parent_iris,
            "disjoint_iris": self.disjoint_iris,
            "relationships": self.relationships,
            "knowledge_entries": self.knowledge_entries,
            "about": self.about,
        }


def iri_expand(name: str) -> str:
    """``LocalName`` → a cw: IRI; ``prov:Entity`` → the PROV IRI; a full IRI stays as it is."""
    name = name.strip()
    if name.startswith(("http://", "https://")):
        return name
    prefix, _, rest = name.partition(":")
    if rest and prefix in PREFIXES:
        return PREFIXES[prefix] + rest
    if not LOCAL_NAME_RE.match(name):
        raise NoteError(f"{name!r} is not a class name (UpperCamelCase letters and digits).")
    return NAMESPACE + name


def iri_compact(iri: str) -> str:
    """The shortest prefixed name of ``iri`` (``cw:Fact``), or the IRI itself."""
    for prefix, namespace in PREFIXES.items():
        if iri.startswith(namespace):
            return f"{prefix}:{iri[len(namespace) :]}"
    return iri


def _ref_name(iri: str) -> str:
    return iri[len(NAMESPACE) :] if iri.startswith(NAMESPACE) else iri_compact(iri)


def note_parse(text: str, *, local_name: str | None = None) -> Note:
    """Read one note; ``NoteError`` naming the property when it breaks the format."""
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != BLOCK_START:
        raise NoteError(f"A note starts with the line {BLOCK_START!r}.")
    properties: dict[str, str] = {}
    about_lines: list[str] = []
    in_about = False
    for number, line in enumerate(lines[1:], start=2):
        if in_about:
            about_lines.append(line[4:] if line.startswith("  - ") else line.strip())
            continue
        if line.strip() == ABOUT_START:
            in_about = True
            continue
        if not line.strip():
            continue
        match = _PROPERTY_RE.match(line)
        if match is None:
            raise NoteError(f"Line {number} is not a property line '  - name:: value'.")
        name, value = match.group(1), match.group(2).strip()
        if name in properties:
            raise NoteError(f"Property {name!r} is given twice.", field=name)
        properties[name] = value
    for name in REQUIRED:
        if not properties.get(name):
            raise NoteError(f"The note has no {name!r}.", field=name)
    owl_class = properties["owl-class"]
    if not owl_class.startswith("cw:") or not LOCAL_NAME_RE.match(owl_class[3:]):
        raise NoteError("owl-class must be cw:<UpperCamelCase name>.", field="owl-class")
    name = owl_class[3:]
    if local_name is not None and local_name != name:
        raise NoteError(
            f"owl-class {owl_class} does not match the file name {local_name}.", field="owl-class"
        )
    unknown = sorted(set(properties) - set(REQUIRED) - set(LIST_PROPERTIES) - set(REF_PROPERTIES))
    if unknown:
        raise NoteError(f"Unknown properties: {', '.join(unknown)}.", field=unknown[0])
    note = Note(
        local_name=name,
        term_id=_choice(properties, "term-id", pattern=TERM_ID_RE),
        preferred_term=properties["preferred-term"][:200],
        definition=properties["definition"],
        physicality=_choice(properties, "physicality", Physicality.values),
        role=_choice(properties, "role", Role.values),
        domain=_choice(properties, "domain", DOMAINS),
        quality_score=_unit(properties, "quality-score"),
        authority_score=_unit(properties, "authority-score"),
        maturity=_choice(properties, "maturity", Maturity.values),
        status=_choice(properties, "status", NoteStatus.values),
        source=properties["source"][:500],
        alt_terms=_list(properties.get("alt-terms", "")),
        knowledge_entries=_list(properties.get("knowledge-entries", "")),
        about="\n".join(about_lines).strip(),
    )
    note.parent_iris = _refs(properties, "is-subclass-of")
    note.disjoint_iris = _refs(properties, "disjoint-with")
    note.relationships = [
        {"type": kind, "target": target} for kind in RELATIONSHIP_TYPES for target in _refs(properties, kind)
    ]
    return note


def _choice(
    properties: dict[str, str], name: str, allowed: Any = (), *, pattern: re.Pattern[str] | None = None
) -> str:
    value = properties[name]
    if pattern is not None and not pattern.match(value):
        raise NoteError(f"{name} {value!r} does not have the form {pattern.pattern}.", field=name)
    if allowed and value not in allowed:
        raise NoteError(f"{name} must be one of {', '.join(allowed)}; not {value!r}.", field=name)
    return value


def _unit(properties: dict[str, str], name: str) -> float:
    try:
        value = float(properties[name])
    except ValueError:
        raise NoteError(f"{name} must be a number from 0 to 1.", field=name) from None
    if not 0.0 <= value <= 1.0:
        raise NoteError(f"{name} must be from 0 to 1.", field=name)
    return value


def _list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _refs(properties: dict[str, str], name: str) -> list[str]:
    value = properties.get(name, "")
    found = _REF_RE.findall(value)
    if value and not found:
        raise NoteError(f"{name} takes [[ClassName]] references.", field=name)
    try:
        return list(dict.fromkeys(iri_expand(ref) for ref in found))
    except NoteError as error:
        raise NoteError(f"{name}: {error}", field=name) from None


def note_render(note: Note) -> str:
    """The note as markdown in the format ``note_parse`` reads (round trip: parse(render(n)) == n)."""
    lines = [
        BLOCK_START,
        f"  - term-id:: {note.term_id}",
        f"  - preferred-term:: {note.preferred_term}",
    ]
    if note.alt_terms:
        lines.append(f"  - alt-terms:: {', '.join(note.alt_terms)}")
    lines += [
        f"  - definition:: {' '.join(note.definition.split())}",
        f"  - owl-class:: cw:{note.local_name}",
        f"  - physicality:: {note.physicality}",
        f"  - role:: {note.role}",
        f"  - domain:: {note.domain}",
        f"  - quality-score:: {note.quality_score:g}",
        f"  - authority-score:: {note.authority_score:g}",
        f"  - maturity:: {note.maturity}",
        f"  - status:: {note.status}",
        f"  - source:: {note.source}",
    ]
    if note.parent_iris:
        lines.append("  - is-subclass-of:: " + ", ".join(f"[[{_ref_name(iri)}]]" for iri in note.parent_iris))
    if note.disjoint_iris:
        lines.append(
            "  - disjoint-with:: " + ", ".join(f"[[{_ref_name(iri)}]]" for iri in note.disjoint_iris)
        )
    for kind in RELATIONSHIP_TYPES:
        targets = [r["target"] for r in note.relationships if r["type"] == kind]
        if targets:
            lines.append(f"  - {kind}:: " + ", ".join(f"[[{_ref_name(iri)}]]" for iri in targets))
    if note.knowledge_entries:
        lines.append(f"  - knowledge-entries:: {', '.join(note.knowledge_entries)}")
    lines.append(ABOUT_START)
    for paragraph in (note.about or "").split("\n"):
        if paragraph.strip():
            lines.append(f"  - {paragraph.strip()}")
    return "\n".join(lines) + "\n"


def source_link(source: str) -> tuple[str, str]:
    """``(title, url)`` of a ``[title](url)`` source; ``(text, "")`` for plain text."""
    match = _LINK_RE.match(source.strip())
    return (match.group("title"), match.group("url")) if match else (source.strip(), "")
