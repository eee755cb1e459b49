"""Text CortexWeb accepts: no NUL characters, no unpaired surrogates.

Postgres refuses NUL in text columns and a lone surrogate cannot be encoded as UTF-8, so either one
fails deep inside a request (a 500 from the database driver or a JSON renderer). Every edge that
takes text asks the same question here, once, before any work starts: the HTTP middleware
(``apps.core.middleware.UnstorableTextMiddleware``) for paths, query strings and bodies, and the MCP
server for tool arguments.
"""

from __future__ import annotations

import re
from typing import Any

from apps.core.errors import ValidationFailed

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# A sentence ends at . ! or ? before a capital, digit or quote; a line break (with its list marker)
# ends one too.
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+\s*(?:[-*•]\s+|\d+[.)]\s+)?")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (and its list items), stripped, empty ones dropped."""
    return [s.strip(" -*•\t") for s in _SENTENCE_RE.split(text or "") if s and s.strip(" -*•\t")]


def text_problem(value: str) -> str | None:
    """What is wrong with ``value`` as stored text, or None when nothing is."""
    match = _UNSTORABLE.search(value)
    if match is None:
        return None
    return "contains a NUL character" if match.group() == "\x00" else "contains an unpaired surrogate"


def printable(value: str) -> str:
    """``value`` with NUL and surrogates written as ``\\uXXXX``: safe to echo in a message or a path
    (a lone surrogate in a response would fail its UTF-8 encoding)."""
    return _UNSTORABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", value)


def unstorable_paths(value: Any, path: str) -> list[tuple[str, str]]:
    """``(path, problem)`` for every string of a JSON-like ``value`` (dict keys included) that
    :func:`text_problem` refuses, in document order; ``path`` names ``value`` itself.

    Iterative, so a deeply nested document cannot exhaust the stack.
    """
    found: list[tuple[str, str]] = []
    # (path, value, what is wrong with the name it was found under)
    stack: list[tuple[str, Any, str | None]] = [(path, value, None)]
    while stack:
        where, item, name_problem = stack.pop()
        if name_problem:
            found.append((where, f"its name {name_problem}"))
        if isinstance(item, str):
            if problem := text_problem(item):
                found.append((where, problem))
        elif isinstance(item, dict):
            children = [
                (f"{where}.{printable(str(key))}", child, text_problem(str(key)))
                for key, child in item.items()
            ]
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend(reversed([(f"{where}[{index}]", child, None) for index, child in enumerate(item)]))
    return found


# A body can hold many thousands of bad strings; the answer names this many (and counts the rest).
MAX_LISTED = 20


def unstorable_text_error(problems: list[tuple[str, str]]) -> ValidationFailed:
    """The one answer to refused text, naming each field to fix (``details.fields`` as for any
    invalid field; past ``MAX_LISTED`` of them, ``details.unlisted`` counts the others)."""
    listed, unlisted = problems[:MAX_LISTED], len(problems) - MAX_LISTED
    details: dict[str, Any] = {
        "fields": [{"path": path, "message": problem, "type": "unstorable_text"} for path, problem in listed]
    }
    more = ""
    if unlisted > 0:
        details["unlisted"] = unlisted
        more = f" and {unlisted} more"
    return ValidationFailed(
        "Strings may not contain NUL characters or unpaired surrogates; fix: "
        + ", ".join(path for path, _ in listed)
        + more
        + ".",
        details=details,
    )
