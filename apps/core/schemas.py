"""Shared ninja schema bases."""

from datetime import date
from typing import Annotated, Any
from uuid import UUID

from ninja import Schema
from pydantic import BeforeValidator, ConfigDict, Strict
from pydantic_core import PydanticCustomError


class StrictSchema(Schema):
    """Input schemas reject unknown fields, so a typo is a 422 naming it, not silently ignored; and
    they take each value only as the JSON type the OpenAPI document states (strict mode): pydantic's
    lax mode would take ``false`` or ``"5"`` for a number and ``0`` or ``"yes"`` for a boolean, which
    the documents say are invalid (issue #23). Integers must be whole JSON numbers without a
    fraction (``5``, not ``5.0``); a number field takes any JSON number.

    Types JSON has no literal for (dates, UUIDs) are written as strings: declare them with
    :data:`JsonDate` and :data:`JsonUUID`, which take their string form (and no number).
    """

    model_config = ConfigDict(extra="forbid", strict=True)


def _text_only(value: Any) -> Any:
    """Refuse a JSON number where the document says string: lax date parsing reads 0 as 1970-01-01."""
    if isinstance(value, int | float):
        raise PydanticCustomError("string_type", "Input should be a valid string")
    return value


JsonDate = Annotated[date, Strict(False), BeforeValidator(_text_only)]
"""A date written ``YYYY-MM-DD`` in JSON (the only input form; a date object from Python code)."""

JsonUUID = Annotated[UUID, Strict(False)]
"""A UUID written as a string in JSON (strict mode takes only UUID objects)."""


def comma_separated(value: str | None) -> list[str]:
    """``?tags=a, b,,c`` → ``["a", "b", "c"]``: the query-string list form every API here accepts."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]
