"""Build arXiv API query parameters from structured input.

The output is a list of ``(key, value)`` pairs in plain text. httpx encodes
them exactly once when it sends the request: spaces reach arXiv as ``+``,
``:`` as ``%3A``, ``[``/``]`` as ``%5B``/``%5D``. Never pre-encode here — a
literal ``+`` would be sent as ``%2B`` and arXiv would read
``submittedDate:[A+TO+B]`` as a malformed range.

Free text (the ``query`` argument) is a small expression language, compiled
to arXiv's ``search_query`` syntax:

* a bare word or ``"quoted phrase"`` is scoped to title or abstract:
  ``graph`` → ``(ti:graph OR abs:graph)``. (arXiv would treat a bare word as
  ``all:``, which also matches authors, comments and journal references; an
  agent asking about "transformers" wants papers about them.) Use ``all:word``
  to search every field;
* ``prefix:word`` / ``prefix:"a phrase"`` with a prefix of
  ``ti au abs co jr cat rn all`` is passed through;
* ``AND``, ``OR``, ``ANDNOT`` (upper case, as arXiv requires) and parentheses
  are passed through; adjacent terms without an operator are joined by
  ``AND`` so every word must match;
* ``submittedDate:[YYYYMMDDHHMM TO YYYYMMDDHHMM]`` (or ``lastUpdatedDate``)
  written in the text is passed through;
* characters that mean something to arXiv's query parser but not to a reader
  (``: + ! ^ ~ * ? \\ { } [ ]`` …) are dropped from words, so ``COVID-19:`` is
  the word ``COVID-19``.

Categories become ``(cat:a OR cat:b)`` and ``dateFrom``/``dateTo`` become
``submittedDate:[YYYYMMDD0000 TO YYYYMMDD2359]`` (GMT, whole days), all
joined with ``AND``. Bad input raises :class:`ValidationFailed` whose details
name the offending field in the API's own (camelCase) vocabulary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

from apps.core.errors import ValidationFailed

FIELD_PREFIXES = ("ti", "au", "abs", "co", "jr", "cat", "rn", "all")
OPERATORS = ("AND", "OR", "ANDNOT")
SORT_BY = ("relevance", "lastUpdatedDate", "submittedDate")
SORT_ORDER = ("ascending", "descending")

DEFAULT_SORT_BY = "submittedDate"  # seed 002
DEFAULT_SORT_ORDER = "descending"
DEFAULT_MAX_RESULTS = 10
MAX_RESULTS_PER_CALL = 2000  # arXiv: at most 2000 per call …
MAX_OFFSET = 30000  # … and start + max_results ≤ 30000, else HTTP 400

# The first and last representable minutes, for a range open on one side.
OPEN_RANGE_START = "199101010000"  # arXiv began in August 1991
OPEN_RANGE_END = "999912312359"

# arXiv identifiers: new style 0704.0001 … 1412.9999, 1501.00001 onwards;
# old style archive(.SUBJECT-CLASS)/YYMMNNN. Either may carry vN.
_NEW_ID = re.compile(r"^(?P<base>\d{4}\.\d{4,5})(?:v(?P<version>[1-9]\d*))?$")
_OLD_ID = re.compile(
    r"^(?P<base>(?P<archive>[a-z]+(?:-[a-z]+)*)(?P<klass>\.[A-Za-z]{2})?/\d{7})(?:v(?P<version>[1-9]\d*))?$",
)
_ID_PREFIX = re.compile(r"^(?:arxiv:|https?://(?:export\.|www\.)?arxiv\.org/(?:abs|pdf)/)", re.IGNORECASE)
_CATEGORY = re.compile(r"^[a-z]+(?:-[a-z]+)*(?:\.[A-Za-z]+(?:-[A-Za-z]+)*)?$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# One token of the free-text language, tried in this order.
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<range>(?:submittedDate|lastUpdatedDate):\[\s*\d{12}\s+TO\s+\d{12}\s*\])
  | (?P<open>\()
  | (?P<close>\))
  | (?:(?P<prefix>[A-Za-z]+):)?"(?P<phrase>[^"]*)"
  | (?P<unterminated>(?:[A-Za-z]+:)?")
  | (?P<word>[^\s()"]+)
    """,
    re.VERBOSE,
)
# Characters kept in a search word; anything else separates words.
_WORD_CHARS = re.compile(r"[\w.\-'/]+")


def _invalid(path: str, message: str, value: Any = None) -> ValidationFailed:
    details: dict[str, Any] = {"fields": [{"path": path, "message": message, "type": "value_error"}]}
    if value is not None:
        details["fields"][0]["value"] = value
    return ValidationFailed(f"{path}: {message}", details=details)


# --- identifiers ----------------------------------------------------------------------


def normalize_arxiv_id(raw: str, *, path: str = "ids") -> str:
    """A well-formed arXiv id, versioned when ``raw`` was, in canonical spelling.

    Accepts ``1706.03762``, ``1706.03762v7``, ``hep-ex/0307015``,
    ``quant-ph/0201082v1`` and ``math.GT/0309136``, with or without an
    ``arXiv:`` or ``https://arxiv.org/abs/`` prefix and surrounding space.
    Only the form is checked (arXiv answers an unknown well-formed id with an
    empty feed). Raises :class:`ValidationFailed` naming the id otherwise.
    """
    if not isinstance(raw, str):
        raise _invalid(path, "an arXiv id must be a string", repr(raw))
    candidate = _ID_PREFIX.sub("", raw.strip())
    candidate = re.sub(r"V(\d+)$", r"v\1", candidate)  # 1706.03762V7
    new = _NEW_ID.match(candidate)
    # 4-digit numbers until 1412, 5-digit from 1501 (arXiv identifier scheme).
    if new and (len(new.group("base")) == 10) == (candidate[:4] >= "1501"):
        return candidate
    archive, slash, rest = candidate.partition("/")
    if slash:
        head, dot, klass = archive.partition(".")
        candidate = f"{head.lower()}{dot}{klass.upper()}/{rest}"
        if _OLD_ID.match(candidate):
            return candidate
    raise _invalid(
        path,
        f"{raw!r} is not an arXiv id (expected e.g. 1706.03762, 1706.03762v7, hep-ex/0307015)",
        raw,
    )


def split_version(arxiv_id: str) -> tuple[str, int | None]:
    """``("1605.08386", 1)`` for ``1605.08386v1``; ``(id, None)`` without a version."""
    match = _NEW_ID.match(arxiv_id) or _OLD_ID.match(arxiv_id)
    if match is None:
        return arxiv_id, None
    version = match.group("version")
    return match.group("base"), int(version) if version else None


def normalize_id_list(ids: Iterable[str]) -> list[str]:
    """Every id normalised, duplicates dropped, order kept."""
    if isinstance(ids, str):
        ids = [part for part in ids.split(",") if part.strip()]
    result: list[str] = []
    for index, raw in enumerate(ids):
        normalised = normalize_arxiv_id(raw, path=f"ids.{index}")
        if normalised not in result:
            result.append(normalised)
    return result


# --- free text --------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return _WORD_CHARS.findall(text)


def _phrase(text: str) -> str:
    return " ".join(text.replace("\\", " ").split())


def _scoped(term: str) -> str:
    return f"(ti:{term} OR abs:{term})"


def _operand_tokens(match: re.Match[str]) -> list[str]:
    """The compiled operand(s) of one word/phrase/prefixed token (possibly none)."""
    prefix, phrase, word = match.group("prefix"), match.group("phrase"), match.group("word")
    if phrase is not None:
        text = _phrase(phrase)
        if not text:
            return []
        if prefix and prefix.lower() in FIELD_PREFIXES:
            return [f'{prefix.lower()}:"{text}"']
        # An unknown prefix is text: `foo:"bar baz"` searches foo and "bar baz".
        return [_scoped(w) for w in _words(prefix or "")] + [_scoped(f'"{text}"')]
    head, colon, value = word.partition(":")
    if colon and head.lower() in FIELD_PREFIXES:
        values = _words(value)
        if not values:
            raise _invalid("query", f"{word!r} names a field but no word to search for", word)
        return [f"{head.lower()}:{values[0]}"] + [_scoped(w) for w in values[1:]]
    return [_scoped(w) for w in _words(word)]


class _Compiler:
    """Turns tokens into arXiv syntax, inserting AND between adjacent operands."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.depth = 0

    def expects_operand(self) -> bool:
        return not self.out or self.out[-1] in OPERATORS or self.out[-1] == "("

    def operand(self, term: str) -> None:
        if not self.expects_operand():
            self.out.append("AND")
        self.out.append(term)

    def operator(self, name: str) -> None:
        if self.expects_operand():
            raise _invalid("query", f"{name} must stand between two search terms")
        self.out.append(name)

    def open(self) -> None:
        self.operand("(")
        self.depth += 1

    def close(self) -> None:
        if self.depth == 0:
            raise _invalid("query", "a closing parenthesis has no opening one")
        if self.expects_operand():
            raise _invalid("query", "parentheses must contain a search term")
        self.out.append(")")
        self.depth -= 1

    def result(self) -> str:
        if self.depth:
            raise _invalid("query", "an opening parenthesis is not closed")
        if self.out and self.out[-1] in OPERATORS:
            raise _invalid("query", f"{self.out[-1]} must stand between two search terms")
        return " ".join(self.out).replace("( ", "(").replace(" )", ")")


def compile_query(text: str) -> str:
    """arXiv ``search_query`` syntax for the free-text language above; ``""`` for no terms."""
    compiler = _Compiler()
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "unterminated":
            raise _invalid("query", "a double quote is not closed")
        if kind == "open":
            compiler.open()
        elif kind == "close":
            compiler.close()
        elif kind == "word" and match.group("word") in OPERATORS:
            compiler.operator(match.group("word"))
        elif kind == "range":
            compiler.operand(" ".join(match.group("range").split()))
        elif kind != "space":
            for term in _operand_tokens(match):
                compiler.operand(term)
    return compiler.result()


# --- filters ----------------------------------------------------------------------------


def normalize_categories(categories: Iterable[str]) -> list[str]:
    result: list[str] = []
    for index, raw in enumerate(categories):
        value = raw.strip() if isinstance(raw, str) else raw
        if not isinstance(value, str) or not _CATEGORY.match(value):
            raise _invalid(
                f"categories.{index}", f"{raw!r} is not an arXiv category (e.g. cs.LG, hep-th)", raw
            )
        if value not in result:
            result.append(value)
    return result


def _as_date(value: date | str | None, path: str) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str) and _ISO_DATE.match(value.strip()):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise _invalid(path, f"{value!r} is not a date (YYYY-MM-DD)", str(value))


def submitted_date_range(date_from: date | str | None, date_to: date | str | None) -> str:
    """``submittedDate:[YYYYMMDD0000 TO YYYYMMDD2359]``; ``""`` when neither date is given.

    Both days are inclusive (00:00 of the first, 23:59 of the last, GMT). A
    missing end is open: 1991-01-01 00:00 or 9999-12-31 23:59.
    """
    first, last = _as_date(date_from, "dateFrom"), _as_date(date_to, "dateTo")
    if first is None and last is None:
        return ""
    if first and last and first > last:
        raise _invalid("dateFrom", f"dateFrom {first.isoformat()} is after dateTo {last.isoformat()}")
    start = f"{first:%Y%m%d}0000" if first else OPEN_RANGE_START
    end = f"{last:%Y%m%d}2359" if last else OPEN_RANGE_END
    return f"submittedDate:[{start} TO {end}]"


def _one_group(expression: str) -> bool:
    """Whether ``expression`` is one parenthesised group, e.g. ``(ti:a OR abs:a)``."""
    depth = 0
    for index, char in enumerate(expression):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return index == len(expression) - 1 and char == ")"
    return False


def build_search_query(
    query: str = "",
    *,
    categories: Iterable[str] = (),
    date_from: date | str | None = None,
    date_to: date | str | None = None,
) -> str:
    """The whole ``search_query``: text AND (categories) AND date range; ``""`` if empty."""
    if not isinstance(query, str):
        raise _invalid("query", "the query must be a string")
    parts = []
    text = compile_query(query)
    if text:
        parts.append(f"({text})" if " " in text and not _one_group(text) else text)
    cats = normalize_categories(categories)
    if cats:
        joined = " OR ".join(f"cat:{cat}" for cat in cats)
        parts.append(f"({joined})" if len(cats) > 1 else joined)
    dates = submitted_date_range(date_from, date_to)
    if dates:
        parts.append(dates)
    if len(parts) == 1 and text:
        return text  # no outer parentheses around a lone text expression
    return " AND ".join(parts)


def _check_int(value: Any, path: str, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(path, "must be an integer", repr(value))
    if not minimum <= value <= maximum:
        raise _invalid(path, f"must be between {minimum} and {maximum}", value)
    return value


def build_search_params(
    *,
    query: str = "",
    categories: Sequence[str] = (),
    date_from: date | str | None = None,
    date_to: date | str | None = None,
    ids: Sequence[str] = (),
    start: int = 0,
    max_results: int = DEFAULT_MAX_RESULTS,
    sort_by: str | None = DEFAULT_SORT_BY,
    sort_order: str | None = DEFAULT_SORT_ORDER,
) -> list[tuple[str, str]]:
    """Query parameters for one arXiv API call, unencoded, in a stable order.

    ``search_query`` and ``id_list`` are omitted when empty (both given →
    the listed articles that also match the query); ``sortBy``/``sortOrder``
    are omitted when ``None``. At least a query, a filter or an id is needed.
    """
    search_query = build_search_query(query, categories=categories, date_from=date_from, date_to=date_to)
    id_list = normalize_id_list(ids)
    if not search_query and not id_list:
        raise _invalid("query", "give a search term, a category, a date range or an arXiv id")
    start = _check_int(start, "start", 0, MAX_OFFSET - 1)
    max_results = _check_int(max_results, "maxResults", 1, MAX_RESULTS_PER_CALL)
    if start + max_results > MAX_OFFSET:
        raise _invalid("start", f"start + maxResults must not exceed {MAX_OFFSET} (arXiv's limit)", start)
    if sort_by is not None and sort_by not in SORT_BY:
        raise _invalid("sortBy", f"must be one of {', '.join(SORT_BY)}", sort_by)
    if sort_order is not None and sort_order not in SORT_ORDER:
        raise _invalid("sortOrder", f"must be one of {', '.join(SORT_ORDER)}", sort_order)

    params: list[tuple[str, str]] = []
    if search_query:
        params.append(("search_query", search_query))
    if id_list:
        params.append(("id_list", ",".join(id_list)))
    params += [("start", str(start)), ("max_results", str(max_results))]
    if sort_by is not None:
        params.append(("sortBy", sort_by))
    if sort_order is not None:
        params.append(("sortOrder", sort_order))
    return params


def build_id_params(ids: Sequence[str]) -> list[tuple[str, str]]:
    """Parameters that fetch exactly these articles (latest version unless one is named).

    ``max_results`` is the number of ids (arXiv's default of 10 would cut a
    longer list); no sort, so arXiv keeps the order of ``id_list``.
    """
    id_list = normalize_id_list(ids)
    if not id_list:
        raise _invalid("ids", "give at least one arXiv id")
    if len(id_list) > MAX_RESULTS_PER_CALL:
        raise _invalid("ids", f"at most {MAX_RESULTS_PER_CALL} ids per call", len(id_list))
    return [("id_list", ",".join(id_list)), ("start", "0"), ("max_results", str(len(id_list)))]
