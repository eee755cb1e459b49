"""Memory reads: ``ask`` (Semem's weighted relevance over pgvector candidates), one memory, its
supersession chain, and the memories of a scope for export.

Relevance (seed 004, ``MemoryDomainManager.calculateRelevance``) = Σ weight × component, each
component in [0, 1]:

- **semantic**: cosine similarity of the question and the memory (negative similarity counts 0);
- **temporal**: ``decay_factor · exp(−λ · age in days)`` (age since the memory was told);
- **domain**: 1 when the question names the memory's domain; otherwise the share of the question's
  concepts the memory also has;
- **frequency**: ``min(1, log1p(access_count) / log1p(saturation)) · importance``.

Before any weighing, ``ask`` keeps only the memories *about* the question: cosine similarity at or
above the semantic floor (``MemorySettings.semantic_floor``). The weighted total cannot stand in for
it: recency and importance alone lift a fresh memory on another subject over the threshold (issue 25:
an on-call memory at similarity 0.14 answered a question about a launch password).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.db.models import Q, QuerySet, Value
from django.utils import timezone
from pgvector import Vector
from pgvector.django import CosineDistance

from apps.core.errors import NotFound, ValidationFailed
from apps.core.models import ApiToken
from apps.core.query_templates import QueryTemplate
from apps.embeddings.fields import hnsw_filtered_scan
from apps.embeddings.services import embed_text
from apps.memory.models import Memory, MemoryAccess, MemoryQuerySet, MemorySettings, MemoryVersion
from apps.memory.services import Scope, scope_condition
from apps.memory.text import concepts_extract

COMPONENTS = ("domain", "temporal", "semantic", "frequency")
MAX_LIMIT = 50
# pgvector candidates per ask: the nearest by meaning, re-ranked by the four components.
MIN_CANDIDATES = 50
CANDIDATES_PER_RESULT = 5
SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class ScoredMemory:
    memory: Memory
    relevance: float
    components: dict[str, float]
    # Under the semantic floor: listed among the nearest memories, never answered from.
    below_floor: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            **memory_as_dict(self.memory),
            "relevance": round(self.relevance, 6),
            "scores": {name: round(value, 6) for name, value in self.components.items()},
            "belowFloor": self.below_floor,
        }


@dataclass(frozen=True)
class Recall:
    """What ``ask`` found: the memories about the question that pass the threshold (best first), and,
    when there are none, the nearest candidates by meaning (most similar first) to show as such."""

    relevant: list[ScoredMemory]
    nearest: list[ScoredMemory]


def weights_check(weights: dict[str, float] | None, config: MemorySettings) -> dict[str, float]:
    """The weights ``ask`` uses: the admin's, or the caller's when given (all four, summing to 1)."""
    if weights is None:
        return config.weights
    missing = [name for name in COMPONENTS if name not in weights]
    unknown = sorted(set(weights) - set(COMPONENTS))
    if missing or unknown:
        raise ValidationFailed(
            "weights must name exactly domain, temporal, semantic and frequency.",
            details={"field": "weights", "missing": missing, "unknown": unknown},
        )
    if any(not 0.0 <= weights[name] <= 1.0 for name in COMPONENTS):
        raise ValidationFailed("Each weight must be 0 to 1.", details={"field": "weights"})
    total = sum(weights[name] for name in COMPONENTS)
    if abs(total - 1.0) > 1e-6:
        raise ValidationFailed(
            f"weights must sum to 1; these sum to {total:.4f}.", details={"field": "weights", "sum": total}
        )
    return {name: float(weights[name]) for name in COMPONENTS}


def relevance_components(
    *,
    memory: Memory | _Candidate,
    similarity: float,
    question_concepts: Sequence[str],
    domain: str | None,
    config: MemorySettings,
    now: datetime,
) -> dict[str, float]:
    """The four components of ``memory``'s relevance (see the module docstring)."""
    age_days = max((now - memory.created_at).total_seconds(), 0.0) / SECONDS_PER_DAY
    if domain and memory.domain == domain:
        domain_match = 1.0
    elif question_concepts:
        domain_match = len(set(question_concepts) & set(memory.concepts)) / len(set(question_concepts))
    else:
        domain_match = 0.0
    frequency = min(1.0, math.log1p(memory.access_count) / math.log1p(config.frequency_saturation))
    return {
        "domain": domain_match,
        "temporal": temporal_component(memory.decay_factor, age_days, config),
        "semantic": min(max(similarity, 0.0), 1.0),
        "frequency": frequency * memory.importance,
    }


def temporal_component(decay_factor: float, age_days: float, config: MemorySettings) -> float:
    """Semem's ``decayFactor · exp(−λ · Δt)``, Δt in days."""
    return decay_factor * math.exp(-config.temporal_lambda_per_day * age_days)


def visible_memories(*, scope: Scope, domain: str | None) -> MemoryQuerySet:
    """What ``scope`` may read: its own memories, plus those an operator shared in ``domain``."""
    return Memory.objects.filter(
        visible_condition(token_id=scope.token.pk, agent=scope.agent, session=scope.session, domain=domain)
    )


def visible_condition(*, token_id: int, agent: str, session: str, domain: str | None) -> Q:
    condition = scope_condition(token_id=token_id, agent=agent, session=session)
    if domain:
        condition |= Q(shared=True, domain=domain)
    return condition


def memory_ask(
    *,
    scope: Scope,
    question: str,
    domain: str | None = None,
    limit: int = 10,
    threshold: float | None = None,
    include_superseded: bool = False,
    weights: dict[str, float] | None = None,
    memory_type: str | None = None,
    config: MemorySettings | None = None,
    vector: np.ndarray | None = None,
) -> list[ScoredMemory]:
    """The memories of ``scope`` relevant to ``question``, best first: ``memory_recall``'s relevant ones."""
    return memory_recall(
        scope=scope,
        question=question,
        domain=domain,
        limit=limit,
        threshold=threshold,
        include_superseded=include_superseded,
        weights=weights,
        memory_type=memory_type,
        config=config,
        vector=vector,
    ).relevant


def memory_recall(
    *,
    scope: Scope,
    question: str,
    domain: str | None = None,
    limit: int = 10,
    threshold: float | None = None,
    semantic_floor: float | None = None,
    include_superseded: bool = False,
    weights: dict[str, float] | None = None,
    memory_type: str | None = None,
    config: MemorySettings | None = None,
    vector: np.ndarray | None = None,
) -> Recall:
    """The memories of ``scope`` about ``question`` (similarity at or above ``semantic_floor``, by
    default the admin's) with relevance at or above ``threshold``, best first; when none qualifies,
    the nearest candidates instead, marked.

    Candidates are the nearest memories by embedding (a filtered HNSW scan in strict order, so the
    scope's filter never makes it come back short), re-ranked by relevance. Reinforcing what was
    found is the caller's decision (``services.memories_reinforce``): an operator browsing must not
    change what agents are shown. ``config`` and the question's ``vector`` may be passed by a caller
    that already has them.
    """
    text = " ".join((question or "").split())
    if len(text) < 2:
        raise ValidationFailed("The question must hold at least 2 characters.", details={"field": "question"})
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed(f"limit must be 1 to {MAX_LIMIT}.", details={"field": "limit"})
    config = config or MemorySettings.current()
    threshold = config.relevance_threshold if threshold is None else threshold
    if not 0.0 <= threshold <= 1.0:
        raise ValidationFailed("threshold must be 0 to 1.", details={"field": "threshold"})
    floor = config.semantic_floor if semantic_floor is None else semantic_floor
    if not -1.0 <= floor <= 1.0:
        raise ValidationFailed("semanticFloor must be -1 to 1.", details={"field": "semanticFloor"})
    chosen_weights = weights_check(weights, config)
    vector = embed_text(text=text) if vector is None else vector
    shape = _AskShape(
        agent=bool(scope.agent),
        session=bool(scope.session),
        domain=bool(domain),
        memory_type=bool(memory_type),
        include_superseded=include_superseded,
        candidates=_candidate_count(limit),
    )
    now = timezone.now()
    with hnsw_filtered_scan():
        rows = _ASK_CANDIDATES.rows(
            shape=shape,
            values={
                "token_id": scope.token.pk,
                "agent": scope.agent,
                "session": scope.session,
                "domain": domain or "",
                "memory_type": memory_type or "",
                "now": now,
                "vector": Vector(vector).to_text(),
            },
        )
    return _rows_recalled(
        rows,
        question=text,
        domain=domain,
        limit=limit,
        threshold=threshold,
        semantic_floor=floor,
        weights=chosen_weights,
        config=config,
        now=now,
    )


@dataclass(frozen=True)
class _AskShape:
    """What changes the SQL of ask's candidate query (its values do not)."""

    agent: bool
    session: bool
    domain: bool
    memory_type: bool
    include_superseded: bool
    candidates: int


def _ask_candidates(
    *,
    shape: _AskShape,
    token_id: int,
    agent: str,
    session: str,
    domain: str,
    memory_type: str,
    now: datetime,
    vector: str,
) -> QuerySet[Memory, tuple[Any, ...]]:
    """ask's candidates: the nearest visible memories by embedding, as rows (``_ROW_FIELDS`` and the
    distance). Compiled once per shape (``_ASK_CANDIDATES``)."""
    memories = Memory.objects.filter(
        visible_condition(
            token_id=token_id,
            agent=agent if shape.agent else "",
            session=session if shape.session else "",
            domain=domain if shape.domain else None,
        )
    ).live(now)
    if not shape.include_superseded:
        memories = memories.current()
    if shape.memory_type:
        memories = memories.filter(type=memory_type)
    return _nearest_rows(memories, vector=Value(vector), count=shape.candidates)


_ASK_CANDIDATES = QueryTemplate(
    _ask_candidates,
    kinds={
        "token_id": int,
        "agent": str,
        "session": str,
        "domain": str,
        "memory_type": str,
        "now": datetime,
        "vector": str,
    },
)


@dataclass(frozen=True)
class _Candidate:
    """What scoring reads of a candidate, and its row: a model instance is built only for the winners
    (building 50 models per ask cost more than the vector search itself; bench/memory.py)."""

    id: uuid.UUID
    created_at: datetime
    decay_factor: float
    access_count: int
    importance: float
    domain: str
    concepts: list[str]
    distance: float
    row: tuple[Any, ...]


# Every column but the embedding: one query reads what scoring needs and what the winners show.
_ROW_FIELDS = tuple(field.attname for field in Memory._meta.concrete_fields if field.name != "embedding")
_SCORED = ("id", "created_at", "decay_factor", "access_count", "importance", "domain", "concepts")
_SCORED_AT = tuple(_ROW_FIELDS.index(name) for name in _SCORED)


def memories_rank(
    *,
    memories: QuerySet[Memory],
    question: str,
    domain: str | None,
    limit: int,
    threshold: float,
    weights: dict[str, float],
    config: MemorySettings,
    vector: np.ndarray | None = None,
) -> list[ScoredMemory]:
    """``memories`` ranked for ``question`` as ``ask`` ranks (the operators' page, over any filter)."""
    vector = embed_text(text=question) if vector is None else vector
    with hnsw_filtered_scan():
        rows = list(_nearest_rows(memories, vector=vector, count=_candidate_count(limit)))
    # The operators' page ranks without the floor: it shows what the weights make of everything.
    return _rows_recalled(
        rows,
        question=question,
        domain=domain,
        limit=limit,
        threshold=threshold,
        semantic_floor=-1.0,
        weights=weights,
        config=config,
        now=timezone.now(),
    ).relevant


def _candidate_count(limit: int) -> int:
    return max(MIN_CANDIDATES, CANDIDATES_PER_RESULT * limit)


def _nearest_rows(
    memories: QuerySet[Memory], *, vector: Any, count: int
) -> QuerySet[Memory, tuple[Any, ...]]:
    return (
        memories.annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
        .values_list(*_ROW_FIELDS, "distance")[:count]
    )


def _rows_recalled(
    rows: Sequence[tuple[Any, ...]],
    *,
    question: str,
    domain: str | None,
    limit: int,
    threshold: float,
    semantic_floor: float,
    weights: dict[str, float],
    config: MemorySettings,
    now: datetime,
) -> Recall:
    """The candidate rows scored: those at or above ``semantic_floor`` and ``threshold`` best first;
    when none, the nearest by similarity. Only what is returned becomes memories."""
    question_concepts = concepts_extract(question)
    scored: list[tuple[_Candidate, float, dict[str, float]]] = []
    others: list[tuple[_Candidate, float, dict[str, float]]] = []
    for row in rows:
        scored_values = dict(zip(_SCORED, (row[index] for index in _SCORED_AT), strict=True))
        candidate = _Candidate(**scored_values, distance=row[-1], row=row[:-1])
        components = relevance_components(
            memory=candidate,
            similarity=1.0 - float(candidate.distance),
            question_concepts=question_concepts,
            domain=domain,
            config=config,
            now=now,
        )
        relevance = sum(weights[name] * components[name] for name in COMPONENTS)
        if 1.0 - float(candidate.distance) >= semantic_floor and relevance >= threshold:
            scored.append((candidate, relevance, components))
        else:
            others.append((candidate, relevance, components))
    scored.sort(key=lambda hit: (-hit[1], -hit[2]["semantic"], str(hit[0].id)))
    relevant = [
        ScoredMemory(Memory.from_db("default", _ROW_FIELDS, candidate.row), relevance, components)
        for candidate, relevance, components in scored[:limit]
    ]
    if relevant:
        return Recall(relevant=relevant, nearest=[])
    # Nearest by meaning: the rows came ordered by distance, which is the order to show.
    nearest = [
        ScoredMemory(
            Memory.from_db("default", _ROW_FIELDS, candidate.row),
            relevance,
            components,
            below_floor=1.0 - float(candidate.distance) < semantic_floor,
        )
        for candidate, relevance, components in others[:limit]
    ]
    return Recall(relevant=[], nearest=nearest)


# --- One memory ---------------------------------------------------------------------------------


def memory_as_dict(memory: Memory) -> dict[str, Any]:
    """A memory as agents read it (REST, MCP, export of one)."""
    return {
        "id": str(memory.id),
        "content": memory.content,
        "domain": memory.domain or None,
        "type": memory.type,
        "concepts": memory.concepts,
        "metadata": memory.metadata,
        "importance": memory.importance,
        "accessCount": memory.access_count,
        "lastAccessedAt": _iso(memory.last_accessed_at),
        "decayFactor": round(memory.decay_factor, 6),
        "createdAt": _iso(memory.created_at),
        "expiresAt": _iso(memory.expires_at),
        "pinned": memory.pinned,
        "validFrom": _iso(memory.valid_from),
        "validUntil": _iso(memory.valid_until),
        "supersededBy": str(memory.superseded_by_id) if memory.superseded_by_id else None,
        "agent": memory.agent or None,
        "session": memory.session or None,
        "shared": memory.shared,
        "chunk": {"group": str(memory.chunk_group), "index": memory.chunk_index}
        if memory.chunk_group
        else None,
        "version": memory.version,
        "updatedAt": _iso(memory.updated_at),
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def memory_get(*, scope: Scope, memory_id: uuid.UUID) -> Memory:
    """A memory ``scope``'s token told, or one an operator shared; ``NotFound`` otherwise."""
    memory = (
        Memory.objects.defer("embedding").filter(Q(token=scope.token) | Q(shared=True), id=memory_id).first()
    )
    if memory is None:
        raise NotFound(f"No memory {memory_id} among this token's memories.", details={"id": str(memory_id)})
    return memory


def supersession_chain(*, memory: Memory, max_length: int = 100) -> list[Memory]:
    """The memories ``memory`` replaced and those that replaced it, oldest first (same token only)."""
    chain = [memory]
    older = memory
    while len(chain) < max_length:
        previous = (
            Memory.objects.defer("embedding").filter(superseded_by=older, token_id=memory.token_id).first()
        )
        if previous is None or previous in chain:
            break
        chain.insert(0, previous)
        older = previous
    newer = memory
    while newer.superseded_by_id and len(chain) < max_length:
        successor = Memory.objects.defer("embedding").filter(pk=newer.superseded_by_id).first()
        if successor is None or successor in chain:
            break
        chain.append(successor)
        newer = successor
    return chain


def memory_detail(*, memory: Memory) -> dict[str, Any]:
    """A memory with its supersession chain (ids, oldest first)."""
    return {**memory_as_dict(memory), "chain": [str(m.id) for m in supersession_chain(memory=memory)]}


def memory_history(*, scope: Scope, memory_id: uuid.UUID) -> dict[str, Any]:
    """What a memory ``scope`` may read said over time: each version its updates replaced, then the
    current one, oldest first; with its supersession chain (memories that replaced one another)."""
    memory = memory_get(scope=scope, memory_id=memory_id)
    versions = [
        {
            "version": old.version,
            "content": old.content,
            "domain": old.domain or None,
            "metadata": old.metadata,
            "importance": old.importance,
            "validFrom": _iso(old.valid_from),
            "validUntil": _iso(old.replaced_at),
            "current": False,
        }
        for old in MemoryVersion.objects.filter(memory=memory).order_by("version")
    ]
    versions.append(
        {
            "version": memory.version,
            "content": memory.content,
            "domain": memory.domain or None,
            "metadata": memory.metadata,
            "importance": memory.importance,
            "validFrom": _iso(memory.updated_at or memory.created_at),
            "validUntil": None,
            "current": True,
        }
    )
    return {
        "id": str(memory.id),
        "version": memory.version,
        "versions": versions,
        "chain": [str(m.id) for m in supersession_chain(memory=memory)],
    }


MAX_PAGE = 100
MAX_OFFSET = 1_000_000_000  # far past any token's memories, and inside Postgres' OFFSET range


@dataclass(frozen=True)
class ListFilters:
    """The filters of a token listing its memories; empty values do not filter."""

    domain: str = ""
    type: str = ""
    pinned: bool | None = None
    text: str = ""
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_superseded: bool = False


def memories_list(*, scope: Scope, filters: ListFilters, limit: int = 20, offset: int = 0) -> dict[str, Any]:
    """The memories ``scope`` told (never another token's, nor shared ones: a token lists what it can
    change), newest first, one page of ``limit`` from ``offset``, with the total matching."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationFailed(f"limit must be 1 to {MAX_PAGE}.", details={"field": "limit"})
    if not 0 <= offset <= MAX_OFFSET:
        raise ValidationFailed(f"offset must be 0 to {MAX_OFFSET}.", details={"field": "offset"})
    if filters.created_after and filters.created_before and filters.created_after >= filters.created_before:
        raise ValidationFailed(
            "createdAfter must be earlier than createdBefore.",
            details={"field": "createdBefore", "createdAfter": filters.created_after.isoformat()},
        )
    memories = Memory.objects.filter(scope.own()).live().defer("embedding")
    if not filters.include_superseded:
        memories = memories.current()
    if filters.domain:
        memories = memories.filter(domain=filters.domain)
    if filters.type:
        memories = memories.filter(type=filters.type)
    if filters.pinned is not None:
        memories = memories.filter(pinned=filters.pinned)
    if filters.text:
        memories = memories.filter(content__icontains=filters.text)
    if filters.created_after:
        memories = memories.filter(created_at__gte=filters.created_after)
    if filters.created_before:
        memories = memories.filter(created_at__lt=filters.created_before)
    total = memories.count()
    page = list(memories.order_by("-created_at", "-id")[offset : offset + limit])
    return {
        "total": total,
        "limit": limit,
        "offset": offset,
        "nextOffset": offset + limit if offset + limit < total else None,
        "memories": [memory_as_dict(memory) for memory in page],
    }


# --- The operators' pages -------------------------------------------------------------------------
# Operators (staff with the memory permissions) see every token's memories: the scope rule above is
# the agents' rule, not theirs.


@dataclass(frozen=True)
class BrowseFilters:
    """``/memories``' filters; empty values do not filter."""

    domain: str = ""
    type: str = ""
    agent: str = ""
    token_id: int | None = None
    pinned: bool | None = None


def memories_browse(*, filters: BrowseFilters) -> MemoryQuerySet:
    """Every token's memories matching ``filters``, newest first, with their token."""
    memories = Memory.objects.select_related("token").defer("embedding")
    if filters.domain:
        memories = memories.filter(domain=filters.domain)
    if filters.type:
        memories = memories.filter(type=filters.type)
    if filters.agent:
        memories = memories.filter(agent=filters.agent)
    if filters.token_id is not None:
        memories = memories.filter(token_id=filters.token_id)
    if filters.pinned is not None:
        memories = memories.filter(pinned=filters.pinned)
    return memories.order_by("-created_at", "-id")


FACET_LIMIT = 500


def memory_facets() -> dict[str, list[Any]]:
    """The values ``/memories``' filters offer: domains, agents and tokens that have memories."""
    values = Memory.objects.order_by()
    token_ids = values.values("token_id").distinct()
    return {
        "domains": list(values.exclude(domain="").values_list("domain", flat=True).distinct()[:FACET_LIMIT]),
        "agents": list(values.exclude(agent="").values_list("agent", flat=True).distinct()[:FACET_LIMIT]),
        "tokens": list(ApiToken.objects.filter(pk__in=token_ids).order_by("name", "prefix")[:FACET_LIMIT]),
    }


def memory_find(*, memory_id: uuid.UUID) -> Memory | None:
    """Any token's memory (for operators), with its token; ``None`` when there is none."""
    return Memory.objects.select_related("token").defer("embedding").filter(id=memory_id).first()


def memory_accesses_recent(*, memory: Memory, limit: int = 50) -> list[MemoryAccess]:
    return list(memory.accesses.order_by("-accessed_at", "-id")[:limit])


@dataclass(frozen=True)
class OutlookPoint:
    days: float  # from now
    temporal: float  # the temporal component if the decay factor stays as it is
    unretrieved: float  # ... if the memory is never retrieved: the lifecycle decays it every cycle


def memory_decay_outlook(
    *, memory: Memory, config: MemorySettings, now: datetime, days: int = 30, samples: int = 241
) -> list[OutlookPoint]:
    """The temporal component over the next ``days``: as the decay factor stands, and as the lifecycle
    would decay it if no ask retrieved the memory (× ``decay_rate`` per ``decay_interval_hours``
    cycle, never below ``decay_floor``)."""
    cycle_days = max(config.decay_interval_hours, 1) / 24
    age_now = max((now - memory.created_at).total_seconds(), 0.0) / SECONDS_PER_DAY
    points = []
    for index in range(samples):
        ahead = days * index / (samples - 1)
        cycles = math.floor(ahead / cycle_days + 1e-9)
        decayed = max(memory.decay_factor * config.decay_rate**cycles, config.decay_floor)
        points.append(
            OutlookPoint(
                days=ahead,
                temporal=temporal_component(memory.decay_factor, age_now + ahead, config),
                unretrieved=temporal_component(min(decayed, memory.decay_factor), age_now + ahead, config),
            )
        )
    return points
