"""Knowledge reads: hybrid search (pgvector cosine + Postgres full text, fused by rank)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db.models import F, QuerySet
from django.utils import timezone
from pgvector.django import CosineDistance

from apps.core.errors import NotFound, ValidationFailed
from apps.embeddings.fields import hnsw_filtered_scan
from apps.embeddings.services import embed_text
from apps.knowledge.models import KnowledgeDomain, KnowledgeEntry

# Reciprocal rank fusion (Cormack et al. 2009): score = Σ 1 / (k + rank); k = 60 is the usual choice.
RRF_K = 60
CANDIDATES_PER_METHOD = 20
MAX_LIMIT = 50
# Below this cosine similarity, with no full-text match either, an entry does not match the query
# well: the pages say "nothing matches well" instead of listing the nearest as answers. Measured on
# the shipped packs with tests/data/knowledge_floor_queries.json (docs/knowledge.md): 24 questions the
# packs answer had a best similarity of 0.380 to 0.818, 12 they do not 0.110 to 0.223; 0.30 sits
# between with a margin of 0.08 on each side. tests/knowledge/test_search_floor.py keeps it true.
SIMILARITY_FLOOR = 0.30


@dataclass
class SearchHit:
    entry: KnowledgeEntry
    score: float  # fused (RRF)
    similarity: float  # cosine similarity of the query and the entry
    vector_rank: int | None
    text_rank: int | None

    @property
    def matches_well(self) -> bool:
        """At or above ``SIMILARITY_FLOOR``, or a full-text match (the query's own words)."""
        return self.similarity >= SIMILARITY_FLOOR or self.text_rank is not None

    def as_dict(self) -> dict:
        return {
            **entry_as_dict(self.entry),
            "score": round(self.score, 6),
            "similarity": round(self.similarity, 4),
            "vectorRank": self.vector_rank,
            "textRank": self.text_rank,
        }


def entry_as_dict(entry: KnowledgeEntry) -> dict:
    """An entry as agents read it (search hits and the MCP ``cortexweb://knowledge/{id}`` resource)."""
    return {
        "id": entry.entry_id,
        "domain": entry.domain.name,
        "topic": entry.topic,
        "content": entry.content,
        "source": entry.source,
        "url": entry.url,
        "tags": entry.tags,
        "related": entry.related,
        "confidence": entry.confidence,
        # Seed 001's knowledge_entry names it so (snake_case, as the pack files and /api/ do).
        "last_verified": entry.last_verified.isoformat() if entry.last_verified else None,
    }


def domain_check(name: str | None) -> str | None:
    """``name`` when such a domain exists (or ``None``); ``NotFound`` listing the domains otherwise."""
    if not name:
        return None
    if not KnowledgeDomain.objects.filter(name=name).exists():
        known = ", ".join(KnowledgeDomain.objects.values_list("name", flat=True)) or "none yet"
        raise NotFound(
            f"Unknown knowledge domain {name!r}; known domains: {known}.", details={"domain": name}
        )
    return name


def knowledge_search(
    *, query: str, domain: str | None = None, limit: int = 10, query_vector: np.ndarray | None = None
) -> list[SearchHit]:
    """Entries for ``query``, best first: the nearest by embedding and the best by full text, fused."""
    text = " ".join((query or "").split())
    if len(text) < 2:
        raise ValidationFailed("The search text must hold at least 2 characters.", details={"field": "query"})
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed(f"limit must be 1 to {MAX_LIMIT}.", details={"field": "limit"})
    domain = domain_check(domain)
    vector = query_vector if query_vector is not None else embed_text(text=text)
    # The vectors stay in Postgres (parsing 384 floats per row costs more than the search itself).
    entries = (
        KnowledgeEntry.objects.in_domain(domain)
        .select_related("domain", "knowledge_source")
        .defer("embedding")
        .annotate(distance=CosineDistance("embedding", vector))
    )
    with hnsw_filtered_scan():
        by_vector = list(entries.filter(embedding__isnull=False).order_by("distance")[:CANDIDATES_PER_METHOD])
    search_query = SearchQuery(text, search_type="websearch", config="english")
    by_text = list(
        entries.filter(search_vector=search_query)
        .annotate(rank=SearchRank(F("search_vector"), search_query))
        .order_by("-rank", "entry_id")[:CANDIDATES_PER_METHOD]
    )
    fused: dict[int, SearchHit] = {}
    for rank, entry in enumerate(by_vector, start=1):
        fused[entry.pk] = SearchHit(entry, 1 / (RRF_K + rank), _similarity(entry), rank, None)
    for rank, entry in enumerate(by_text, start=1):
        hit = fused.get(entry.pk)
        if hit is None:
            fused[entry.pk] = SearchHit(entry, 1 / (RRF_K + rank), _similarity(entry), None, rank)
        else:
            hit.score += 1 / (RRF_K + rank)
            hit.text_rank = rank
    return sorted(fused.values(), key=lambda hit: (-hit.score, -hit.similarity, hit.entry.entry_id))[:limit]


def _similarity(entry: KnowledgeEntry) -> float:
    distance = getattr(entry, "distance", None)
    return 1 - float(distance) if distance is not None else 0.0


def entry_get(*, entry_id: str) -> KnowledgeEntry:
    entry = (
        KnowledgeEntry.objects.select_related("domain", "knowledge_source").filter(entry_id=entry_id).first()
    )
    if entry is None:
        raise NotFound(f"No knowledge entry has the id {entry_id}.", details={"entryId": entry_id})
    return entry


def entries_for_export(*, domain: str | None = None) -> QuerySet[KnowledgeEntry]:
    return (
        KnowledgeEntry.objects.in_domain(domain_check(domain))
        .select_related("domain")
        .order_by(F("entry_id"))
    )


# --- Staleness ---------------------------------------------------------------------------------

# An entry whose last verification is older than this is stale: its source may have moved on (the
# packs' sources, OWASP, NIST and RFCs, are revised every year or two). The pages say this rule.
STALE_AFTER_DAYS = 365


@dataclass(frozen=True)
class Staleness:
    state: str  # "fresh", "stale" or "never" (never verified)
    age_days: int | None
    text: str


def entry_staleness(*, entry: KnowledgeEntry, today: date | None = None) -> Staleness:
    """Whether ``entry`` is stale: never verified, or last verified more than ``STALE_AFTER_DAYS`` ago."""
    if entry.last_verified is None:
        return Staleness("never", None, "Never verified: treat it as stale.")
    today = today or timezone.localdate()
    age = (today - entry.last_verified).days
    if age > STALE_AFTER_DAYS:
        return Staleness("stale", age, f"Stale: last verified {age} days ago (more than {STALE_AFTER_DAYS}).")
    if age < 0:
        return Staleness("fresh", age, "Fresh: verified on a future date (check the pack's date).")
    return Staleness("fresh", age, f"Fresh: last verified {age} day{'s' if age != 1 else ''} ago.")


def domain_names() -> list[str]:
    return list(KnowledgeDomain.objects.order_by("name").values_list("name", flat=True))
