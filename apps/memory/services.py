"""Memory writes: ``tell`` (store, reinforce a near-duplicate, supersede), ``forget``, pin, token
rotation, and the lifecycle Celery beat runs (decay, promotion, expiry).

Reads (``ask``, a memory, its chain) live in ``selectors``. Every write here is scoped: the caller's
token is the owner; a memory of another token is "not found", never "forbidden", so ids do not leak.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone
from pgvector.django import CosineDistance

from apps.core.errors import Conflict, NotFound, ValidationFailed
from apps.core.logging import get_logger
from apps.core.models import ApiToken
from apps.core.text import text_problem, unstorable_paths
from apps.embeddings.fields import hnsw_filtered_scan
from apps.embeddings.services import embed_text, embed_texts
from apps.memory import rdf
from apps.memory.models import DOMAIN_PATTERN, Memory, MemoryAccess, MemorySettings, MemoryType, MemoryVersion
from apps.memory.text import CHUNK_CHARS, concepts_extract, content_chunks

logger = get_logger(__name__)

MAX_BATCH = 500
MAX_CONTENT_CHARS = 200_000
LIFECYCLE_BATCH = 5000


@dataclass(frozen=True)
class Scope:
    """Whose memories: a token and, inside it, an optional agent and session namespace."""

    token: ApiToken
    agent: str = ""
    session: str = ""

    def own(self) -> Q:
        """The memories this scope told."""
        return scope_condition(token_id=self.token.pk, agent=self.agent, session=self.session)


def scope_condition(*, token_id: int, agent: str, session: str) -> Q:
    """The memories a scope told: its token's, narrowed by agent and session only when given."""
    condition = Q(token_id=token_id)
    if agent:
        condition &= Q(agent=agent)
    if session:
        condition &= Q(session=session)
    return condition


@dataclass
class TellItem:
    content: str
    domain: str = ""
    type: str = MemoryType.SHORT_TERM
    metadata: dict[str, Any] = field(default_factory=dict)
    ttl_seconds: int | None = None
    pinned: bool = False
    importance: float = 0.5
    supersedes: uuid.UUID | None = None


@dataclass
class _Chunk:
    item_index: int
    chunk_index: int
    text: str
    vector: np.ndarray
    concepts: list[str]
    memory_id: uuid.UUID | None = None
    reinforced: bool = False


def memory_tell(*, scope: Scope, items: Sequence[TellItem]) -> list[dict[str, Any]]:
    """Store ``items`` (one or a batch of up to 500) in ``scope``, in one transaction.

    Each content is chunked (over 8,000 characters, at sentence boundaries), embedded and given
    concepts. A chunk within ``duplicate_similarity`` of a current memory of the same scope and
    domain (or of an earlier chunk of this call) reinforces that memory instead of being stored.
    ``supersedes`` closes the named memory's validity and links it to the new one. Nothing is
    stored when any item is refused.
    """
    if not items:
        raise ValidationFailed("Tell at least one memory.", details={"field": "items"})
    if len(items) > MAX_BATCH:
        raise ValidationFailed(
            f"A batch holds at most {MAX_BATCH} memories; this one has {len(items)}.",
            details={"field": "items", "max": MAX_BATCH},
        )
    config = MemorySettings.current()
    chunks: list[_Chunk] = []
    texts: list[str] = []
    for item_index, item in enumerate(items):
        _item_check(item, item_index, batch=len(items) > 1)
        for chunk_index, text in enumerate(content_chunks(item.content)):
            texts.append(text)
            chunks.append(_Chunk(item_index, chunk_index, text, np.zeros(0), concepts_extract(text)))
    # The model runs before the transaction: no lock is held while it computes.
    for chunk, vector in zip(chunks, embed_texts(texts=texts), strict=True):
        chunk.vector = vector
    now = timezone.now()
    with transaction.atomic():
        _scope_lock(scope)
        new_rows = _chunks_place(scope, items, chunks, config, now)
        reinforced = [chunk.memory_id for chunk in chunks if chunk.reinforced and chunk.memory_id]
        # Every existing row this tell changes is locked by one statement, in id order (see _locked).
        superseded = _superseded_lock(scope, items, also=reinforced)
        Memory.objects.bulk_create(new_rows)
        if reinforced:
            _reinforce(ids=reinforced, config=config, now=now)
        _supersede(items, chunks, superseded, now)
    results = [
        _tell_result(item, [c for c in chunks if c.item_index == index]) for index, item in enumerate(items)
    ]
    logger.info(
        "memory.told",
        token_id=scope.token.pk,
        items=len(items),
        stored=len(new_rows),
        reinforced=len(reinforced),
    )
    return results


def _item_check(item: TellItem, index: int, *, batch: bool) -> None:
    where = f"items[{index}]." if batch else ""
    if not item.content or not item.content.strip():
        raise ValidationFailed("content must hold some text.", details={"field": f"{where}content"})
    if len(item.content) > MAX_CONTENT_CHARS:
        raise ValidationFailed(
            f"content holds {len(item.content)} characters; at most {MAX_CONTENT_CHARS} are accepted "
            "(split it into several memories).",
            details={"field": f"{where}content", "max": MAX_CONTENT_CHARS},
        )
    if item.ttl_seconds is not None and item.ttl_seconds <= 0:
        raise ValidationFailed("ttlSeconds must be positive.", details={"field": f"{where}ttlSeconds"})
    if not 0.0 <= item.importance <= 1.0:
        raise ValidationFailed("importance must be 0 to 1.", details={"field": f"{where}importance"})


def _scope_lock(scope: Scope) -> None:
    """Serialise tells of one token (until the transaction ends), so two concurrent tells of the same
    fact cannot both miss each other and store two copies."""
    key = int.from_bytes(
        hashlib.sha256(f"memory-scope:{scope.token.pk}".encode()).digest()[:8], "big", signed=True
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def _superseded_lock(
    scope: Scope, items: Sequence[TellItem], *, also: Sequence[uuid.UUID] = ()
) -> dict[uuid.UUID, Memory]:
    """The memories ``items`` supersede, checked; they and the memories ``also`` names (the ones the
    tell reinforces) are locked together, in id order."""
    wanted = {item.supersedes for item in items if item.supersedes}
    _locked(Q(token=scope.token, id__in=wanted) | Q(id__in=also))
    if not wanted:
        return {}
    found = {m.id: m for m in Memory.objects.filter(Q(token=scope.token), id__in=wanted)}
    for memory_id in wanted:
        memory = found.get(memory_id)
        if memory is None:
            raise NotFound(
                f"No memory {memory_id} in this token's memories to supersede.",
                details={"field": "supersedes", "id": str(memory_id)},
            )
        if memory.valid_until is not None:
            raise Conflict(
                f"Memory {memory_id} was already superseded"
                + (f" by {memory.superseded_by_id}" if memory.superseded_by_id else "")
                + "; supersede the newest memory of its chain instead.",
                details={
                    "field": "supersedes",
                    "id": str(memory_id),
                    "supersededBy": str(memory.superseded_by_id),
                },
            )
    return found


def _chunks_place(
    scope: Scope, items: Sequence[TellItem], chunks: list[_Chunk], config: MemorySettings, now: datetime
) -> list[Memory]:
    """Decide, chunk by chunk, "reinforce that memory" or "store a new row"; the new rows."""
    max_distance = 1.0 - config.duplicate_similarity
    new_rows: list[Memory] = []
    placed: list[_Chunk] = []  # chunks of this call stored as new rows, for in-batch duplicates
    groups: dict[int, uuid.UUID] = {}
    chunked = {chunk.item_index for chunk in chunks if chunk.chunk_index > 0}
    for chunk in chunks:
        item = items[chunk.item_index]
        twin = _batch_twin(chunk, placed, item.domain, items, max_distance)
        if twin is None:
            twin = _stored_twin(scope, item.domain, chunk.vector, max_distance)
        if twin is not None and twin != item.supersedes:
            chunk.memory_id, chunk.reinforced = twin, True
            continue
        chunk.memory_id = uuid.uuid4()
        if chunk.item_index in chunked:
            groups.setdefault(chunk.item_index, uuid.uuid4())
        new_rows.append(
            Memory(
                id=chunk.memory_id,
                token=scope.token,
                agent=scope.agent,
                session=scope.session,
                content=chunk.text,
                content_hash=hashlib.sha256(chunk.text.encode()).hexdigest(),
                embedding=chunk.vector,
                domain=item.domain,
                type=item.type,
                concepts=chunk.concepts,
                metadata=item.metadata,
                chunk_group=groups.get(chunk.item_index),
                chunk_index=chunk.chunk_index,
                importance=item.importance,
                created_at=now,
                valid_from=now,
                expires_at=now + timedelta(seconds=item.ttl_seconds) if item.ttl_seconds else None,
                pinned=item.pinned,
            )
        )
        placed.append(chunk)
    return new_rows


def _batch_twin(
    chunk: _Chunk, placed: list[_Chunk], domain: str, items: Sequence[TellItem], max_distance: float
) -> uuid.UUID | None:
    for earlier in placed:
        if items[earlier.item_index].domain != domain:
            continue
        if 1.0 - float(np.dot(earlier.vector, chunk.vector)) <= max_distance:
            return earlier.memory_id
    return None


def _stored_twin(scope: Scope, domain: str, vector: np.ndarray, max_distance: float) -> uuid.UUID | None:
    with hnsw_filtered_scan():
        nearest = (
            # The exact namespace: a memory of another agent of the same token is not this one's twin.
            Memory.objects.filter(token=scope.token, agent=scope.agent, session=scope.session, domain=domain)
            .current()
            .live()
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance")
            .values_list("id", "distance")
            .first()
        )
    if nearest is not None and nearest[1] <= max_distance:
        return nearest[0]
    return None


def _locked(condition: Q, *, for_delete: bool = False) -> list[uuid.UUID]:
    """Lock the memories matching ``condition`` until the transaction ends, in id order; their ids.

    Every statement here that changes several memories locks them first with this, in one
    statement, so two transactions take the rows they share in the same order and never wait for
    each other in a circle. An ``UPDATE … WHERE id IN (…)`` alone does not: it locks rows in the
    order its plan visits them (a bitmap heap scan: where each row's version lies on disk, as the
    statement's snapshot sees it), and every update moves a row, so two concurrent asks reinforcing
    overlapping memories took them in opposite orders and deadlocked (issue 23: 16 of 119 asks
    answered 503). ``SELECT … ORDER BY id FOR … UPDATE`` locks each row as the sort hands it over.
    ``SKIP LOCKED`` would not wait at all, but a reinforcement that skipped a row would lose its
    count; the waits here last one short transaction.

    ``FOR NO KEY UPDATE`` (no key column changes) lets rows that reference these (an access, a
    successor) be inserted meanwhile; a delete needs ``FOR UPDATE``.
    """
    rows = Memory.objects.filter(condition).order_by("id").select_for_update(no_key=not for_delete)
    return list(rows.values_list("id", flat=True))


# Two statements sent as one query (one round trip): the first locks the rows in id order
# (``_locked``'s rule); the second, with a snapshot taken after those locks (READ COMMITTED takes one
# per statement), updates the row versions this transaction now holds, so it never waits. One
# statement could not do both: an UPDATE reading a locking CTE still sees, through its own older
# snapshot, versions it must then wait for, and deadlocked with the next ask in line. Sent outside a
# transaction (an ask), the two run as one implicit transaction and the locks last as long as the
# query: a Python thread waiting for its turn between statements while holding them would stall
# every ask sharing a memory. (Django's psycopg cursor binds parameters client-side, which allows
# several statements in one query.)
_REINFORCE_SQL = """
SELECT id FROM {table} WHERE id = ANY(%(ids)s::uuid[]) ORDER BY id FOR NO KEY UPDATE;
UPDATE {table} AS memory
SET access_count = memory.access_count + wanted.times,
    last_accessed_at = %(now)s,
    decay_factor = LEAST(memory.decay_factor * wanted.factor, 1.0)
FROM unnest(%(ids)s::uuid[], %(times)s::integer[], %(factors)s::double precision[])
    AS wanted(id, times, factor)
WHERE memory.id = wanted.id
"""


def _reinforce(*, ids: Sequence[uuid.UUID], config: MemorySettings, now: datetime) -> None:
    """One more access for each of ``ids`` (an id listed twice counts twice), added in the database
    (``count + n``, as ``F()`` does), so concurrent reinforcements never lose a count; the rows are
    locked in id order first, in the same query (``_REINFORCE_SQL``)."""
    counts: dict[uuid.UUID, int] = {}
    for memory_id in ids:
        counts[memory_id] = counts.get(memory_id, 0) + 1
    with connection.cursor() as cursor:
        cursor.execute(
            _REINFORCE_SQL.format(table=connection.ops.quote_name(Memory._meta.db_table)),
            {
                "ids": list(counts),
                "times": list(counts.values()),
                # The factor as Python computes it, so the product is the one F() * factor gave.
                "factors": [config.reinforce_factor**times for times in counts.values()],
                "now": now,
            },
        )


def memories_reinforce(
    *, hits: Sequence[tuple[uuid.UUID, float]], config: MemorySettings | None = None
) -> None:
    """What ``ask`` does to the memories it returns: reinforce each, then record the accesses (an
    insert that waits for no reinforcement), both before ``ask`` answers: the counts are exact when
    it returns."""
    if not hits:
        return
    now = timezone.now()
    _reinforce(ids=[memory_id for memory_id, _ in hits], config=config or MemorySettings.current(), now=now)
    MemoryAccess.objects.bulk_create(
        [
            MemoryAccess(memory_id=memory_id, accessed_at=now, relevance=relevance)
            for memory_id, relevance in hits
        ]
    )


def _supersede(
    items: Sequence[TellItem], chunks: list[_Chunk], superseded: dict[uuid.UUID, Memory], now: datetime
) -> None:
    for index, item in enumerate(items):
        if item.supersedes is None:
            continue
        successor = next(c.memory_id for c in chunks if c.item_index == index)
        if successor == item.supersedes:
            continue  # told again nearly word for word: reinforced, nothing to close
        Memory.objects.filter(id=item.supersedes).update(valid_until=now, superseded_by_id=successor)
        superseded[item.supersedes].valid_until = now


def _tell_result(item: TellItem, chunks: list[_Chunk]) -> dict[str, Any]:
    return {
        "id": str(chunks[0].memory_id),
        "status": "reinforced" if all(c.reinforced for c in chunks) else "stored",
        "chunks": [
            {
                "id": str(c.memory_id),
                "index": c.chunk_index,
                "status": "reinforced" if c.reinforced else "stored",
                "characters": len(c.text),
            }
            for c in chunks
        ],
        "domain": item.domain or None,
        "type": item.type,
        "concepts": chunks[0].concepts,
        "supersedes": str(item.supersedes) if item.supersedes else None,
    }


# --- Forget, pin, rotate ------------------------------------------------------------------------


def owned_memory(*, scope: Scope, memory_id: uuid.UUID, lock: bool = False) -> Memory:
    """The memory ``memory_id`` of ``scope``'s token; ``NotFound`` for any other (another token's
    memory is not found either, so ids reveal nothing)."""
    memories = Memory.objects.select_for_update() if lock else Memory.objects.all()
    memory = memories.filter(token=scope.token, id=memory_id).first()
    if memory is None:
        raise NotFound(f"No memory {memory_id} among this token's memories.", details={"id": str(memory_id)})
    return memory


FORGET_MODES = ("fade", "remove")


def memory_forget(*, scope: Scope, memory_id: uuid.UUID, mode: str) -> dict[str, Any]:
    """``fade``: the memory stays (and can still be found, ranked last) with its decay at the floor,
    unpinned so its TTL applies. ``remove``: deleted; a memory it superseded keeps its closed validity."""
    _forget_mode_check(mode)
    with transaction.atomic():
        _forget(owned_memory(scope=scope, memory_id=memory_id), mode)
    logger.info("memory.forgotten", token_id=scope.token.pk, memory_id=str(memory_id), mode=mode)
    return {"id": str(memory_id), "mode": mode, "forgotten": True}


def memory_pin(*, scope: Scope, memory_id: uuid.UUID, pinned: bool) -> Memory:
    with transaction.atomic():
        return _pin(owned_memory(scope=scope, memory_id=memory_id, lock=True), pinned)


UPDATABLE = ("content", "metadata", "importance", "domain")
FORGET_ALL_CONFIRMATION = "confirm"


def memory_update(*, scope: Scope, memory_id: uuid.UUID, changes: dict[str, Any]) -> dict[str, Any]:
    """Edit one of ``scope``'s token's memories in place (same id): ``changes`` holds any of content,
    metadata (replaced whole), importance and domain (``None`` or "" clears it).

    A new content is embedded again (the model runs before the transaction, as in ``tell``) and its
    concepts extracted again. What the memory said before is kept as a ``MemoryVersion`` and the
    memory's ``version`` goes up by one; values equal to the stored ones change nothing (no version).
    ``{"memory": Memory, "changed": [field names]}``.
    """
    unknown = sorted(set(changes) - set(UPDATABLE))
    if unknown or not changes:
        raise ValidationFailed(
            "Send at least one of content, metadata, importance and domain to update.",
            details={"field": "body", "unknown": unknown, "accepted": list(UPDATABLE)},
        )
    _update_check(changes)
    content = changes.get("content")
    vector = embed_text(text=content) if content is not None else None
    now = timezone.now()
    with transaction.atomic():
        if not _locked(Q(token=scope.token, id=memory_id)):
            raise NotFound(
                f"No memory {memory_id} among this token's memories.", details={"id": str(memory_id)}
            )
        memory = Memory.objects.get(pk=memory_id)
        wanted = {**changes, "domain": changes["domain"] or ""} if "domain" in changes else dict(changes)
        changed = [name for name in UPDATABLE if name in wanted and getattr(memory, name) != wanted[name]]
        if not changed:
            return {"memory": memory, "changed": []}
        if memory.shared and wanted.get("domain", memory.domain) == "":
            raise Conflict(
                "An operator shares this memory domain-wide: it keeps a domain (give another one).",
                details={"field": "domain", "id": str(memory_id)},
            )
        MemoryVersion.objects.create(
            memory=memory,
            version=memory.version,
            content=memory.content,
            domain=memory.domain,
            metadata=memory.metadata,
            importance=memory.importance,
            valid_from=memory.updated_at or memory.created_at,
            replaced_at=now,
        )
        for name in changed:
            setattr(memory, name, wanted[name])
        fields = [*changed, "version", "updated_at"]
        if "content" in changed:
            memory.content_hash = hashlib.sha256(memory.content.encode()).hexdigest()
            memory.embedding = vector
            memory.concepts = concepts_extract(memory.content)
            fields += ["content_hash", "embedding", "concepts"]
        memory.version += 1
        memory.updated_at = now
        memory.save(update_fields=fields)
    logger.info(
        "memory.updated",
        token_id=scope.token.pk,
        memory_id=str(memory_id),
        version=memory.version,
        changed=changed,
    )
    return {"memory": memory, "changed": changed}


def _update_check(changes: dict[str, Any]) -> None:
    """What ``tell`` checks of an item, for the fields an update names (the schema checked their types)."""
    from apps.memory.schemas import MAX_METADATA_BYTES  # schemas import this module

    if "content" in changes:
        content = changes["content"]
        if not isinstance(content, str) or not content.strip():
            raise ValidationFailed("content must hold some text.", details={"field": "content"})
        if len(content) > CHUNK_CHARS:
            raise ValidationFailed(
                f"content holds {len(content)} characters; an update keeps one memory, at most "
                f"{CHUNK_CHARS}: tell a longer text as a new memory that supersedes this one.",
                details={"field": "content", "max": CHUNK_CHARS},
            )
        if problem := text_problem(content):
            raise ValidationFailed(f"content {problem}.", details={"field": "content"})
    if "metadata" in changes:
        metadata = changes["metadata"]
        if not isinstance(metadata, dict):
            raise ValidationFailed("metadata must be a JSON object.", details={"field": "metadata"})
        if problems := unstorable_paths(metadata, "metadata"):
            raise ValidationFailed(f"{problems[0][0]} {problems[0][1]}.", details={"field": "metadata"})
        if len(json.dumps(metadata, ensure_ascii=False).encode()) > MAX_METADATA_BYTES:
            raise ValidationFailed(
                f"metadata must be at most {MAX_METADATA_BYTES} bytes as JSON.", details={"field": "metadata"}
            )
    importance = changes.get("importance", 0.5)
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not 0.0 <= importance <= 1.0
    ):
        raise ValidationFailed("importance must be 0 to 1.", details={"field": "importance"})
    domain = changes.get("domain")
    if domain and not re.fullmatch(DOMAIN_PATTERN, domain):
        raise ValidationFailed(
            "domain must be a lowercase name (letters, digits, . _ -), e.g. security.",
            details={"field": "domain"},
        )


def memories_forget_all(*, scope: Scope, confirm: bool, domain: str = "") -> dict[str, Any]:
    """Remove every memory ``scope`` told (its agent and session namespace when given, and only in
    ``domain`` when given), with their versions and access history: what ``confirm`` must say yes to.
    Never another token's memories, nor shared ones it did not tell. ``{"forgotten": n, …}``."""
    if confirm is not True:
        raise ValidationFailed(
            "Forgetting all memories cannot be undone: send confirm: true to remove every memory of "
            "this token" + (" in this namespace" if scope.agent or scope.session else "") + ".",
            details={"field": FORGET_ALL_CONFIRMATION, "expected": True},
        )
    memories = Memory.objects.filter(scope.own())
    if domain:
        memories = memories.filter(domain=domain)
    forgotten = _batched_delete(memories)
    logger.info(
        "memory.forgotten_all",
        token_id=scope.token.pk,
        agent=scope.agent,
        session=scope.session,
        domain=domain,
        forgotten=forgotten,
    )
    return {
        "forgotten": forgotten,
        "agent": scope.agent or None,
        "session": scope.session or None,
        "domain": domain or None,
    }


def memory_forget_by_operator(*, memory_id: uuid.UUID, mode: str, operator: str = "") -> dict[str, Any]:
    """``memory_forget`` for an operator (the memory pages): any token's memory, by id."""
    _forget_mode_check(mode)
    with transaction.atomic():
        memory = _operated_memory(memory_id)
        token_id = memory.token_id
        _forget(memory, mode)
    logger.info("memory.forgotten", token_id=token_id, memory_id=str(memory_id), mode=mode, operator=operator)
    return {"id": str(memory_id), "mode": mode, "forgotten": True}


def memory_pin_by_operator(*, memory_id: uuid.UUID, pinned: bool, operator: str = "") -> Memory:
    """``memory_pin`` for an operator (the memory pages): any token's memory, by id."""
    with transaction.atomic():
        memory = _pin(_operated_memory(memory_id), pinned)
    logger.info("memory.pinned", memory_id=str(memory_id), pinned=pinned, operator=operator)
    return memory


def _operated_memory(memory_id: uuid.UUID) -> Memory:
    memory = Memory.objects.defer("embedding").filter(id=memory_id).first()
    if memory is None:
        raise NotFound(f"No memory {memory_id}.", details={"id": str(memory_id)})
    return memory


def _forget_mode_check(mode: str) -> None:
    if mode not in FORGET_MODES:
        raise ValidationFailed("mode must be 'fade' or 'remove'.", details={"field": "mode"})


def _forget(memory: Memory, mode: str) -> None:
    if mode == "remove":
        # Deleting it clears the link of the memories it superseded: those rows change too.
        _locked(Q(pk=memory.pk) | Q(superseded_by=memory.pk), for_delete=True)
        memory.delete()
    else:
        _locked(Q(pk=memory.pk))
        memory.decay_factor = MemorySettings.current().decay_floor
        memory.pinned = False
        memory.save(update_fields=["decay_factor", "pinned"])


def _pin(memory: Memory, pinned: bool) -> Memory:
    _locked(Q(pk=memory.pk))
    memory.pinned = pinned
    memory.save(update_fields=["pinned"])
    return memory


def memories_move(*, from_token: ApiToken, to_token: ApiToken) -> int:
    """Give ``from_token``'s memories to ``to_token`` (token rotation); the number moved."""
    with transaction.atomic():
        return Memory.objects.filter(pk__in=_locked(Q(token=from_token))).update(token=to_token)


def memories_share(*, ids: Sequence[uuid.UUID], shared: bool) -> int:
    """An operator's decision: share memories domain-wide (every token asking in their domain sees
    them) or stop sharing them. Memories without a domain cannot be shared."""
    with transaction.atomic():
        memories = Memory.objects.filter(pk__in=_locked(Q(id__in=ids)))
        if shared and memories.filter(domain="").exists():
            raise ValidationFailed("Only memories with a domain can be shared domain-wide.")
        return memories.update(shared=shared)


def memories_pin_by_operator(*, ids: Sequence[uuid.UUID], pinned: bool) -> int:
    """An operator pins (or unpins) several memories at once (the admin's actions); the number."""
    with transaction.atomic():
        return Memory.objects.filter(pk__in=_locked(Q(id__in=ids))).update(pinned=pinned)


# --- Lifecycle ----------------------------------------------------------------------------------


def memory_lifecycle(*, now: datetime | None = None) -> dict[str, int]:
    """One lifecycle cycle, idempotent within a cycle and batched:

    - **decay**: a memory not retrieved during the last cycle has its decay multiplied by
      ``decay_rate``, never below ``decay_floor`` (a memory is never fully forgotten); ``decayed_at``
      keeps a second run within the same cycle from decaying it again;
    - **promotion**: short-term memories retrieved more than ``promotion_accesses`` times become
      long-term;
    - **expiry**: unpinned memories past ``expires_at`` are deleted;
    - old access history is pruned.
    """
    now = now or timezone.now()
    config = MemorySettings.current()
    cycle_start = now - timedelta(hours=config.decay_interval_hours)
    stale = Q(last_accessed_at__isnull=True) | Q(last_accessed_at__lt=cycle_start)
    not_this_cycle = Q(decayed_at__isnull=True) | Q(decayed_at__lt=cycle_start)
    decayed = _batched_update(
        Memory.objects.filter(stale & not_this_cycle),
        decay_factor=Greatest(F("decay_factor") * config.decay_rate, config.decay_floor),
        decayed_at=now,
    )
    promoted = _batched_update(
        Memory.objects.filter(type=MemoryType.SHORT_TERM, access_count__gt=config.promotion_accesses),
        type=MemoryType.LONG_TERM,
    )
    expired = _batched_delete(Memory.objects.filter(expires_at__lte=now, pinned=False))
    pruned = _batched_delete(
        MemoryAccess.objects.filter(accessed_at__lt=now - timedelta(days=config.access_history_days))
    )
    counts = {"decayed": decayed, "promoted": promoted, "expired": expired, "accessesPruned": pruned}
    logger.info("memory.lifecycle", **counts)
    return counts


def _batched_update(queryset: Any, **values: Any) -> int:
    """The memories of ``queryset`` updated a batch per transaction, each batch locked in id order
    first (as asks reinforcing some of them at the same time lock theirs: ``_locked``)."""
    total = 0
    while True:
        with transaction.atomic():
            ids = list(queryset.order_by().values_list("pk", flat=True)[:LIFECYCLE_BATCH])
            if not ids:
                return total
            # Filtered again once locked: a memory an ask reinforced meanwhile may no longer match.
            total += queryset.filter(pk__in=_locked(Q(pk__in=ids))).update(**values)
        if len(ids) < LIFECYCLE_BATCH:
            return total


def _batched_delete(queryset: Any) -> int:
    """The rows of ``queryset`` deleted a batch per transaction. A batch of memories is locked in id
    order first, with the memories they superseded (deleting a memory clears their link)."""
    total = 0
    label = queryset.model._meta.label
    while True:
        with transaction.atomic():
            ids = list(queryset.order_by().values_list("pk", flat=True)[:LIFECYCLE_BATCH])
            if not ids:
                return total
            batch = queryset.filter(pk__in=ids)
            if queryset.model is Memory:
                _locked(Q(pk__in=ids) | Q(superseded_by__in=ids), for_delete=True)
            total += batch.delete()[1].get(label, 0)
        if len(ids) < LIFECYCLE_BATCH:
            return total


def tell_batch_summary(*, results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "stored": sum(1 for result in results if result["status"] == "stored"),
        "reinforced": sum(1 for result in results if result["status"] == "reinforced"),
        "items": list(results),
    }


# --- Export and import (RDF) ---------------------------------------------------------------------

# Memories in one export or import: an import holds the whole file in one transaction.
MAX_TRANSFER = 10_000


def memories_export(*, scope: Scope, fmt: str, domain: str | None = None) -> tuple[str, str, int]:
    """``scope``'s own memories (all of them: current, superseded and pinned) as Turtle or JSON-LD in
    Semem's vocabulary (``apps.memory.rdf``); ``(content, media type, count)``.

    Only what this token told, narrowed by the scope's agent and session and by ``domain`` when
    given: never another token's memories, nor the ones an operator shared with this token.
    """
    if fmt not in rdf.MEDIA_TYPES:
        raise ValidationFailed("format must be 'turtle' or 'jsonld'.", details={"field": "format"})
    memories = Memory.objects.filter(scope.own())
    if domain:
        memories = memories.filter(domain=domain)
    count = memories.count()
    if count > MAX_TRANSFER:
        raise ValidationFailed(
            f"This scope holds {count} memories; an export holds at most {MAX_TRANSFER} (as an import "
            "does): narrow it with domain, agent or session.",
            details={"field": "domain", "count": count, "max": MAX_TRANSFER},
        )
    rows = list(memories.order_by("created_at", "id"))
    content = rdf.graph_serialize(rdf.memories_graph(rows), fmt)  # type: ignore[arg-type]
    logger.info("memory.exported", token_id=scope.token.pk, count=len(rows), format=fmt)
    return content, rdf.MEDIA_TYPES[fmt], len(rows)


def memories_import(*, scope: Scope, content: str, fmt: str) -> dict[str, Any]:
    """Restore the memories of an export (or of a Semem file) into ``scope``'s token, in one
    transaction: all of them or, when any is refused, none.

    The owner is always the caller's token, never anything the file says; agent and session come
    from the file (namespaces inside the token). An id among this token's memories is left alone
    (``unchanged``); any other id gets this token's own id for it (``renamed``, see
    ``_imported_id``; supersession links follow it), and so does a node that is not a ``urn:uuid:``
    (a new random id). A memory without a usable embedding or concepts has them computed again
    from its content.
    """
    if fmt not in rdf.MEDIA_TYPES:
        raise ValidationFailed("format must be 'turtle' or 'jsonld'.", details={"field": "format"})
    graph = rdf.graph_parse(content, fmt)  # type: ignore[arg-type]
    found = len(rdf.interactions(graph))
    if found == 0:
        raise ValidationFailed(
            "The file holds no memory: each one is a node of type semem:Interaction "
            "(<http://purl.org/stuff/semem/Interaction>) with its content in semem:output.",
            details={"field": "body"},
        )
    if found > MAX_TRANSFER:
        raise ValidationFailed(
            f"The file holds {found} memories; an import takes at most {MAX_TRANSFER}: split it.",
            details={"field": "body", "count": found, "max": MAX_TRANSFER},
        )
    records = rdf.memories_from_graph(graph)
    for record in records:
        _import_record_check(record)
    # The model runs before the transaction (as in tell): no lock is held while it computes.
    _import_vectors_complete(records)
    for attempt in range(2):
        try:
            with transaction.atomic():
                _scope_lock(scope)
                result = _import_rows(scope, records)
            break
        except IntegrityError:
            # A memory a link names went away since the ids were looked up: once more, with what is
            # stored now.
            if attempt == 1:
                raise
    logger.info(
        "memory.imported", token_id=scope.token.pk, **{k: v for k, v in result.items() if k != "renamedIds"}
    )
    return result


def _import_record_check(record: dict[str, Any]) -> None:
    """The checks ``tell`` makes of what it stores, naming the memory (its node in the file)."""
    from apps.memory.schemas import MAX_METADATA_BYTES  # schemas import this module

    ref = record["ref"]
    content = record["content"]

    def refuse(message: str, prop: str, **details: Any) -> ValidationFailed:
        details = {"memory": ref, "property": prop, **details}
        return ValidationFailed(f"Memory {ref}: {message}", details=details)

    if not content.strip():
        raise refuse("semem:output (its content) must hold some text.", "semem:output")
    if len(content) > MAX_CONTENT_CHARS:
        raise refuse(
            f"semem:output holds {len(content)} characters; at most {MAX_CONTENT_CHARS} are accepted "
            "(split it into several memories).",
            "semem:output",
            max=MAX_CONTENT_CHARS,
        )
    if problem := text_problem(content):
        raise refuse(f"semem:output {problem}.", "semem:output")
    texts = (("semem:concepts", record["concepts"] or []), ("cortex:metadata", record["metadata"]))
    for prop, value in texts:
        if problems := unstorable_paths(value, prop):
            raise refuse(f"{problems[0][0]} {problems[0][1]}.", prop)
    if len(json.dumps(record["metadata"], ensure_ascii=False).encode()) > MAX_METADATA_BYTES:
        raise refuse(
            f"cortex:metadata must be at most {MAX_METADATA_BYTES} bytes as JSON.", "cortex:metadata"
        )


def _import_vectors_complete(records: list[dict[str, Any]]) -> None:
    """Embed (and extract the concepts of) the memories whose file lacks them or holds unusable ones."""
    missing = [record for record in records if record["embedding"] is None]
    if missing:
        vectors = embed_texts(texts=[record["content"] for record in missing])
        for record, vector in zip(missing, vectors, strict=True):
            record["embedding"] = vector
    for record in records:
        if record["concepts"] is None:
            record["concepts"] = concepts_extract(record["content"])


def _imported_id(scope: Scope, file_id: uuid.UUID) -> uuid.UUID:
    """The id a memory of the file that is not among this token's memories gets here: derived from
    the token and the file's id, so importing the same file again finds it (``unchanged``).

    Never the file's own id, even when it is free: keeping a free id and renaming a taken one told
    the caller which ids another token's memories have (issue 23). Whatever other tokens hold, the
    answer is now the same: an id outside the caller's memories is as good as unknown. The price is
    that a memory removed and imported back comes back under a new id (``renamedIds`` says which).
    Another token's memory cannot have this id: its imports derive ids from its own token, and
    ``tell`` draws random ones.
    """
    return uuid.uuid5(uuid.uuid5(uuid.NAMESPACE_URL, f"urn:cortexweb:token:{scope.token.pk}"), str(file_id))


def _import_rows(scope: Scope, records: list[dict[str, Any]]) -> dict[str, Any]:
    derived = {r["id"]: _imported_id(scope, r["id"]) for r in records if r["id"]}
    # Only this token's memories are looked up: nothing here depends on what other tokens hold.
    own = set(
        Memory.objects.filter(token=scope.token, id__in={*derived, *derived.values()}).values_list(
            "id", flat=True
        )
    )
    final: dict[str, uuid.UUID] = {}  # ref in the file -> the id it has here
    used_ids: set[uuid.UUID] = set()
    unchanged: set[str] = set()
    renamed: dict[str, str] = {}
    for record in records:
        memory_id = record["id"]
        if memory_id in own:
            unchanged.add(record["ref"])
        elif memory_id is not None and derived[memory_id] in own:
            memory_id = derived[memory_id]  # imported before: already here under this token's id
            unchanged.add(record["ref"])
        else:
            # New here: this token's id for it (a random one for a node without a UUID, or for the
            # same UUID spelt twice).
            fresh = derived.get(memory_id) if memory_id is not None else None
            memory_id = fresh if fresh is not None and fresh not in used_ids else uuid.uuid4()
            renamed[str(record["id"] or record["ref"])] = str(memory_id)
        final[record["ref"]] = memory_id
        used_ids.add(memory_id)
    new = [record for record in records if record["ref"] not in unchanged]
    groups = _import_chunk_groups(scope, new)
    successors = _import_successors(scope, new, final)
    Memory.objects.bulk_create(
        [
            Memory(
                id=final[record["ref"]],
                token=scope.token,
                agent=record["agent"],
                session=record["session"],
                content=record["content"],
                content_hash=hashlib.sha256(record["content"].encode()).hexdigest(),
                embedding=np.asarray(record["embedding"], dtype=np.float32),
                domain=record["domain"],
                type=record["type"],
                concepts=record["concepts"],
                metadata=record["metadata"],
                chunk_group=groups.get(record["chunk_group"]),
                chunk_index=record["chunk_index"],
                importance=record["importance"],
                access_count=record["access_count"],
                last_accessed_at=record["last_accessed_at"],
                decay_factor=record["decay_factor"],
                created_at=record["created_at"] or timezone.now(),
                expires_at=record["expires_at"],
                pinned=record["pinned"],
                valid_from=record["valid_from"] or record["created_at"] or timezone.now(),
                valid_until=record["valid_until"],
                superseded_by_id=successors.get(record["ref"]),
            )
            for record in new
        ],
        batch_size=1000,
    )
    return {
        "imported": len(new),
        "unchanged": len(unchanged),
        "renamed": len(renamed),
        "total": len(records),
        "renamedIds": renamed,
    }


def _import_chunk_groups(scope: Scope, new: list[dict[str, Any]]) -> dict[uuid.UUID | None, uuid.UUID]:
    """Each chunk group of the file -> the group it has here: kept when this token's memories use
    it (the other chunks of a content are here), else this token's id for it, as for memory ids
    (``_imported_id``): two owners' chunks never look like one content, and what other tokens hold
    changes nothing."""
    wanted = {record["chunk_group"] for record in new if record["chunk_group"]}
    own = set(
        Memory.objects.filter(token=scope.token, chunk_group__in=wanted).values_list("chunk_group", flat=True)
    )
    return {group: group if group in own else _imported_id(scope, group) for group in wanted}


def _import_successors(
    scope: Scope, new: list[dict[str, Any]], final: dict[str, uuid.UUID]
) -> dict[str, uuid.UUID]:
    """ref -> the id of its successor: a memory of the file (under its id here) or one of this
    token's memories; a successor that is neither is dropped (the validity stays closed)."""
    outside = {
        record["superseded_by_id"]
        for record in new
        if record["superseded_by"] and record["superseded_by"] not in final and record["superseded_by_id"]
    }
    # A successor imported before is here under this token's id for it (``_imported_id``).
    here = {memory_id: _imported_id(scope, memory_id) for memory_id in outside}
    own = set(
        Memory.objects.filter(token=scope.token, id__in={*outside, *here.values()}).values_list(
            "id", flat=True
        )
    )
    links: dict[str, uuid.UUID] = {}
    for record in new:
        successor, successor_id = record["superseded_by"], record["superseded_by_id"]
        if successor in final:
            links[record["ref"]] = final[successor]
        elif successor_id in own:
            links[record["ref"]] = successor_id
        elif successor_id in here and here[successor_id] in own:
            links[record["ref"]] = here[successor_id]
    return links
