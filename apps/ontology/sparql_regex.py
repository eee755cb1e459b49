"""SPARQL's ``REGEX`` and ``REPLACE`` on RE2, a regular-expression engine without backtracking:
matching takes time linear in the text whatever the pattern, so ``^(a+)+$`` cannot stall an
evaluation (rdflib's own operators call Python's backtracking ``re``).

RE2 has no backreferences and no look-around: a pattern using them is refused, a constant one when
the query is validated (``pattern_problems``), a computed one as a SPARQL error of its expression
(a ``FILTER`` is then false, a ``BIND`` unbound). Flags are XPath's (``fn:matches``) ``i``, ``s``
and ``m``; ``x`` and ``q`` are not supported. A ``REPLACE`` result is capped at
:data:`MAX_RESULT_CHARS` characters, so nested replacements cannot grow a string without bound.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from types import MethodType
from typing import Any

import re2
from rdflib import Literal
from rdflib.plugins.sparql.operators import string
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import SPARQLError

SUPPORTED_FLAGS = frozenset("ism")
MAX_RESULT_CHARS = 1_000_000
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every refused pattern to stderr


class PatternError(ValueError):
    """A pattern, flag or replacement RE2 (or XPath) does not accept; the message says which."""


@functools.lru_cache(maxsize=128)
def compiled(pattern: str, flags: str) -> Any:
    """``pattern`` with XPath ``flags`` compiled by RE2 (cached: a FILTER compiles once per query)."""
    unsupported = sorted(set(flags) - SUPPORTED_FLAGS)
    if unsupported:
        raise PatternError(f"regex flag {''.join(unsupported)!r} is not supported (only i, s and m)")
    inline = f"(?{''.join(sorted(set(flags)))})" if flags else ""
    try:
        return re2.compile(inline + pattern, _OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "invalid"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(
            f"regex {pattern!r} is not supported: {reason} (the RE2 syntax has no backreferences or "
            "look-around)"
        ) from None


def replacement_template(replacement: str) -> str:
    """XPath's replacement string (``$N`` a group, ``\\$`` and ``\\\\`` escapes) as RE2's."""
    out: list[str] = []
    index = 0
    while index < len(replacement):
        char = replacement[index]
        if char == "\\":
            following = replacement[index + 1 : index + 2]
            if following not in ("\\", "$"):
                raise PatternError("in a REPLACE replacement, \\ must be followed by \\ or $")
            out.append("\\\\" if following == "\\" else "$")
            index += 2
        elif char == "$":
            end = index + 1
            while end < len(replacement) and replacement[end].isdigit():
                end += 1
            if end == index + 1:
                raise PatternError("in a REPLACE replacement, $ must be followed by a group number")
            out.append(f"\\g<{replacement[index + 1 : end]}>")
            index = end
        else:
            out.append(char)
            index += 1
    return "".join(out)


def builtin_regex(expr: Any, ctx: Any) -> Literal:
    """``REGEX(text, pattern[, flags])`` (rdflib's ``Builtin_REGEX`` with RE2)."""
    text, pattern = string(expr.text), string(expr.pattern)
    try:
        regex = compiled(str(pattern), str(expr.flags or ""))
    except PatternError as error:
        raise SPARQLError(str(error)) from None
    return Literal(regex.search(str(text)) is not None)


def builtin_replace(expr: Any, ctx: Any) -> Literal:
    """``REPLACE(text, pattern, replacement[, flags])`` (rdflib's ``Builtin_REPLACE`` with RE2)."""
    text, pattern, replacement = string(expr.arg), string(expr.pattern), string(expr.replacement)
    try:
        regex = compiled(str(pattern), str(expr.flags or ""))
        result = regex.sub(replacement_template(str(replacement)), str(text))
    except (PatternError, IndexError, re2.error) as error:
        raise SPARQLError(f"REPLACE: {error}") from None
    if len(result) > MAX_RESULT_CHARS:
        raise SPARQLError(f"REPLACE made a string longer than {MAX_RESULT_CHARS} characters")
    return Literal(result, datatype=text.datatype, lang=text.language)


_OPERATORS = {"Builtin_REGEX": builtin_regex, "Builtin_REPLACE": builtin_replace}


def use_re2(nodes: Iterable[Any]) -> None:
    """Point every REGEX and REPLACE expression among ``nodes`` (a walk of the algebra) at RE2."""
    for node in nodes:
        if isinstance(node, CompValue) and node.name in _OPERATORS and getattr(node, "_evalfn", None):
            node._evalfn = MethodType(_OPERATORS[node.name], node)


def pattern_problems(nodes: Iterable[Any]) -> list[str]:
    """Why each constant pattern, flag set or replacement among ``nodes`` (a walk of the algebra,
    where constants are literals) cannot run, before anything is evaluated."""
    problems: list[str] = []
    for node in nodes:
        if not (isinstance(node, CompValue) and node.name in _OPERATORS):
            continue
        # Attribute access: CompValue answers None for a missing argument (``get`` its name).
        pattern, flags, replacement = node.pattern, node.flags, node.replacement
        try:
            regex = None
            if isinstance(pattern, Literal) and (flags is None or isinstance(flags, Literal)):
                regex = compiled(str(pattern), str(flags or ""))
            if isinstance(replacement, Literal):
                template = replacement_template(str(replacement))
                groups = [int(number) for number in re2.findall(r"\\g<(\d+)>", template)]
                if regex is not None and groups and max(groups) > regex.groups:
                    raise PatternError(
                        f"the replacement names group ${max(groups)}; the pattern has {regex.groups}"
                    )
        except PatternError as error:
            problems.append(f"{node.name.removeprefix('Builtin_')}: {error}.")
    return problems
