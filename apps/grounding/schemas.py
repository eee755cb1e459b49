"""In/Out schemas of ``/v1/knowledge/verify`` and ``/v1/grounding/ground`` (and their MCP twins)."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Schema

from apps.core.schemas import StrictSchema


class VerifyIn(StrictSchema):
    claim: str = Field(
        ..., max_length=2000, description="One claim, e.g. 'Passwords must be hashed with MD5'."
    )
    domain: str | None = Field(
        None, max_length=64, description="Check against this domain; routed by keywords if absent."
    )


class JudgeOut(Schema):
    """Who decided the verdict and on what (docs/grounding.md)."""

    name: Literal["local", "nli", "llm", "review"] = Field(
        ...,
        description="The judge that decided: review is an operator's reviewed verdict on the same claim "
        "(review memory, docs/grounding.md).",
    )
    basis: str = Field(..., description="What the verdict rests on, as the calibration counts it.")
    restsOn: str = Field(..., description="The evidence sentence or signal the verdict rests on.")
    confidenceNote: str = Field(..., description="Why the confidence is not higher.")
    note: str | None = Field(None, description="A model judge that failed or was skipped, and who decided.")
    latencyMs: float | None = Field(None, description="The model judge's own time.")


class VerificationOut(Schema):
    claim: str
    verified: bool
    confidence: float
    sources: list[dict[str, Any]]
    correction: str | None = None
    related_entries: list[str]
    verdict: Literal["supported", "contradicted", "unverified"]
    domain: str | None = None
    signals: list[dict[str, str]] | None = None
    wikidata: list[dict[str, Any]] | None = Field(None, description="Wikidata statements cited.")
    verificationId: int
    judge: JudgeOut
    degraded: bool = Field(
        False, description="A source the verification asked (Wikidata) could not be reached (degradedReason)."
    )
    degradedReason: str | None = Field(None, description="Why the source could not be reached.")
    sourcesNote: str | None = Field(
        None, description="What asking Wikidata came to, when the claim (naming an entity) was put to it."
    )
    factRunId: str | None = Field(None, description="The fact run made on this verification's behalf.")
    leaning: Literal["supported", "contradicted", "none"] = Field(
        "none",
        description="For an unverified claim: the verdict the evidence points to without deciding it "
        "(similarity alone, or a basis the calibration did not earn); none for a decided claim.",
    )
    leaningOn: str | None = Field(None, description="What the leaning rests on: the entry and its sentence.")


class GroundIn(StrictSchema):
    message: str = Field(..., max_length=20_000)
    messageId: str | None = Field(None, max_length=200)
    mode: Literal["automatic", "on_request", "on_detection"] | None = None


class GroundingMessageOut(Schema):
    type: Literal["grounding"]
    id: str
    original_message_id: str | None = None
    mode: str
    verifications: list[VerificationOut]
    injected_knowledge: list[dict[str, str]]
    summary: str
    latencyMs: float
