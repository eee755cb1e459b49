"""In/Out schemas of the connector endpoints under ``/v1/``."""

from __future__ import annotations

from typing import Any

from ninja import Field, Schema


class ToolOut(Schema):
    name: str
    connector: str
    description: str | None = None
    tags: list[str]
    scopes: list[str]
    inputSchema: dict[str, Any] | None = Field(None, description="JSON Schema of the arguments, when known.")
