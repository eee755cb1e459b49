"""Shared ninja schema bases."""

from ninja import Schema
from pydantic import ConfigDict


class StrictSchema(Schema):
    """Input schemas reject unknown fields, so a typo is a 422 naming it, not silently ignored."""

    model_config = ConfigDict(extra="forbid")
