"""In/Out schemas of ``/v1/memory/`` (and of the MCP tools ``tell``, ``ask`` and ``memory.*``, which
take the same models; a tool names the memory in its arguments where REST has it in the path)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from django.utils import timezone
from ninja import Field, Schema
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Strict, field_validator
from pydantic_core import PydanticCustomError

from apps.core.schemas import JsonUUID, StrictSchema
from apps.core.text import text_problem
from apps.memory.models import DOMAIN_PATTERN, SCOPE_NAME_PATTERN
from apps.memory.selectors import MAX_OFFSET, MAX_PAGE, ListFilters
from apps.memory.services import MAX_BATCH, MAX_CONTENT_CHARS, UPDATABLE, TellItem
from apps.memory.text import CHUNK_CHARS

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
    semanticFloor: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Answer only from memories at least this similar in meaning to the question "
        "(cosine similarity; default: the admin's, 0.26, measured in docs/memory.md).",
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
            "semantic_floor": self.semanticFloor,
            "include_superseded": self.includeSuperseded,
            "weights": self.weights.model_dump() if self.weights else None,
        }


class AskOut(Schema):
    question: str
    domain: str | None = None
    weights: dict[str, float]
    threshold: float
    semanticFloor: float = Field(..., description="The similarity a memory needed to be answered from.")
    memories: list[dict[str, Any]] = Field(
        ..., description="Best first; each with its relevance and the four component scores."
    )
    answer: dict[str, Any] = Field(
        ..., description="{method: extractive|llm|none, text, citations: [{memoryId, …}]}"
    )
    reason: str | None = Field(
        None, description='"nothing relevant remembered" when no memory is about the question.'
    )
    nearest: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Only when no memory is relevant: the nearest ones by meaning, most similar first, "
        "not answered from (belowFloor: true when under the semantic floor).",
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
    version: int = Field(1, description="1 as told; one more per update (memory.history lists them).")
    updatedAt: str | None = None
    chain: list[str] = Field(default_factory=list, description="Supersession chain, oldest first.")


class MemoryIdIn(StrictSchema):
    id: JsonUUID = Field(..., description="The memory's id (tell's answer, memory.list).")


_DATE_TIME_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def _text_datetime(value: Any) -> Any:
    # Lax parsing would read a number (or a numeric string) as seconds since 1970 and a bare date as
    # midnight: only an ISO 8601 date-time, as the documents say, is a date-time here.
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _DATE_TIME_TEXT.match(value):
        raise PydanticCustomError(
            "datetime_type", "Input should be an ISO 8601 date-time string, e.g. 2026-01-31T09:00:00Z"
        )
    return value


def _aware(value: datetime) -> datetime:
    # A date-time without an offset is read as UTC (the time zone every stored time is in); one with
    # an offset is converted to UTC, since Postgres refuses offsets past ±15:59 that ISO 8601 allows.
    if timezone.is_naive(value):
        return timezone.make_aware(value, UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("the date-time is out of range once converted to UTC") from None


JsonDateTime = Annotated[datetime, Strict(False), BeforeValidator(_text_datetime), AfterValidator(_aware)]


class ListIn(_Namespace):
    """Filters and page of ``memory.list`` (``GET /v1/memory`` takes them as the query string)."""

    domain: str | None = Field(None, pattern=DOMAIN_PATTERN, description="Only memories of this domain.")
    type: MemoryTypeName | None = Field(None, description="Only memories of this type.")
    pinned: bool | None = Field(None, description="Only pinned (true) or unpinned (false) memories.")
    text: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Only memories whose content contains this text (any case).",
    )
    createdAfter: JsonDateTime | None = Field(
        None, description="Only memories told at or after this ISO 8601 time (UTC without an offset)."
    )
    createdBefore: JsonDateTime | None = Field(None, description="Only memories told before this time.")
    includeSuperseded: bool = Field(False, description="Also the memories a newer one superseded.")
    limit: int = Field(20, ge=1, le=MAX_PAGE, description=f"Memories per page (at most {MAX_PAGE}).")
    offset: int = Field(
        0, ge=0, le=MAX_OFFSET, description="Memories to skip: the previous page's nextOffset."
    )

    @field_validator("text")
    @classmethod
    def _text_storable(cls, value: str | None) -> str | None:
        if value is not None and (problem := text_problem(value)):
            raise ValueError(f"text {problem}")
        return value

    def filters(self) -> ListFilters:
        return ListFilters(
            domain=self.domain or "",
            type=self.type or "",
            pinned=self.pinned,
            text=self.text or "",
            created_after=self.createdAfter,
            created_before=self.createdBefore,
            include_superseded=self.includeSuperseded,
        )


class ListQueryIn(ListIn):
    # A query string is text: ?limit=5 is read as the number, and ?pinned= takes true or false only
    # (lax parsing would also take yes, on, 1, which the document does not offer).
    model_config = ConfigDict(extra="forbid", strict=False)

    @field_validator("pinned", "includeSuperseded", mode="before")
    @classmethod
    def _true_or_false(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in ("true", "false"):
            raise PydanticCustomError("bool_parsing", "Input should be true or false")
        return value


class MemoryListOut(Schema):
    total: int = Field(..., description="Memories matching the filters.")
    limit: int
    offset: int
    nextOffset: int | None = Field(None, description="The next page's offset; null on the last page.")
    memories: list[MemoryOut] = Field(..., description="Newest first.")


class MemoryUpdateIn(StrictSchema):
    """What to change; at least one field. Fields left out stay as they are."""

    content: str | None = Field(
        None,
        min_length=1,
        max_length=CHUNK_CHARS,
        description=f"The new content (at most {CHUNK_CHARS} characters), embedded again.",
    )
    metadata: dict[str, Any] | None = Field(None, description="Replaces the metadata whole (up to 16 KB).")
    importance: float | None = Field(None, ge=0.0, le=1.0)
    domain: str | None = Field(None, pattern=DOMAIN_PATTERN, description="The new domain; null removes it.")

    def changes(self) -> dict[str, Any]:
        """The fields the caller sent (``null`` included: it clears the domain, and is refused elsewhere)."""
        return {name: getattr(self, name) for name in UPDATABLE if name in self.model_fields_set}


class MemoryUpdateToolIn(MemoryUpdateIn, MemoryIdIn):
    """``memory.update``: the memory and what to change."""


class MemoryUpdateOut(MemoryOut):
    changed: list[str] = Field(
        ..., description="The fields the update changed; empty when it sent the stored values (no version)."
    )


class MemoryVersionOut(Schema):
    version: int
    content: str
    domain: str | None = None
    metadata: dict[str, Any]
    importance: float
    validFrom: str
    validUntil: str | None = Field(None, description="When an update replaced it; null for the current one.")
    current: bool


class MemoryHistoryOut(Schema):
    id: str
    version: int = Field(..., description="The current version.")
    versions: list[MemoryVersionOut] = Field(..., description="Oldest first; the current one last.")
    chain: list[str] = Field(
        default_factory=list,
        description="Supersession chain (memories that replaced one another), oldest first.",
    )


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


class PinToolIn(PinIn, MemoryIdIn):
    """``memory.pin``: pinned true pins (it never expires), false unpins."""


class ForgetAllIn(_Namespace):
    confirm: bool = Field(
        False,
        description="Must be true: every memory of this token (in agent/session when given) is removed.",
    )
    domain: str | None = Field(None, pattern=DOMAIN_PATTERN, description="Only the memories of this domain.")


class ForgetAllOut(Schema):
    forgotten: int = Field(..., description="Memories removed.")
    agent: str | None = None
    session: str | None = None
    domain: str | None = None


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
