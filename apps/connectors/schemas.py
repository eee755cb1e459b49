"""In/Out schemas of the connector endpoints under ``/v1/``."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Schema

from apps.core.schemas import StrictSchema


class ToolOut(Schema):
    name: str
    connector: str
    description: str | None = None
    tags: list[str]
    scopes: list[str]
    inputSchema: dict[str, Any] = Field(
        ...,
        description="JSON Schema of the arguments: the upstream's once synced, a native tool's own, "
        "else the registry's declared one (an open object when none was declared).",
    )


class ToolCallIn(StrictSchema):
    name: str = Field(..., min_length=1, max_length=200, description="Canonical tool name or an alias.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Checked against the input schema.")


class ToolCallOut(Schema):
    tool: str = Field(..., description="The canonical name, whatever name was asked for.")
    upstreamTool: str = Field(..., description="The name the upstream was called with.")
    connector: str
    result: dict[str, Any]
    durationMs: float


class PlanIn(StrictSchema):
    intent: Literal["fact_query", "literature_search"]
    query: str = Field(..., min_length=1, max_length=500)
    scope: Literal["facts", "properties"] | None = Field(None, description="fact_query only; default facts.")


class PlanStepOut(Schema):
    order: int
    tool: str
    connector: str
    purpose: str
    arguments: dict[str, Any]
    optional: bool


class PlanOut(Schema):
    intent: str
    query: str
    scope: str | None = None
    steps: list[PlanStepOut]
