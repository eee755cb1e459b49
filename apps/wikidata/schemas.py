"""In/Out schemas of /v1/facts/."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Schema
from pydantic import field_validator

from apps.core.schemas import StrictSchema


class FactQueryIn(StrictSchema):
    query: str = Field(..., min_length=2, max_length=512, description="The factual question.")
    topK: int = Field(5, ge=1, le=20)
    scope: Literal["facts", "properties"] = "facts"
    includeSparql: bool = True
    includeDeprecated: bool = Field(False, description="Also rank statements of deprecated rank.")
    language: str = Field("en", pattern=r"^[a-z]{2,3}(-[a-z0-9]{1,8})*$", max_length=16)
    waitSeconds: float = Field(10, ge=0, le=30)

    @field_validator("query")
    @classmethod
    def _query_has_words(cls, value: str) -> str:
        text = " ".join(value.split())
        if len(text) < 2:
            raise ValueError("query must hold at least 2 characters besides spaces")
        return text

    def submit_arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``services.fact_query_submit`` for this request."""
        return {
            "query": self.query,
            "top_k": self.topK,
            "scope": self.scope,
            "include_sparql": self.includeSparql,
            "include_deprecated": self.includeDeprecated,
            "language": self.language,
        }


class FactResultOut(Schema):
    text: str
    score: float
    metadata: dict[str, Any]
    provenanceUrl: str


class FactRunOut(Schema):
    runId: str
    status: Literal["queued", "running", "succeeded", "degraded", "failed"] = Field(
        ...,
        description="degraded: Wikidata could not be reached (or only partly) and the run answered from "
        "stored facts and knowledge entries, perhaps with nothing; degradedReason says why.",
    )
    query: str
    purpose: Literal["question", "verification"] = Field(
        "question", description="verification: made on a claim verification's behalf."
    )
    plan: dict[str, Any]
    degraded: bool
    degradedReason: str | None = None
    answeredFrom: str | None = Field(
        None, description='A degraded run: what it answered from ("4 knowledge entries", "nothing").'
    )
    results: list[FactResultOut] | None = None
    steps: list[dict[str, Any]] | None = None
    durationMs: float | None = None
    error: dict[str, Any] | None = None
    poll: str | None = None
