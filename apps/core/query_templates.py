"""A hot read's SQL compiled once per shape, then run with fresh values.

Compiling a queryset (its select list, joins and WHERE tree) costs Django about as much as Postgres
spends answering an indexed nearest-neighbour query: 1 to 1.5 ms of a 6 ms memory ``ask``
(``bench/memory.py``). For a read whose SQL depends on a few flags (is an agent given? a domain?) but
not on the values, ``QueryTemplate`` calls ``build`` once per shape with a marker in place of each
value, compiles the queryset, and records where each marker landed among the parameters; a run puts
the real values in those places and applies the columns' converters, as the ORM would.

A marker must reach the parameters unchanged, so values are passed to ``build`` as the database sees
them (a foreign key's id, a vector's text, a datetime), not as objects the ORM would convert; a
string marker that was changed on its way (``__icontains`` wraps it in ``%``) is refused when the shape
is compiled, never guessed at.
``tests/core/test_query_templates.py`` compares filled templates with freshly compiled querysets.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet

# Far outside what any column holds, so a marker cannot be mistaken for a constant of the query.
_INT_MARKER_BASE = -(2**62)
_DATETIME_MARKER_BASE = datetime(1, 1, 1, tzinfo=UTC)
_STR_MARKER = "\x1fquery-template-value-"


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, str], ...]  # (position among the parameters, value name)
    converters: dict[int, tuple[list[Any], Any]]


class QueryTemplate:
    """``build(**values)`` returns a queryset evaluated as rows (``values_list``); ``kinds`` names each
    value's type (``int``, ``str`` or ``datetime``): its marker is made of that type."""

    def __init__(self, build: Callable[..., QuerySet[Any]], *, kinds: Mapping[str, type]) -> None:
        unknown = {name: kind for name, kind in kinds.items() if kind not in (int, str, datetime)}
        if unknown:
            raise TypeError(f"QueryTemplate values must be int, str or datetime, not {unknown}")
        self.build = build
        self.kinds = dict(kinds)
        self._compiled: dict[Hashable, _Compiled] = {}

    def sql_with_params(self, *, shape: Hashable, values: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]]:
        return self._filled(self._compile(shape), values)

    @staticmethod
    def _filled(compiled: _Compiled, values: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]]:
        params = list(compiled.params)
        for position, name in compiled.slots:
            params[position] = values[name]
        return compiled.sql, tuple(params)

    def rows(
        self, *, shape: Hashable, values: Mapping[str, Any], using: str = DEFAULT_DB_ALIAS
    ) -> list[tuple[Any, ...]]:
        """The rows, each value converted as ``values_list`` would have converted it."""
        compiled = self._compile(shape)
        sql, params = self._filled(compiled, values)
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if not compiled.converters:
            return rows
        return list(self._converted(rows, compiled.converters, connection))

    @staticmethod
    def _converted(
        rows: list[tuple[Any, ...]], converters: dict[int, tuple[list[Any], Any]], connection: Any
    ) -> Iterator[tuple[Any, ...]]:
        for row in rows:
            values = list(row)
            for position, (functions, expression) in converters.items():
                for function in functions:
                    values[position] = function(values[position], expression, connection)
            yield tuple(values)

    def _compile(self, shape: Hashable) -> _Compiled:
        compiled = self._compiled.get(shape)
        if compiled is not None:
            return compiled
        markers = {name: self._marker(kind, index) for index, (name, kind) in enumerate(self.kinds.items())}
        queryset = self.build(shape=shape, **markers)
        compiler = queryset.query.get_compiler(queryset.db)
        sql, params = compiler.as_sql()
        by_marker = {marker: name for name, marker in markers.items()}
        slots = tuple(
            (position, by_marker[param])
            for position, param in enumerate(params)
            if _is_marker(param, by_marker)
        )
        changed = [
            param for param in params if _STR_MARKER in str(param) and not _is_marker(param, by_marker)
        ]
        if changed:
            raise ValueError(
                f"QueryTemplate: a value was changed on its way to the parameters in shape {shape!r} "
                f"({changed[0]!r}); pass it as the database sees it"
            )
        converters = compiler.get_converters([column for column, _, _ in compiler.select])
        compiled = _Compiled(sql=sql, params=tuple(params), slots=slots, converters=converters)
        self._compiled[shape] = compiled
        return compiled

    @staticmethod
    def _marker(kind: type, index: int) -> Any:
        if kind is int:
            return _INT_MARKER_BASE + index
        if kind is datetime:
            return _DATETIME_MARKER_BASE + timedelta(microseconds=index + 1)
        return f"{_STR_MARKER}{index}\x1f"


def _is_marker(param: Any, by_marker: Mapping[Any, str]) -> bool:
    if isinstance(param, bool):
        return False
    try:
        return param in by_marker
    except TypeError:  # an unhashable parameter (a list for ``__in``) is never a marker
        return False
