"""Memories as RDF (issue #13, item 5): export in Semem's vocabulary with PROV-O for supersession, the
exact triples of one memory, the round trip through Turtle and JSON-LD (every field back, the
supersession link included), isolation between tokens, ids that collide with another token's, bad
files refused with nothing stored, the REST endpoints and the MCP tool ``memory.export``.

Everything runs on the real model and Postgres+pgvector.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from django.test import Client
from django.utils import timezone
from rdflib import RDF, Graph, Literal, URIRef
from rdflib import namespace as ns
from rdflib.namespace import DCTERMS, PROV

from apps.core.errors import ValidationFailed
from apps.core.models import ApiToken
from apps.embeddings.services import embed_text
from apps.mcp_server.services import Caller, mcp_tool_call
from apps.memory import rdf, services
from apps.memory.models import Memory, MemoryType
from apps.memory.rdf import SEMEM
from apps.memory.services import Scope, TellItem
from apps.wikidata.provenance import CORTEX

pytestmark = pytest.mark.django_db

# Over the 8,000-character chunk size: stored as two memories sharing a chunk group.
LONG_CONTENT = " ".join(f"Runbook step {n} restarts the ingest worker on host {n}." for n in range(180))
EXPORTED_FIELDS = (
    "id", "token_id", "agent", "session", "shared", "content", "content_hash", "domain", "type", "concepts",
    "metadata", "chunk_group", "chunk_index", "importance", "access_count", "last_accessed_at",
    "decay_factor", "created_at", "expires_at", "pinned", "valid_from", "valid_until", "superseded_by_id",
)  # fmt: skip


@pytest.fixture
def owner(make_token) -> ApiToken:
    return make_token("read", "write", name="owner")[0]


@pytest.fixture
def other(make_token) -> ApiToken:
    return make_token("read", "write", name="other")[0]


def tell(scope: Scope, content: str, **options: Any) -> str:
    return services.memory_tell(scope=scope, items=[TellItem(content=content, **options)])[0]["id"]


@pytest.fixture
def told(owner: ApiToken) -> dict[str, str]:
    """Four kinds of memory: one superseded (with a used history), its successor, a chunked one and
    one in an agent namespace. Returns their ids by name."""
    scope = Scope(token=owner)
    old = tell(
        scope,
        "The staging database runs on Postgres 15 in Dublin.",
        domain="infra",
        metadata={"prompt": "Where does staging run?", "source": "chat"},
        importance=0.8,
        pinned=True,
        ttl_seconds=86400,
    )
    new = tell(
        scope,
        "The staging database runs on Postgres 16 in Frankfurt.",
        domain="infra",
        supersedes=uuid.UUID(old),
    )
    chunked = tell(scope, LONG_CONTENT, domain="ops", type=MemoryType.LONG_TERM)
    planner = tell(Scope(token=owner, agent="planner", session="s-1"), "Alice prefers window seats.")
    # A used history: what ask and the lifecycle leave behind.
    Memory.objects.filter(id=old).update(
        access_count=7, decay_factor=0.7290000000000001, last_accessed_at=timezone.now() - timedelta(hours=3)
    )
    return {"old": old, "new": new, "chunked": chunked, "planner": planner}


def token_id_for(token: ApiToken, file_id: str) -> str:
    """The id an import gives a file's id that is not among ``token``'s memories (docs/memory.md)."""
    return str(uuid.uuid5(uuid.uuid5(uuid.NAMESPACE_URL, f"urn:cortexweb:token:{token.pk}"), file_id))


def renamed_snapshot(rows: dict[str, dict[str, Any]], token: ApiToken) -> dict[str, dict[str, Any]]:
    """``snapshot`` rows as an import into ``token`` of memories it does not hold stores them."""

    def moved(value: Any) -> Any:
        return uuid.UUID(token_id_for(token, str(value))) if value is not None else None

    return {
        token_id_for(token, memory_id): {
            **fields,
            "id": moved(fields["id"]),
            "token_id": token.pk,
            "chunk_group": moved(fields["chunk_group"]),
            "superseded_by_id": moved(fields["superseded_by_id"]),
        }
        for memory_id, fields in rows.items()
    }


def snapshot(token: ApiToken) -> dict[str, dict[str, Any]]:
    """Every stored field of ``token``'s memories (the embedding as a list), by id."""
    rows = {}
    for memory in Memory.objects.filter(token=token):
        fields = {name: getattr(memory, name) for name in EXPORTED_FIELDS}
        fields["embedding"] = [float(x) for x in memory.embedding]
        rows[str(memory.id)] = fields
    return rows


# --- Export: the exact triples -----------------------------------------------------------------------


def test_one_memory_has_exactly_semem_prov_and_cortex_triples(owner, told) -> None:
    content, media_type, count = services.memories_export(scope=Scope(token=owner), fmt="turtle")
    assert (media_type, count) == ("text/turtle; charset=utf-8", 5)  # the chunked one is two memories
    graph = Graph()
    graph.parse(data=content, format="turtle")
    old = Memory.objects.get(id=told["old"])
    node = URIRef(f"urn:uuid:{old.id}")

    def when(value: datetime) -> Literal:
        return Literal(value.astimezone(UTC).isoformat(), datatype=ns.XSD.dateTime)

    found = {(p, o) for p, o in graph.predicate_objects(node) if p != SEMEM.embedding}
    assert found == {
        (RDF.type, SEMEM.Interaction),
        (RDF.type, PROV.Entity),
        (SEMEM.prompt, Literal("Where does staging run?")),
        (SEMEM.output, Literal("The staging database runs on Postgres 15 in Dublin.")),
        (SEMEM.concepts, Literal(json.dumps(old.concepts))),
        (SEMEM.timestamp, Literal(int(old.created_at.timestamp() * 1000), datatype=ns.XSD.integer)),
        (SEMEM.accessCount, Literal(7, datatype=ns.XSD.integer)),
        (SEMEM.decayFactor, Literal(Decimal("0.7290000000000001"), datatype=ns.XSD.decimal)),
        (SEMEM.memoryType, Literal("short-term")),
        (DCTERMS.created, when(old.created_at)),
        (PROV.generatedAtTime, when(old.valid_from)),
        (PROV.invalidatedAtTime, when(old.valid_until)),
        (CORTEX.supersededBy, URIRef(f"urn:uuid:{told['new']}")),
        (CORTEX.domain, Literal("infra")),
        (CORTEX.importance, Literal(Decimal("0.8"), datatype=ns.XSD.decimal)),
        (CORTEX.pinned, Literal(True)),
        (CORTEX.expiresAt, when(old.expires_at)),
        (CORTEX.lastAccessedAt, when(old.last_accessed_at)),
        (CORTEX.metadata, Literal(json.dumps(old.metadata), datatype=RDF.JSON)),
        (CORTEX.chunkIndex, Literal(0, datatype=ns.XSD.integer)),
    }
    embedding = json.loads(str(graph.value(node, SEMEM.embedding)))
    # pgvector stores float32: the file's numbers are those, exactly.
    assert np.array_equal(
        np.asarray(embedding, dtype=np.float32), np.asarray(old.embedding, dtype=np.float32)
    )
    # The successor is a PROV revision of the memory it replaced.
    assert set(graph.subjects(PROV.wasRevisionOf, node)) == {URIRef(f"urn:uuid:{told['new']}")}
    # A memory without a prompt in its metadata has an empty semem:prompt (Semem's query needs one).
    assert graph.value(URIRef(f"urn:uuid:{told['planner']}"), SEMEM.prompt) == Literal("")
    chunks = Memory.objects.filter(chunk_group__isnull=False).order_by("chunk_index")
    assert [graph.value(URIRef(f"urn:uuid:{m.id}"), CORTEX.chunkGroup) for m in chunks] == [
        URIRef(f"urn:uuid:{chunks[0].chunk_group}")
    ] * 2


def test_export_narrows_by_agent_session_and_domain(owner, told) -> None:
    def exported(scope: Scope, domain: str | None = None) -> set[str]:
        content, _, _ = services.memories_export(scope=scope, fmt="turtle", domain=domain)
        graph = Graph().parse(data=content, format="turtle")
        return {str(node).removeprefix("urn:uuid:") for node in rdf.interactions(graph)}

    assert exported(Scope(token=owner, agent="planner")) == {told["planner"]}
    assert exported(Scope(token=owner, agent="planner", session="other")) == set()
    assert exported(Scope(token=owner), domain="infra") == {told["old"], told["new"]}


def test_the_same_memories_export_the_same_text(owner, told) -> None:
    for fmt in ("turtle", "jsonld"):
        first = services.memories_export(scope=Scope(token=owner), fmt=fmt)[0]
        assert services.memories_export(scope=Scope(token=owner), fmt=fmt)[0] == first


# --- Round trip --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["turtle", "jsonld"])
def test_import_restores_every_field_of_what_was_exported(owner, told, fmt) -> None:
    before = snapshot(owner)
    content, _, count = services.memories_export(scope=Scope(token=owner), fmt=fmt)
    Memory.objects.filter(token=owner).delete()

    result = services.memories_import(scope=Scope(token=owner), content=content, fmt=fmt)

    # Every field comes back; the ids are the token's own for the file's ids (the removed memories'
    # ids are no longer the token's: an import does not say whether anyone else holds them).
    renamed = {memory_id: token_id_for(owner, memory_id) for memory_id in before}
    assert result == {
        "imported": count,
        "unchanged": 0,
        "renamed": count,
        "total": count,
        "renamedIds": renamed,
    }
    assert snapshot(owner) == renamed_snapshot(before, owner)
    old = Memory.objects.get(id=renamed[told["old"]])
    assert (str(old.superseded_by_id), old.access_count, old.decay_factor) == (
        renamed[told["new"]],
        7,
        0.7290000000000001,
    )
    assert old.valid_until is not None
    again = services.memories_import(scope=Scope(token=owner), content=content, fmt=fmt)
    assert again == {"imported": 0, "unchanged": count, "renamed": 0, "total": count, "renamedIds": {}}


def test_importing_memories_already_there_changes_nothing(owner, told) -> None:
    before = snapshot(owner)
    content, _, count = services.memories_export(scope=Scope(token=owner), fmt="turtle")
    result = services.memories_import(scope=Scope(token=owner), content=content, fmt="turtle")
    assert result == {"imported": 0, "unchanged": count, "renamed": 0, "total": count, "renamedIds": {}}
    assert snapshot(owner) == before


def test_a_partly_deleted_chain_is_relinked_to_the_memory_still_there(owner, told) -> None:
    content, _, _ = services.memories_export(scope=Scope(token=owner), fmt="turtle")
    Memory.objects.filter(id=told["old"]).delete()
    result = services.memories_import(scope=Scope(token=owner), content=content, fmt="turtle")
    assert (result["imported"], result["unchanged"]) == (1, 4)
    assert result["renamedIds"] == {told["old"]: token_id_for(owner, told["old"])}
    assert Memory.objects.get(id=token_id_for(owner, told["old"])).superseded_by_id == uuid.UUID(told["new"])


# --- Isolation and identity --------------------------------------------------------------------------


def test_another_token_exports_none_of_them_even_shared_ones(owner, other, told) -> None:
    services.memories_share(ids=[uuid.UUID(told["new"])], shared=True)
    content, _, count = services.memories_export(scope=Scope(token=other), fmt="turtle", domain="infra")
    assert count == 0
    assert rdf.interactions(Graph().parse(data=content, format="turtle")) == []


def test_importing_another_tokens_file_gives_new_ids_and_keeps_the_links(owner, other, told) -> None:
    content, _, count = services.memories_export(scope=Scope(token=owner), fmt="jsonld")
    before = snapshot(owner)

    result = services.memories_import(scope=Scope(token=other), content=content, fmt="jsonld")

    assert (result["imported"], result["unchanged"], result["renamed"], result["total"]) == (
        count,
        0,
        count,
        count,
    )
    assert result["renamedIds"] == {memory_id: token_id_for(other, memory_id) for memory_id in before}
    assert snapshot(owner) == before  # the owner's memories are untouched
    assert snapshot(other) == renamed_snapshot(before, other)
    mine = {str(m.id): m for m in Memory.objects.filter(token=other)}
    assert set(mine) == set(result["renamedIds"].values())
    old = mine[result["renamedIds"][told["old"]]]
    assert str(old.superseded_by_id) == result["renamedIds"][told["new"]]
    assert (old.content, old.access_count, old.valid_until) == (
        before[told["old"]]["content"],
        7,
        before[told["old"]]["valid_until"],
    )
    # The chunks stay one group, not the owner's.
    groups = {m.chunk_group for m in mine.values() if m.chunk_group}
    assert len(groups) == 1
    assert groups.isdisjoint({row["chunk_group"] for row in before.values()})
    assert all(not m.shared for m in mine.values())


def test_the_owner_always_comes_from_the_credential(owner, other) -> None:
    """Nothing in a file names a token; a file claiming one is read for the memories only."""
    memory_id = uuid.uuid4()
    turtle = f"""
        @prefix semem: <http://purl.org/stuff/semem/> .
        @prefix cortex: <urn:cortexweb:vocab:> .
        <urn:uuid:{memory_id}> a semem:Interaction ; semem:output "Deploys happen on Tuesdays." ;
            cortex:token "{owner.pk}" ; cortex:owner <urn:cortexweb:token:{owner.pk}> .
    """
    services.memories_import(scope=Scope(token=other), content=turtle, fmt="turtle")
    assert Memory.objects.get(id=token_id_for(other, str(memory_id))).token_id == other.pk


def test_an_import_answers_the_same_whether_another_token_holds_the_id_or_nobody_does(owner, other) -> None:
    """Issue 23: an id of another token's memory was renamed and a free id kept, which told the
    caller which ids exist elsewhere. Both are now unknown to the caller alike, and the other
    token's memory is untouched."""
    theirs = tell(Scope(token=owner), "The vault combination is kept by the night guard.", domain="ops")
    nobodys = str(uuid.uuid4())
    before = snapshot(owner)

    def import_one(memory_id: str) -> dict[str, Any]:
        turtle = f"""
            @prefix semem: <http://purl.org/stuff/semem/> .
            <urn:uuid:{memory_id}> a semem:Interaction ; semem:output "Deploys happen on Tuesdays." .
        """
        return services.memories_import(scope=Scope(token=other), content=turtle, fmt="turtle")

    for memory_id in (theirs, nobodys):
        assert import_one(memory_id) == {
            "imported": 1,
            "unchanged": 0,
            "renamed": 1,
            "total": 1,
            "renamedIds": {memory_id: token_id_for(other, memory_id)},
        }
    assert snapshot(owner) == before
    assert set(Memory.objects.filter(token=other).values_list("id", flat=True)) == {
        uuid.UUID(token_id_for(other, theirs)),
        uuid.UUID(token_id_for(other, nobodys)),
    }
    assert not Memory.objects.filter(id=nobodys).exists()


# --- Semem's own files -------------------------------------------------------------------------------


def test_a_semem_file_imports_with_new_ids_and_a_fresh_embedding(owner) -> None:
    turtle = """
        @prefix semem: <http://purl.org/stuff/semem/> .
        @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
        <http://purl.org/stuff/instance/interaction_123> a semem:Interaction ;
            semem:prompt "Which port does the API listen on?" ;
            semem:output "The API listens on port 8443." ;
            semem:embedding \"\"\"[0.1, 0.2, 0.3]\"\"\" ;
            semem:concepts \"\"\"["api", "port"]\"\"\" ;
            semem:timestamp "1234567890"^^xsd:integer ;
            semem:accessCount "2"^^xsd:integer ;
            semem:decayFactor "0.5"^^xsd:decimal ;
            semem:memoryType "long-term" .
    """
    result = services.memories_import(scope=Scope(token=owner), content=turtle, fmt="turtle")
    assert (result["imported"], result["renamed"]) == (1, 1)
    memory = Memory.objects.get(token=owner)
    assert result["renamedIds"] == {"<http://purl.org/stuff/instance/interaction_123>": str(memory.id)}
    assert memory.content == "The API listens on port 8443."
    assert memory.metadata == {"prompt": "Which port does the API listen on?"}
    assert memory.concepts == ["api", "port"]
    # Seconds, as the seed's example writes them (an export writes milliseconds).
    assert memory.created_at == memory.valid_from == datetime.fromtimestamp(1234567890, tz=UTC)
    assert (memory.access_count, memory.decay_factor, memory.type) == (2, 0.5, MemoryType.LONG_TERM)
    # Three numbers are no 384-d embedding: the content was embedded again.
    assert np.allclose(memory.embedding, embed_text(text=memory.content), atol=1e-6)


# --- Bad files: 422, nothing stored ------------------------------------------------------------------


def _interaction(output: str, memory_id: uuid.UUID | None = None) -> str:
    return (
        f"<urn:uuid:{memory_id or uuid.uuid4()}> a <http://purl.org/stuff/semem/Interaction> ; "
        f"<http://purl.org/stuff/semem/output> {output} .\n"
    )


GOOD = _interaction('"Backups run at 02:00 UTC."')
BAD_FILES = {
    "not turtle": ("turtle", "this is not turtle", "could not be read as Turtle"),
    "not json": ("jsonld", "{not json", "not JSON"),
    "no interaction": ("turtle", "<urn:x> <urn:y> <urn:z> .", "no memory"),
    "remote context": (
        "jsonld",
        json.dumps({"@context": "http://127.0.0.1:9/context.jsonld", "@id": "urn:x"}),
        "remote context",
    ),
    "imported context": ("jsonld", json.dumps({"@context": {"@import": "http://127.0.0.1:9/c"}}), "remote"),
    "empty content": ("turtle", GOOD + _interaction('"   "'), "must hold some text"),
    "NUL in content": ("turtle", GOOD + _interaction('"a\\u0000b"'), "NUL"),
    "huge content": ("turtle", GOOD + _interaction('"' + "x" * 200_001 + '"'), "at most 200000"),
    "no content": (
        "turtle",
        f"<urn:uuid:{uuid.uuid4()}> a <{SEMEM.Interaction}> .",
        "semem:output is missing",
    ),
    "two contents": ("turtle", _interaction('"one", "two"'), "has 2 values"),
    "decay above 1": (
        "turtle",
        GOOD + _interaction('"x" ; <http://purl.org/stuff/semem/decayFactor> 1.5'),
        "semem:decayFactor must be above 0",
    ),
    "negative count": (
        "turtle",
        GOOD + _interaction('"x" ; <http://purl.org/stuff/semem/accessCount> -1'),
        "semem:accessCount must be a whole number",
    ),
    "bad domain": (
        "turtle",
        GOOD + _interaction('"x" ; <urn:cortexweb:vocab:domain> "Not A Domain"'),
        "cortex:domain",
    ),
    "metadata not an object": (
        "turtle",
        GOOD + _interaction('"x" ; <urn:cortexweb:vocab:metadata> "[1]"'),
        "must be a JSON object",
    ),
    "bad date": (
        "turtle",
        GOOD + _interaction(f'"x" ; <urn:cortexweb:vocab:expiresAt> "soon"^^<{ns.XSD.dateTime}>'),
        "must be an xsd:dateTime",
    ),
    "unknown type": (
        "turtle",
        GOOD + _interaction('"x" ; <http://purl.org/stuff/semem/memoryType> "forever"'),
        "semem:memoryType",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_is_refused_and_nothing_is_stored(owner, case) -> None:
    fmt, content, expected = BAD_FILES[case]
    with pytest.raises(ValidationFailed) as refused:
        services.memories_import(scope=Scope(token=owner), content=content, fmt=fmt)
    assert expected in refused.value.message
    assert not Memory.objects.exists()


def test_more_than_ten_thousand_memories_are_refused(owner) -> None:
    content = "".join(_interaction('"m"') for _ in range(services.MAX_TRANSFER + 1))
    with pytest.raises(ValidationFailed, match="at most 10000"):
        services.memories_import(scope=Scope(token=owner), content=content, fmt="turtle")
    assert not Memory.objects.exists()


# --- REST ----------------------------------------------------------------------------------------------


def _client(raw: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_rest_export_then_import(make_token) -> None:
    token, raw = make_token("read", "write", name="rest")
    tell(Scope(token=token), "The on-call rota changes on Mondays.", domain="ops")
    tell(Scope(token=token, agent="planner"), "Alice prefers window seats.")
    client = _client(raw)

    turtle = client.get("/v1/memory/export")
    assert turtle.status_code == 200, turtle.content
    assert turtle["Content-Type"] == "text/turtle; charset=utf-8"
    assert turtle["Content-Disposition"].startswith('attachment; filename="memories-')
    assert turtle["Content-Disposition"].endswith('.ttl"')
    jsonld = client.get("/v1/memory/export", {"format": "jsonld", "agent": "planner"})
    assert jsonld["Content-Type"] == "application/ld+json"
    assert jsonld["Content-Disposition"].endswith('.jsonld"')
    assert jsonld.json()["semem:output"] == "Alice prefers window seats."

    Memory.objects.filter(token=token).delete()
    imported = client.post("/v1/memory/import", turtle.content, content_type="text/turtle")
    assert imported.status_code == 200, imported.content
    assert imported.json()["imported"] == 2
    assert imported.json()["renamed"] == 2
    again = client.post("/v1/memory/import?format=jsonld", jsonld.content, content_type="application/ld+json")
    assert again.json()["unchanged"] == 1


def test_rest_import_needs_write_and_refuses_other_media_types(make_token) -> None:
    _, reader = make_token("read", name="reader")
    _, writer = make_token("read", "write", name="writer")
    body = GOOD.encode()
    assert _client(reader).post("/v1/memory/import", body, content_type="text/turtle").status_code == 403

    as_text = _client(writer).post("/v1/memory/import", body, content_type="text/plain")
    assert as_text.status_code == 415
    assert as_text.json()["error"]["code"] == "unsupported_media_type"
    assert "text/turtle or application/ld+json" in as_text.json()["error"]["message"]
    mismatch = _client(writer).post("/v1/memory/import?format=jsonld", body, content_type="text/turtle")
    assert mismatch.status_code == 415
    not_utf8 = _client(writer).post("/v1/memory/import", b"\xff\xfe", content_type="text/turtle")
    assert not_utf8.status_code == 422
    bad = _client(writer).post("/v1/memory/import", GOOD + _interaction('""'), content_type="text/turtle")
    assert bad.status_code == 422
    assert bad.json()["error"]["details"]["property"] == "semem:output"
    assert not Memory.objects.exists()


def test_rest_export_is_the_tokens_own(make_token, owner, told) -> None:
    _, raw = make_token("read", name="stranger")
    answer = _client(raw).get("/v1/memory/export", {"format": "jsonld"})
    assert answer.status_code == 200
    assert "semem:Interaction" not in answer.content.decode()


# --- MCP -------------------------------------------------------------------------------------------------


def test_the_mcp_tool_exports_the_callers_memories(owner, other, told) -> None:
    outcome = mcp_tool_call(
        name="memory.export",
        arguments={"format": "jsonld", "domain": "infra"},
        caller=Caller(transport="mcp-http", token=owner),
    )
    assert outcome.is_error is False, outcome.text
    structured = outcome.structured or {}
    assert (structured["format"], structured["mediaType"], structured["count"]) == (
        "jsonld",
        "application/ld+json",
        2,
    )
    graph = Graph().parse(data=structured["content"], format="json-ld")
    assert {str(n) for n in rdf.interactions(graph)} == {f"urn:uuid:{told['old']}", f"urn:uuid:{told['new']}"}
    assert structured["content"] in outcome.text

    theirs = mcp_tool_call(
        name="memory.export", arguments={}, caller=Caller(transport="mcp-http", token=other)
    )
    assert (theirs.structured or {})["count"] == 0
