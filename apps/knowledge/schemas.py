"""In/Out schemas of ``/v1/knowledge/search`` (``/v1/knowledge/verify``'s live with its router)."""

from __future__ import annotations

from typing import Any

from ninja import Field, Schema

from apps.core.schemas import StrictSchema


class KnowledgeSearchIn(StrictSchema):
    query: str = Field(..., min_length=2, max_length=1000)
    domain: str | None = Field(None, max_length=64, description="Only this domain (security, …).")
    limit: int = Field(10, ge=1, le=50)


class KnowledgeSearchOut(Schema):
    query: str
    domain: str | None = None
    results: list[dict[str, Any]]
