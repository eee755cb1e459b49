"""Shared ninja schema bases."""

from ninja import Schema
from pydantic import ConfigDict


class StrictSchema(Schema):
    """Input schemas reject unknown fields, so a typo is a 422 naming it, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


def comma_separated(value: str | None) -> list[str]:
    """``?tags=a, b,,c`` → ``["a", "b", "c"]``: the query-string list form every API here accepts."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]
