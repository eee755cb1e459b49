"""In/Out schemas of ``/v1/memory/`` (and of the MCP tools ``tell``, ``ask``, ``memory.forget``,
``memory.export``, which take the same models)."""

from __future__ import annotations

import json
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import field_validator

from apps.core.schemas import JsonUUID, StrictSchema
from apps.memory.models import DOMAIN_PATTERN, SCOPE_NAME_PATTERN
from apps.memory.services import MAX_BATCH, MAX_CONTENT_CHARS, TellItem

MAX_METADATA_BYTES = 16 * 1024
TEN_YEARS_SECONDS = 10 * 365 * 86400

MemoryTypeName = Literal["short_term", "long_term"]


class _Namespace(StrictSchema):
    agent: str | None = Field(
        None, pattern=SCOPE_NAME_PATTERN, description="Agent namespace inside this token's memories."
    )
    session: str | None = Field(None, pattern=SCOPE_NAME_PATTERN, description="Session namespace.")


class TellItemIn(StrictSchema):
    content: str = Field(
        ...,
        min_length=1,
        max_length=MAX_CONTENT_CHARS,
        description="What to remember. Over 8,000 characters it is stored in chunks cut between sentences.",
    )
    domain: str | None = Field(
        None, pattern=DOMAIN_PATTERN, description="A lowercase domain name (e.g. security, travel)."
    )
    type: MemoryTypeName = "short_term"
    metadata: dict[str, Any] = Field(default_factory=dict, description="Any JSON object, up to 16 KB.")
    ttlSeconds: int | None = Field(
        None, ge=1, le=TEN_YEARS_SECONDS, description="Forget it after this many seconds (unless pinned)."
    )
    pinned: bool = Field(False, description="Pinned memories never expire.")
    importance: float = Field(0.5, ge=0.0, le=1.0)
    supersedes: JsonUUID | None = Field(
        None, description="A memory of yours this one replaces: its validity ends now and it links here."
    )

    @field_validator("content")
    @classmethod
    def _content_has_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must hold some text besides spaces")
        return value

    @field_validator("metadata")
    @classmethod
    def _metadata_small(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(json.dumps(value, ensure_ascii=False).encode()) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata must be at most {MAX_METADATA_BYTES} bytes as JSON")
        return value

    def tell_item(self) -> TellItem:
        return TellItem(
            content=self.content,
            domain=self.domain or "",
            type=self.type,
            metadata=self.metadata,
            ttl_seconds=self.ttlSeconds,
            pinned=self.pinned,
            importance=self.importance,
            supersedes=self.supersedes,
        )


class TellIn(TellItemIn, _Namespace):
    """One memory (the seed's ``tell``)."""


class TellBatchIn(_Namespace):
    items: list[TellItemIn] = Field(..., min_length=1, max_length=MAX_BATCH)


class TellChunkOut(Schema):
    id: str
    index: int
    status: Literal["stored", "reinforced"]
    characters: int


class TellOut(Schema):
    id: str = Field(..., description="The memory (its first chunk, when chunked).")
    status: Literal["stored", "reinforced"] = Field(
        ..., description="reinforced: a near-duplicate was already remembered; it was reinforced instead."
    )
    chunks: list[TellChunkOut]
    domain: str | None = None
    type: str
    concepts: list[str]
    supersedes: str | None = None


class TellBatchOut(Schema):
    stored: int
    reinforced: int
    items: list[TellOut]


class AskWeightsIn(StrictSchema):
    domain: float = Field(..., ge=0.0, le=1.0)
    temporal: float = Field(..., ge=0.0, le=1.0)
    semantic: float = Field(..., ge=0.0, le=1.0)
    frequency: float = Field(..., ge=0.0, le=1.0)


class AskIn(_Namespace):
    question: str = Field(..., min_length=2, max_length=2000)
    domain: str | None = Field(
        None, pattern=DOMAIN_PATTERN, description="Memories of this domain rank first."
    )
    type: MemoryTypeName | None = Field(None, description="Only memories of this type.")
    limit: int = Field(10, ge=1, le=50)
    threshold: float | None = Field(
        None, ge=0.0, le=1.0, description="Minimum relevance (default: the admin's, 0.1)."
    )
    includeSuperseded: bool = False
    weights: AskWeightsIn | None = Field(
        None, description="Override the four weights for this call; they must sum to 1."
    )

    @field_validator("question")
    @classmethod
    def _question_has_words(cls, value: str) -> str:
        text = " ".join(value.split())
        if len(text) < 2:
            raise ValueError("question must hold at least 2 characters besides spaces")
        return text

    def ask_arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``answers.ask_result`` for this request (besides the scope)."""
        return {
            "question": self.question,
            "domain": self.domain,
            "memory_type": self.type,
            "limit": self.limit,
            "threshold": self.threshold,
            "include_superseded": self.includeSuperseded,
            "weights": self.weights.model_dump() if self.weights else None,
        }


class AskOut(Schema):
    question: str
    domain: str | None = None
    weights: dict[str, float]
    threshold: float
    memories: list[dict[str, Any]] = Field(
        ..., description="Best first; each with its relevance and the four component scores."
    )
    answer: dict[str, Any] = Field(
        ..., description="{method: extractive|llm|none, text, citations: [{memoryId, …}]}"
    )


class MemoryOut(Schema):
    id: str
    content: str
    domain: str | None = None
    type: str
    concepts: list[str]
    metadata: dict[str, Any]
    importance: float
    accessCount: int
    lastAccessedAt: str | None = None
    decayFactor: float
    createdAt: str
    expiresAt: str | None = None
    pinned: bool
    validFrom: str
    validUntil: str | None = None
    supersededBy: str | None = None
    agent: str | None = None
    session: str | None = None
    shared: bool
    chunk: dict[str, Any] | None = None
    chain: list[str] = Field(default_factory=list, description="Supersession chain, oldest first.")


class ForgetIn(StrictSchema):
    id: JsonUUID
    mode: Literal["fade", "remove"] = Field(
        "fade",
        description="fade: decay to the floor and unpin (still findable, ranked last); remove: delete.",
    )


class ForgetModeIn(StrictSchema):
    mode: Literal["fade", "remove"] = "fade"


class ForgetOut(Schema):
    id: str
    mode: str
    forgotten: bool


class PinIn(StrictSchema):
    pinned: bool = True


class ExportIn(_Namespace):
    format: Literal["turtle", "jsonld"] = "turtle"
    domain: str | None = Field(None, pattern=DOMAIN_PATTERN)


class ExportOut(Schema):
    """An export (the MCP tool ``memory.export``; ``GET /v1/memory/export`` answers the file itself)."""

    format: Literal["turtle", "jsonld"]
    mediaType: str = Field(..., description="text/turtle; charset=utf-8 or application/ld+json.")
    count: int = Field(..., description="Memories in the file.")
    content: str = Field(..., description="The file: Semem's vocabulary plus PROV-O (docs/memory.md).")


class ImportQueryIn(StrictSchema):
    format: Literal["turtle", "jsonld"] | None = Field(
        None, description="The file's format; by default the one its Content-Type names."
    )


class ImportOut(Schema):
    imported: int = Field(..., description="Memories stored.")
    unchanged: int = Field(
        ...,
        description="Memories already among this token's (under their id, or this token's id for it from an "
        "earlier import): left alone.",
    )
    renamed: int = Field(
        ...,
        description="Memories stored under a new id: this token's id for a file id that is not among its "
        "memories (whoever holds it), or a random one for a node that is no UUID.",
    )
    total: int = Field(..., description="Memories in the file.")
    renamedIds: dict[str, str] = Field(
        default_factory=dict, description="The file's id (or node) of each renamed memory -> its new id."
    )
