"""Query-string filters of the resource API (``/api/``), parsed before they reach the ORM.

A value the ORM cannot convert (``?run=abc`` for a UUID) would otherwise raise deep inside the
queryset and become a 500. Each helper returns None when the parameter is absent or empty, the
parsed value otherwise, and raises ``InvalidParameter`` (400, ``details.parameter``) naming the
parameter and what it takes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from apps.core.errors import InvalidParameter
from apps.core.text import printable

BOOLEAN_VALUES = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _refuse(name: str, takes: str, value: str) -> InvalidParameter:
    return InvalidParameter(f"?{name}= takes {takes}, not {printable(value)!r}.", details={"parameter": name})


def filter_uuid(params: Mapping[str, str], name: str) -> uuid.UUID | None:
    value = params.get(name)
    if not value:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise _refuse(name, "a UUID", value) from None


def filter_boolean(params: Mapping[str, str], name: str) -> bool | None:
    value = params.get(name)
    if not value:
        return None
    try:
        return BOOLEAN_VALUES[value.lower()]
    except KeyError:
        raise _refuse(name, "true or false", value) from None


def filter_choice(params: Mapping[str, str], name: str, choices: Iterable[str]) -> str | None:
    value = params.get(name)
    if not value:
        return None
    allowed = list(choices)
    if value not in allowed:
        raise _refuse(name, "one of " + ", ".join(allowed), value)
    return value


def filter_whole_number(params: Mapping[str, str], name: str, *, minimum: int, maximum: int) -> int | None:
    """A whole number in ``minimum``–``maximum`` written in plain digits. Present but empty, signed,
    fractional or out of range is refused: a lenient parse would pass a number the database cannot
    take (past bigint) or quietly answer something other than what was asked."""
    if name not in params:
        return None
    value = params[name]
    # Plain ASCII digits only (str.isdigit takes '²' and int() takes ' 1_0 '), and few enough of
    # them that int() stays cheap on a hostile value.
    number = int(value) if value.isascii() and value.isdigit() and len(value) <= 40 else None
    if number is None or not minimum <= number <= maximum:
        raise InvalidParameter(
            f"?{name}= takes a whole number from {minimum} to {maximum}, not {printable(value)[:60]!r}.",
            details={"parameter": name, "minimum": minimum, "maximum": maximum},
        )
    return number
