"""In/Out schemas of /v1/arxiv/ (the seed's input schema, plus categories and dates)."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Schema
from pydantic import model_validator

from apps.core.schemas import JsonDate, StrictSchema

MAX_IDS = 50


class SearchIn(StrictSchema):
    query: str = Field(..., min_length=2, max_length=512)
    start: int = Field(0, ge=0, le=29_999)
    maxResults: int = Field(10, ge=1, le=50)
    sortBy: Literal["relevance", "submittedDate", "lastUpdatedDate"] = "submittedDate"
    sortOrder: Literal["ascending", "descending"] = "descending"
    categories: list[str] = Field(default_factory=list, max_length=20)
    dateFrom: JsonDate | None = None
    dateTo: JsonDate | None = None

    @model_validator(mode="after")
    def _dates_in_order(self) -> SearchIn:
        if self.dateFrom and self.dateTo and self.dateFrom > self.dateTo:
            raise ValueError("dateFrom must not be after dateTo")
        return self


class LookupIn(StrictSchema):
    ids: list[str] = Field(
        ..., min_length=1, max_length=MAX_IDS, description="arXiv ids, with or without version."
    )


class RunOut(Schema):
    runId: str
    status: Literal["queued", "running", "succeeded", "degraded", "failed", "rate_limited"] = Field(
        ...,
        description="degraded: arXiv was down and the search answered from the stored papers "
        "(source: stored), perhaps with none; reason says why.",
    )
    cached: bool | None = None
    source: str | None = None
    brand: str | None = None
    degraded: bool | None = None
    reason: str | None = None
    items: list[dict[str, Any]] | None = None
    totalResults: int | None = None
    start: int | None = None
    itemsPerPage: int | None = None
    nextStart: int | None = None
    poll: str | None = None
    error: dict[str, Any] | None = None
