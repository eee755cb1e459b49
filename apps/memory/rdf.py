"""Agent memories as RDF (issue 13, item 5): Semem's vocabulary, PROV-O for supersession, and
CortexWeb's own terms for what Semem has no word for. Pure mapping: rows to a graph, a graph to
plain dicts; what may be stored (ownership, ids, limits) is ``services.memories_import``'s call.

Each memory is ``<urn:uuid:{id}>``, a ``semem:Interaction`` (so Semem's ``loadHistory`` query finds
it) and a ``prov:Entity``:

* Semem's terms (``http://purl.org/stuff/semem/``, seed 004): ``semem:output`` is the content (what
  the agent told: a told fact is the "output" of an interaction, nothing prompted it);
  ``semem:prompt`` is the ``prompt`` string of the memory's metadata when it has one and ``""``
  otherwise: Semem's ``loadHistory`` SELECT requires the triple, so it is never left out;
  ``semem:embedding`` and ``semem:concepts`` are JSON arrays in plain string literals, as Semem writes
  them; ``semem:timestamp`` is the creation time in **milliseconds** since the epoch (xsd:integer, as
  JavaScript's ``Date.now()`` gives it; on import a value below 10¹¹ is read as seconds, which
  covers files that wrote seconds); ``semem:accessCount`` (xsd:integer), ``semem:decayFactor``
  (xsd:decimal) and ``semem:memoryType`` (``"short-term"``/``"long-term"``).
* PROV-O: ``prov:generatedAtTime`` is ``valid_from`` and ``prov:invalidatedAtTime`` is
  ``valid_until`` (the time an entity stops being usable is exactly what supersession closes). The
  successor ``prov:wasRevisionOf`` the memory it superseded: a revision is PROV's derivation whose
  result is a revised version of the original, which is Zep's "supersede, don't delete".
  ``prov:wasInvalidatedBy`` is not used: its object is a ``prov:Activity`` and the successor is an
  entity. PROV-O has no forward property from the old entity to its revision, so the old one also
  carries ``cortex:supersededBy`` (the model's own link, which survives a successor that is not in
  the file, e.g. an export narrowed to one domain).
* CortexWeb's terms, in the namespace the fact provenance already uses (``urn:cortexweb:vocab:``):
  ``cortex:domain``, ``cortex:importance`` (xsd:decimal), ``cortex:pinned``, ``cortex:expiresAt``,
  ``cortex:metadata`` (an ``rdf:JSON`` literal), ``cortex:agent``, ``cortex:session``,
  ``cortex:chunkGroup`` (``urn:uuid:``) and ``cortex:chunkIndex``, ``cortex:lastAccessedAt``; the
  exact creation time is ``dcterms:created`` (``semem:timestamp`` keeps only milliseconds).

Not exported: the owner (identity comes from the credential that imports, never from a file),
``shared`` (an operator's decision), ``decayed_at`` (the lifecycle's bookkeeping) and the content
hash (recomputed).
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal

import numpy as np
from rdflib import RDF, XSD, BNode, Graph, Namespace, URIRef
from rdflib import Literal as RdfLiteral
from rdflib.namespace import DCTERMS, PROV
from rdflib.term import Node

from apps.core.errors import ValidationFailed
from apps.core.text import printable, text_problem
from apps.embeddings.backends import EMBEDDING_DIMENSION
from apps.memory.models import DOMAIN_PATTERN, SCOPE_NAME_PATTERN, Memory, MemoryType
from apps.wikidata.provenance import CORTEX, sorted_json_ld, xsd_datetime

SEMEM = Namespace("http://purl.org/stuff/semem/")

PREFIXES: dict[str, str] = {
    "semem": str(SEMEM),
    "prov": str(PROV),
    "cortex": str(CORTEX),
    "dcterms": str(DCTERMS),
    "rdf": str(RDF),
    "xsd": str(XSD),
}

Format = Literal["turtle", "jsonld"]
MEDIA_TYPES: dict[str, str] = {"turtle": "text/turtle; charset=utf-8", "jsonld": "application/ld+json"}
FILE_SUFFIXES: dict[str, str] = {"turtle": "ttl", "jsonld": "jsonld"}

_SEMEM_TYPES = {MemoryType.SHORT_TERM: "short-term", MemoryType.LONG_TERM: "long-term"}
_TYPES_FROM_SEMEM = {
    **{name: value for value, name in _SEMEM_TYPES.items()},
    **{str(value): value for value in MemoryType},
}
_UUID_URN = re.compile(r"^urn:uuid:([0-9a-fA-F-]{36})$")
_DOMAIN_RE = re.compile(DOMAIN_PATTERN)
_SCOPE_NAME_RE = re.compile(SCOPE_NAME_PATTERN)
# semem:timestamp values below this are seconds (10¹¹ ms is 1973; 10¹¹ s is the year 5138).
_SECONDS_BELOW = 10**11
# Postgres ``integer`` (access count, chunk index).
_MAX_INTEGER = 2**31 - 1
# A stored embedding is a unit vector; one this far from unit length came from another model.
_UNIT_TOLERANCE = 1e-3


def memory_uri(memory_id: uuid.UUID | str) -> URIRef:
    return URIRef(f"urn:uuid:{memory_id}")


# --- Export ------------------------------------------------------------------------------------


def memories_graph(memories: Iterable[Memory]) -> Graph:
    """The graph of ``memories`` (rows with their embeddings loaded)."""
    graph = Graph(bind_namespaces="none")
    for prefix, namespace in PREFIXES.items():
        graph.bind(prefix, namespace)
    for memory in memories:
        _memory_add(graph, memory)
    return graph


def graph_serialize(graph: Graph, fmt: Format) -> str:
    """Turtle, or JSON-LD compacted with the prefixes and sorted (the same graph, the same text)."""
    if fmt == "turtle":
        return graph.serialize(format="turtle")
    return sorted_json_ld(graph.serialize(format="json-ld", context=dict(PREFIXES)))


def _memory_add(graph: Graph, memory: Memory) -> None:
    node = memory_uri(memory.id)
    prompt = memory.metadata.get("prompt") if isinstance(memory.metadata, dict) else None
    triples: list[tuple[Node, Node]] = [
        (RDF.type, SEMEM.Interaction),
        (RDF.type, PROV.Entity),
        (SEMEM.prompt, RdfLiteral(prompt if isinstance(prompt, str) else "")),
        (SEMEM.output, RdfLiteral(memory.content)),
        (SEMEM.concepts, RdfLiteral(json.dumps(list(memory.concepts), ensure_ascii=False))),
        (SEMEM.timestamp, RdfLiteral(_milliseconds(memory.created_at), datatype=XSD.integer)),
        (SEMEM.accessCount, RdfLiteral(int(memory.access_count), datatype=XSD.integer)),
        (SEMEM.decayFactor, _decimal(memory.decay_factor)),
        (SEMEM.memoryType, RdfLiteral(_SEMEM_TYPES[MemoryType(memory.type)])),
        (DCTERMS.created, xsd_datetime(memory.created_at)),
        (PROV.generatedAtTime, xsd_datetime(memory.valid_from)),
        (CORTEX.importance, _decimal(memory.importance)),
        (CORTEX.pinned, RdfLiteral(bool(memory.pinned))),
        (CORTEX.metadata, RdfLiteral(json.dumps(memory.metadata, ensure_ascii=False), datatype=RDF.JSON)),
        (CORTEX.chunkIndex, RdfLiteral(int(memory.chunk_index), datatype=XSD.integer)),
    ]
    if memory.embedding is not None:
        triples.append((SEMEM.embedding, RdfLiteral(_embedding_json(memory.embedding))))
    optional: list[tuple[Node, Node | None]] = [
        (CORTEX.domain, RdfLiteral(memory.domain) if memory.domain else None),
        (CORTEX.agent, RdfLiteral(memory.agent) if memory.agent else None),
        (CORTEX.session, RdfLiteral(memory.session) if memory.session else None),
        (CORTEX.chunkGroup, memory_uri(memory.chunk_group) if memory.chunk_group else None),
        (CORTEX.expiresAt, xsd_datetime(memory.expires_at) if memory.expires_at else None),
        (CORTEX.lastAccessedAt, xsd_datetime(memory.last_accessed_at) if memory.last_accessed_at else None),
        (PROV.invalidatedAtTime, xsd_datetime(memory.valid_until) if memory.valid_until else None),
    ]
    triples += [(predicate, value) for predicate, value in optional if value is not None]
    for predicate, value in triples:
        graph.add((node, predicate, value))
    if memory.superseded_by_id:
        successor = memory_uri(memory.superseded_by_id)
        graph.add((node, CORTEX.supersededBy, successor))
        graph.add((successor, PROV.wasRevisionOf, node))


def _milliseconds(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def _decimal(value: float) -> RdfLiteral:
    # repr is the shortest text that reads back as the same float: the round trip is exact.
    return RdfLiteral(Decimal(repr(float(value))), datatype=XSD.decimal)


def _embedding_json(vector: Any) -> str:
    # pgvector stores float32: each number's shortest float32 text reads back as the same float32.
    return json.dumps([float(str(number)) for number in np.asarray(vector, dtype=np.float32)])


# --- Import ------------------------------------------------------------------------------------


def graph_parse(content: str, fmt: Format) -> Graph:
    """The graph of a Turtle or JSON-LD file; ``ValidationFailed`` naming what is wrong with it.

    JSON-LD may not reference remote contexts (``"@context": "https://…"`` or ``@import``): rdflib
    would fetch them from the server, so the file must carry its context inline (an export does).
    """
    graph = Graph(bind_namespaces="none")
    if fmt == "jsonld":
        try:
            document = json.loads(content)
        except (ValueError, RecursionError) as error:
            raise ValidationFailed(
                f"The file is not JSON: {error}.", details={"field": "body", "format": fmt}
            ) from None
        if _has_remote_context(document):
            raise ValidationFailed(
                "The JSON-LD names a remote context (a URL in @context, or @import); remote contexts "
                "are not fetched: put the context in the file, as an export does.",
                details={"field": "body", "format": fmt},
            )
    try:
        graph.parse(data=content, format="turtle" if fmt == "turtle" else "json-ld")
    except Exception as error:  # noqa: BLE001 - rdflib's parsers raise many kinds; each is a bad file
        message = printable(" ".join(str(error).split())[:500]) or type(error).__name__
        raise ValidationFailed(
            f"The file could not be read as {'Turtle' if fmt == 'turtle' else 'JSON-LD'}: {message}",
            details={"field": "body", "format": fmt},
        ) from None
    return graph


def _has_remote_context(document: Any) -> bool:
    """Whether any ``@context`` in the document (at any depth) is or lists a reference, or imports one.
    Iterative: a deeply nested document cannot exhaust the stack."""
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if "@import" in item:
                return True
            context = item.get("@context")
            if isinstance(context, str) or (
                isinstance(context, list) and any(isinstance(entry, str) for entry in context)
            ):
                return True
            stack.extend(item.values())
    return False


def interactions(graph: Graph) -> list[Node]:
    """The ``semem:Interaction`` subjects of ``graph``, in a stable order."""
    return sorted(set(graph.subjects(RDF.type, SEMEM.Interaction)), key=lambda node: node.n3())


def memories_from_graph(graph: Graph) -> list[dict[str, Any]]:
    """Every ``semem:Interaction`` of ``graph`` as the fields of a ``Memory`` (model field names),
    plus ``ref`` (the node as the file names it, for messages and links), ``id`` (the UUID of a
    ``urn:uuid:`` node, else ``None``), ``embedding`` and ``concepts`` (``None`` when missing or
    unusable: computed again from the content), ``superseded_by`` (the successor's ``ref``, or
    ``None``) and ``superseded_by_id`` (its UUID, when its node is a ``urn:uuid:``).

    A file Semem wrote (``semem:*`` terms only) reads too: what it lacks takes the defaults ``tell``
    gives, and a non-empty ``semem:prompt`` becomes the metadata's ``prompt``. A value of the wrong
    type or out of range is a ``ValidationFailed`` naming the memory and the property.
    """
    return [_memory_read(graph, node) for node in interactions(graph)]


def _memory_read(graph: Graph, node: Node) -> dict[str, Any]:
    if problem := text_problem(node.n3()):
        ref = printable(node.n3())
        raise ValidationFailed(f"Memory {ref}: its IRI {problem}.", details={"memory": ref})
    reader = _Reader(graph, node)
    content = reader.text(SEMEM.output, "semem:output", required=True)
    prompt = reader.text(SEMEM.prompt, "semem:prompt")
    metadata = reader.metadata()
    if metadata is None:
        metadata = {"prompt": prompt} if prompt else {}
    created = reader.moment(DCTERMS.created, "dcterms:created") or reader.timestamp()
    valid_from = reader.moment(PROV.generatedAtTime, "prov:generatedAtTime") or created
    chunk_group = reader.uuid_node(CORTEX.chunkGroup, "cortex:chunkGroup")
    memory_type = reader.text(SEMEM.memoryType, "semem:memoryType") or "short-term"
    if memory_type not in _TYPES_FROM_SEMEM:
        raise reader.invalid("semem:memoryType", "must be 'short-term' or 'long-term'")
    return {
        "ref": node.n3(),
        "id": _uuid_of(node),
        "content": content,
        "embedding": reader.embedding(),
        "concepts": reader.concepts(),
        "metadata": metadata,
        "domain": reader.name(CORTEX.domain, "cortex:domain", _DOMAIN_RE),
        "agent": reader.name(CORTEX.agent, "cortex:agent", _SCOPE_NAME_RE),
        "session": reader.name(CORTEX.session, "cortex:session", _SCOPE_NAME_RE),
        "type": _TYPES_FROM_SEMEM[memory_type],
        "importance": reader.unit(CORTEX.importance, "cortex:importance", default=0.5, zero=True),
        "decay_factor": reader.unit(SEMEM.decayFactor, "semem:decayFactor", default=1.0, zero=False),
        "access_count": reader.count(SEMEM.accessCount, "semem:accessCount"),
        "pinned": reader.flag(CORTEX.pinned, "cortex:pinned"),
        "chunk_group": _uuid_of(chunk_group) if chunk_group is not None else None,
        "chunk_index": reader.count(CORTEX.chunkIndex, "cortex:chunkIndex"),
        "created_at": created,
        "valid_from": valid_from,
        "valid_until": reader.moment(PROV.invalidatedAtTime, "prov:invalidatedAtTime"),
        "expires_at": reader.moment(CORTEX.expiresAt, "cortex:expiresAt"),
        "last_accessed_at": reader.moment(CORTEX.lastAccessedAt, "cortex:lastAccessedAt"),
        **reader.successor(),
    }


def _uuid_of(node: Node) -> uuid.UUID | None:
    match = _UUID_URN.match(str(node)) if isinstance(node, URIRef) else None
    if match is None:
        return None
    try:
        return uuid.UUID(match.group(1))
    except ValueError:
        return None


class _Reader:
    """The values of one interaction node, each checked and converted, errors naming the node."""

    def __init__(self, graph: Graph, node: Node) -> None:
        self.graph = graph
        self.node = node

    def invalid(self, prop: str, problem: str) -> ValidationFailed:
        ref = self.node.n3()
        return ValidationFailed(f"Memory {ref}: {prop} {problem}.", details={"memory": ref, "property": prop})

    def one(self, predicate: URIRef, prop: str) -> Node | None:
        values = list(self.graph.objects(self.node, predicate))
        if len(values) > 1:
            raise self.invalid(prop, f"has {len(values)} values; one is expected")
        return values[0] if values else None

    def literal(self, predicate: URIRef, prop: str) -> RdfLiteral | None:
        value = self.one(predicate, prop)
        if value is not None and not isinstance(value, RdfLiteral):
            raise self.invalid(prop, "must be a literal")
        return value

    def uuid_node(self, predicate: URIRef, prop: str) -> Node | None:
        value = self.one(predicate, prop)
        if value is not None and _uuid_of(value) is None:
            raise self.invalid(prop, "must be a urn:uuid: IRI")
        return value

    def text(self, predicate: URIRef, prop: str, *, required: bool = False) -> str:
        value = self.literal(predicate, prop)
        if value is None:
            if required:
                raise self.invalid(prop, "is missing (the memory's content)")
            return ""
        return str(value)

    def name(self, predicate: URIRef, prop: str, pattern: re.Pattern[str]) -> str:
        value = self.text(predicate, prop)
        if value and not pattern.match(value):
            raise self.invalid(prop, f"must match {pattern.pattern}")
        return value

    def _number(self, predicate: URIRef, prop: str) -> Any:
        value = self.literal(predicate, prop)
        if value is None:
            return None
        number = value.toPython()
        if isinstance(number, bool) or not isinstance(number, int | float | Decimal):
            raise self.invalid(prop, f"must be a number, not {str(value)[:40]!r}")
        return number

    def unit(self, predicate: URIRef, prop: str, *, default: float, zero: bool) -> float:
        number = self._number(predicate, prop)
        if number is None:
            return default
        value = float(number)
        low_ok = value >= 0.0 if zero else value > 0.0
        if not (low_ok and value <= 1.0):  # also refuses NaN
            raise self.invalid(prop, "must be " + ("0 to 1" if zero else "above 0 and at most 1"))
        return value

    def count(self, predicate: URIRef, prop: str) -> int:
        number = self._number(predicate, prop)
        if number is None:
            return 0
        if number != int(number) or not 0 <= int(number) <= _MAX_INTEGER:
            raise self.invalid(prop, f"must be a whole number from 0 to {_MAX_INTEGER}")
        return int(number)

    def flag(self, predicate: URIRef, prop: str) -> bool:
        value = self.literal(predicate, prop)
        if value is None:
            return False
        flag = value.toPython()
        if not isinstance(flag, bool):
            raise self.invalid(prop, "must be true or false")
        return flag

    def moment(self, predicate: URIRef, prop: str) -> datetime | None:
        value = self.literal(predicate, prop)
        if value is None:
            return None
        moment = value.toPython()
        if not isinstance(moment, datetime):
            raise self.invalid(prop, f"must be an xsd:dateTime, not {str(value)[:40]!r}")
        try:
            return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        except (OverflowError, ValueError):
            raise self.invalid(prop, "is out of range") from None

    def timestamp(self) -> datetime | None:
        number = self._number(SEMEM.timestamp, "semem:timestamp")
        if number is None:
            return None
        seconds = float(number) if abs(number) < _SECONDS_BELOW else float(number) / 1000
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise self.invalid("semem:timestamp", "is out of range") from None

    def _json(self, predicate: URIRef, prop: str) -> Any:
        value = self.literal(predicate, prop)
        if value is None:
            return None
        try:
            return json.loads(str(value))
        except (ValueError, RecursionError):
            raise self.invalid(prop, "must hold JSON") from None

    def metadata(self) -> dict[str, Any] | None:
        metadata = self._json(CORTEX.metadata, "cortex:metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise self.invalid("cortex:metadata", "must be a JSON object")
        return metadata

    def concepts(self) -> list[str] | None:
        """The concepts, or ``None`` (extract them again) when missing or not a list of short strings."""
        try:
            concepts = self._json(SEMEM.concepts, "semem:concepts")
        except ValidationFailed:
            return None
        if not isinstance(concepts, list) or not all(
            isinstance(concept, str) and 0 < len(concept) <= 100 for concept in concepts
        ):
            return None
        return concepts

    def embedding(self) -> list[float] | None:
        """The vector, or ``None`` (embed the content again) when it is missing, not a JSON array of
        ``EMBEDDING_DIMENSION`` finite numbers, or not of unit length (another model's)."""
        try:
            vector = self._json(SEMEM.embedding, "semem:embedding")
        except ValidationFailed:
            return None
        if not isinstance(vector, list) or len(vector) != EMBEDDING_DIMENSION:
            return None
        if not all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in vector
        ):
            return None
        if abs(math.sqrt(sum(float(x) * float(x) for x in vector)) - 1.0) > _UNIT_TOLERANCE:
            return None
        return [float(x) for x in vector]

    def successor(self) -> dict[str, Any]:
        """The memory that superseded this one (``superseded_by``: its ref; ``superseded_by_id``: its
        UUID when it is a ``urn:uuid:``): ``cortex:supersededBy``, else the one memory that declares
        itself ``prov:wasRevisionOf`` this one."""
        explicit = self.one(CORTEX.supersededBy, "cortex:supersededBy")
        if explicit is not None:
            if not isinstance(explicit, URIRef | BNode):
                raise self.invalid("cortex:supersededBy", "must name a memory")
            successor: Node = explicit
        else:
            revisions = sorted(self.graph.subjects(PROV.wasRevisionOf, self.node), key=lambda n: n.n3())
            if not revisions:
                return {"superseded_by": None, "superseded_by_id": None}
            if len(revisions) > 1:
                raise self.invalid(
                    "prov:wasRevisionOf", f"is claimed by {len(revisions)} memories; one successor at most"
                )
            successor = revisions[0]
        if successor == self.node:
            raise self.invalid("cortex:supersededBy", "names the memory itself")
        return {"superseded_by": successor.n3(), "superseded_by_id": _uuid_of(successor)}
