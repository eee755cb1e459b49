"""The Wikidata Query Service client: read-only SPARQL with typed JSON results.

Requests (external-apis.md §3): ``GET {WIKIDATA_SPARQL_URL}?query=…&format=json`` with
``Accept: application/sparql-results+json``; a query whose encoded form is longer than
:data:`MAX_GET_QUERY_BYTES` goes as ``POST`` with a form body (``query=…``; ``format=json`` stays
in the URL). GET is preferred because WDQS caches GET results for 5 minutes.

Timeouts: the reference names no server-side timeout parameter, only WDQS's hard 60 s limit,
so none is sent; the per-query bound is the client's read timeout (``timeout=`` on
:meth:`SparqlClient.select`, else ``WIKIDATA_SPARQL_TIMEOUT_SECONDS``, else the project's).

Results (:class:`SparqlResult`) keep the query text, the endpoint, ``vars`` and rows as dicts
``var → SparqlValue``. Unbound variables are absent from their row. A literal's ``python``
is its value converted by datatype (integers → ``int``, ``xsd:decimal`` → ``Decimal``,
``xsd:double``/``xsd:float`` → ``float``, ``xsd:boolean`` → ``bool``, ``xsd:dateTime`` →
``datetime`` when Python can represent it — Wikidata has BCE and year-0 dates it cannot, which
stay strings; ``value`` always keeps the lexical form), language-tagged literals carry ``lang``,
URIs and blank nodes (WDQS uses them for "unknown value") keep their string.

Failures become :class:`~apps.core.errors.UpstreamError`:

* retryable — HTTP 429 (``retry_after`` from ``Retry-After``; WDQS bans clients that ignore it),
  other 5xx, timeouts, connection errors;
* terminal — 400 (the query was refused, usually ``MalformedQueryException``: the server's
  message is kept), a 500 whose body is WDQS's ``TimeoutException`` (the query itself is too
  expensive: retrying costs the 60 s-per-minute budget again and fails again), 403 (usually the
  User-Agent policy), any other status, a body that is not SPARQL JSON results.

**Read-only.** :func:`ensure_read_only` runs before every request; it refuses SPARQL Update
(see its docstring) with :class:`~apps.core.errors.ValidationFailed` naming the keyword.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlencode

import httpx
from django.conf import settings

from apps.core.errors import UpstreamError, ValidationFailed
from apps.core.http import build_client, parse_retry_after, timeout_before
from apps.core.logging import get_logger
from apps.wikidata.statements import ITEM_ID_RE, PROPERTY_ID_RE, entity_id_pattern

DEFAULT_SPARQL_URL = "https://query.wikidata.org/sparql"
UPSTREAM = "wikidata-query-service"
LIMITER_NAME = "wikidata_sparql"
NAME = "the Wikidata Query Service"  # in messages
RESULTS_MEDIA_TYPE = "application/sparql-results+json"
# Queries longer than this (URL-encoded) are POSTed: URLs past ~8 KB are refused by some proxies,
# and a margin keeps the whole request line well under that.
MAX_GET_QUERY_BYTES = 2000
MAX_QUERY_LENGTH = 100_000
# Budget for the shared limiter (external-apis.md §3): WDQS allows 60 s of query time per minute
# and 30 errors per minute per User-Agent + IP, and asks for one query at a time. One request per
# second across every process (burst 1); callers should also hold a ConnectionLock(LIMITER_NAME)
# so only one query runs at a time.
DEFAULT_INTERVAL_SECONDS = 1.0
DEFAULT_BURST = 1
WDQS_HARD_TIMEOUT_SECONDS = 60.0

XSD = "http://www.w3.org/2001/XMLSchema#"
WD_ENTITY = "http://www.wikidata.org/entity/"
WD_STATEMENT = "http://www.wikidata.org/entity/statement/"

logger = get_logger(__name__)

Gate = Callable[[], AbstractContextManager[object]]


# ---------------------------------------------------------------------------------------------- settings


def sparql_url() -> str:
    """``WIKIDATA_SPARQL_URL``, the full endpoint (…/sparql); the one place that reads it."""
    return str(getattr(settings, "WIKIDATA_SPARQL_URL", DEFAULT_SPARQL_URL))


def sparql_timeout() -> float | None:
    """``WIKIDATA_SPARQL_TIMEOUT_SECONDS`` (read timeout per query) or ``None`` for the project default."""
    value = getattr(settings, "WIKIDATA_SPARQL_TIMEOUT_SECONDS", None)
    return float(value) if value is not None else None


def sparql_budget() -> tuple[float, int]:
    """``(interval seconds, burst)`` for ``RateLimiter(LIMITER_NAME, interval=..., burst=...)``, from
    ``WIKIDATA_SPARQL_INTERVAL_SECONDS`` and ``WIKIDATA_SPARQL_BURST``."""
    interval = float(getattr(settings, "WIKIDATA_SPARQL_INTERVAL_SECONDS", DEFAULT_INTERVAL_SECONDS))
    burst = int(getattr(settings, "WIKIDATA_SPARQL_BURST", DEFAULT_BURST))
    return interval, burst


# ------------------------------------------------------------------------------------------- read-only

QUERY_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})
UPDATE_KEYWORDS = frozenset(
    {"INSERT", "DELETE", "LOAD", "CLEAR", "CREATE", "DROP", "COPY", "MOVE", "ADD", "WITH"}
)
_UPDATE_OPERATIONS = {
    "InsertData": "INSERT DATA",
    "DeleteData": "DELETE DATA",
    "DeleteWhere": "DELETE WHERE",
    "Modify": "DELETE/INSERT",
    "Load": "LOAD",
    "Clear": "CLEAR",
    "Drop": "DROP",
    "Create": "CREATE",
    "Add": "ADD",
    "Move": "MOVE",
    "Copy": "COPY",
}

# One SPARQL token at a time, longest alternatives first. Strings, IRIs, comments, variables,
# prefixed names, language tags and blank-node labels are consumed whole, so only bare words
# (keywords, function names, ``a``, ``true``) and punctuation are left to look at.
_TOKEN_RE = re.compile(
    r"""
      (?P<comment>\#[^\n\r]*)
    | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
                 |'(?:[^'\\\n\r]|\\.)*'|"(?:[^"\\\n\r]|\\.)*")
    | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
    | (?P<var>[?$][\w\u00b7]+)
    | (?P<langtag>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
    | (?P<pname>(?:[^\W\d][\w.\-]*)?:(?:[\w:%\\\-]|\.(?=[\w:%\\\-]))*)
    | (?P<bnode>_:[\w.\-]+)
    | (?P<word>[^\W\d]\w*)
    | (?P<number>\d[\w.]*)
    | (?P<space>\s+)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPE_RE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")

# rdflib's parser (pyparsing) keeps a global packrat cache; calls are serialised.
_PARSER_LOCK = threading.Lock()


def _expand_codepoint_escapes(text: str) -> str:
    """SPARQL's ``\\uXXXX``/``\\UXXXXXXXX`` escapes, which the grammar applies before tokenising."""

    def replace(match: re.Match[str]) -> str:
        code = int(match.group(1) or match.group(2), 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else match.group(0)

    return _ESCAPE_RE.sub(replace, text)


def _words(query: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of the significant tokens: bare words upper-cased, and punctuation."""
    tokens: list[tuple[str, str]] = []
    for match in _TOKEN_RE.finditer(query):
        kind = match.lastgroup or "other"
        if kind in {"comment", "space"}:
            continue
        text = match.group(0)
        tokens.append((kind, text.upper() if kind == "word" else text))
    return tokens


def _lexical_verdict(query: str) -> tuple[str | None, str | None]:
    """``(query form, update keyword)`` found by the tokenizer (either may be ``None``)."""
    tokens = _words(query)
    form: str | None = None
    for kind, text in tokens:
        if kind == "word" and text in {"BASE", "PREFIX"}:
            continue
        if kind in {"pname", "iri"} and form is None:
            continue  # the prologue's prefix names and IRIs
        form = text if kind == "word" else ""
        break
    for index, (kind, text) in enumerate(tokens):
        if kind != "word" or text not in UPDATE_KEYWORDS:
            continue
        following = tokens[index + 1][1] if index + 1 < len(tokens) else ""
        if text == "WITH" and following == "{":
            # Blazegraph's named subquery: SELECT … WITH { SELECT … } AS %name WHERE { INCLUDE %name }
            continue
        return form or None, text
    return form or None, None


def _rdflib_update_operation(query: str) -> str | None:
    """The first operation if rdflib's SPARQL 1.1 *Update* grammar accepts the text, else ``None``.

    Cheap for queries: the Update grammar fails at the first query keyword after the prologue.
    """
    from pyparsing import ParseException
    from rdflib.plugins.sparql.parser import parseUpdate

    with _PARSER_LOCK:
        try:
            update = parseUpdate(query)
        except (ParseException, ValueError):
            return None
    operations = [str(getattr(op, "name", "")) for op in getattr(update, "request", None) or []]
    if not operations:
        return None  # a prologue alone
    return _UPDATE_OPERATIONS.get(operations[0], operations[0].upper())


def _rdflib_query_form(query: str) -> str | None:
    """``SELECT``/``ASK``/``CONSTRUCT``/``DESCRIBE`` if rdflib's *Query* grammar accepts the text
    (exactly one query, nothing after it), else ``None``. Costs ~10 ms, so it only arbitrates."""
    from pyparsing import ParseException
    from rdflib.plugins.sparql.parser import parseQuery

    with _PARSER_LOCK:
        try:
            parsed = parseQuery(query)
        except (ParseException, ValueError):
            return None
    return str(getattr(parsed[1], "name", "")).removesuffix("Query").upper() or None


# ``SERVICE`` sends part of a query to another endpoint (SPARQL 1.1 Federated Query): from WDQS
# to wherever the IRI says, and from a local rdflib graph (the ontology tools) to it straight
# from this process. Only WDQS's own services, evaluated inside WDQS, are let through.
WDQS_PREFIXES = {"wikibase": "http://wikiba.se/ontology#", "bd": "http://www.bigdata.com/rdf#"}
WDQS_INTERNAL_SERVICES = frozenset(
    {
        "http://wikiba.se/ontology#label",  # labels (SERVICE wikibase:label { … })
        "http://wikiba.se/ontology#mwapi",  # MediaWiki API search, run by WDQS
        "http://wikiba.se/ontology#around",  # geospatial search
        "http://wikiba.se/ontology#box",
        "http://www.bigdata.com/rdf#sample",  # sampling
        "http://www.bigdata.com/rdf#slice",
    }
)


def _service_target(token: tuple[str, str], prefixes: Mapping[str, str]) -> str:
    kind, text = token
    if kind == "iri":
        return text[1:-1]
    if kind == "pname":
        prefix, _, local = text.partition(":")
        return prefixes[prefix] + local if prefix in prefixes else text
    return text or "(nothing)"


def _declared_prefixes(tokens: Sequence[tuple[str, str]]) -> dict[str, str]:
    """WDQS's predeclared service prefixes, overridden by the query's own ``PREFIX`` declarations."""
    prefixes = dict(WDQS_PREFIXES)
    for index in range(len(tokens) - 2):
        (kind, text), (name_kind, name), (iri_kind, iri) = tokens[index : index + 3]
        if kind == "word" and text == "PREFIX" and name_kind == "pname" and iri_kind == "iri":
            prefixes[name.partition(":")[0]] = iri[1:-1]
    return prefixes


def _lexical_services(tokens: Sequence[tuple[str, str]], prefixes: Mapping[str, str]) -> list[str]:
    """The target of every ``SERVICE [SILENT] <target>`` the tokenizer sees (bare words only, so the
    word in a string, IRI, comment or variable name is not one)."""
    targets = []
    for index, (kind, text) in enumerate(tokens):
        if kind != "word" or text != "SERVICE":
            continue
        following = tokens[index + 1 : index + 3]
        if following and following[0] == ("word", "SILENT"):
            following = following[1:]
        targets.append(_service_target(following[0], prefixes) if following else "(nothing)")
    return targets


def _rdflib_services(query: str, prefixes: Mapping[str, str]) -> list[str]:
    """The targets of the ``ServiceGraphPattern`` nodes of rdflib's parse (none if it cannot parse)."""
    from pyparsing import ParseException, ParseResults
    from rdflib.plugins.sparql.parser import parseQuery
    from rdflib.plugins.sparql.parserutils import CompValue
    from rdflib.term import Variable

    with _PARSER_LOCK:
        try:
            parsed = parseQuery(query)
        except (ParseException, ValueError):
            return []
    targets: list[str] = []
    pending: list[Any] = [parsed]
    while pending:
        node = pending.pop()
        if isinstance(node, CompValue):
            if node.name == "ServiceGraphPattern":
                term = node.get("term")
                if isinstance(term, CompValue) and term.name == "pname":
                    prefix, local = str(term.get("prefix") or ""), str(term.get("localname") or "")
                    targets.append(prefixes[prefix] + local if prefix in prefixes else f"{prefix}:{local}")
                elif isinstance(term, Variable):
                    targets.append(f"?{term}")
                else:
                    targets.append(str(term))
            pending.extend(node.values())
        elif isinstance(node, ParseResults | list | tuple):
            pending.extend(node)
    return targets


@functools.lru_cache(maxsize=256)
def _services(query: str) -> tuple[str, ...]:
    """Every ``SERVICE`` target of ``query``, as the tokenizer and (when the word occurs at all)
    rdflib's Query grammar see them: a target either finds is a target."""
    tokens = _words(query)
    prefixes = _declared_prefixes(tokens)
    targets = _lexical_services(tokens, prefixes)
    if re.search("service", query, re.IGNORECASE):
        targets += _rdflib_services(query, prefixes)
    return tuple(dict.fromkeys(targets))


MAX_CACHED_QUERY_LENGTH = 8000


@functools.lru_cache(maxsize=256)
def _cached_verdict(query: str) -> tuple[str | None, str | None]:
    return _uncached_verdict(query)


def _verdict(query: str) -> tuple[str | None, str | None]:
    """Short queries are cached: they repeat (the workflow's templates) and a parse costs milliseconds."""
    return _cached_verdict(query) if len(query) <= MAX_CACHED_QUERY_LENGTH else _uncached_verdict(query)


def _uncached_verdict(query: str) -> tuple[str | None, str | None]:
    form, keyword = _lexical_verdict(query)
    operation = _rdflib_update_operation(query)
    if operation:
        # rdflib names the operation ("INSERT DATA", "DELETE WHERE", …); for DELETE/INSERT with
        # WITH the tokenizer's first keyword says more.
        return form, (keyword or operation) if operation == "DELETE/INSERT" else operation
    if keyword or form not in QUERY_FORMS:
        # The tokenizer objects; if the Query grammar accepts the text it is one query and nothing
        # else (an update word in a place the tokenizer misread). Prefixes are not resolved while
        # parsing, so WDQS's predeclared wd:, wdt:, p:, … need no declarations.
        grammar_form = _rdflib_query_form(query)
        if grammar_form in QUERY_FORMS:
            return grammar_form, None
    return form, keyword


def ensure_read_only(query: str, *, allowed_services: frozenset[str] = WDQS_INTERNAL_SERVICES) -> str:
    """The query form (``SELECT``, ``ASK``, ``CONSTRUCT`` or ``DESCRIBE``) of a read-only query.

    Anything else raises :class:`ValidationFailed` naming what was found. The checks, on the text
    as written and with SPARQL's ``\\u`` escapes expanded (the grammar expands them first):

    1. a tokenizer that skips strings, IRIs, comments, variables, prefixed names, blank-node
       labels and language tags looks for the update keywords (INSERT, DELETE, LOAD, CLEAR,
       CREATE, DROP, COPY, MOVE, ADD, WITH — except Blazegraph's ``WITH {`` named subquery), and
       for the first word after the ``PREFIX``/``BASE`` prologue, which must be a query form;
    2. rdflib's SPARQL 1.1 Update grammar (``parseUpdate``, ~1 ms): text it accepts is refused,
       naming the operation, whatever the tokenizer thought;
    3. when the tokenizer objects, rdflib's Query grammar (``parseQuery``, ~10 ms) arbitrates: text
       it accepts is exactly one query, so it is allowed (no false refusals for odd names).

    A query rdflib cannot parse but that passes 1 and 2 (e.g. with Blazegraph extensions such as
    named subqueries) is let through: WDQS is the judge of its syntax (a 400, terminal). Verdicts
    for queries up to :data:`MAX_CACHED_QUERY_LENGTH` characters are cached.

    Federated queries are refused too: every ``SERVICE`` target — found by the same tokenizer
    (``PREFIX`` declarations applied) and by rdflib's Query grammar — must be one of
    ``allowed_services`` (WDQS's own label, MWAPI, geospatial and sampling services by default;
    a local graph passes an empty set). A variable or unknown prefix is never allowed.
    """
    if not isinstance(query, str) or not query.strip():
        raise ValidationFailed("the SPARQL query is empty", details={"field": "query"})
    if len(query) > MAX_QUERY_LENGTH:
        raise ValidationFailed(
            f"the SPARQL query is longer than {MAX_QUERY_LENGTH} characters", details={"field": "query"}
        )
    forms: list[str | None] = []
    for text in dict.fromkeys([query, _expand_codepoint_escapes(query)]):
        form, keyword = _verdict(text)
        if keyword:
            raise ValidationFailed(
                f"only read-only SPARQL queries are allowed; found the update keyword {keyword}",
                details={"field": "query", "keyword": keyword},
            )
        forms.append(form)
    form = forms[0]
    if form not in QUERY_FORMS or any(other != form for other in forms):
        raise ValidationFailed(
            "only SPARQL SELECT, ASK, CONSTRUCT or DESCRIBE queries are allowed"
            + (f"; found {form}" if form else ""),
            details={"field": "query", "keyword": form or ""},
        )
    for text in dict.fromkeys([query, _expand_codepoint_escapes(query)]):
        services = _services(text) if len(text) <= MAX_CACHED_QUERY_LENGTH else _services.__wrapped__(text)
        for target in services:
            if target not in allowed_services:
                shown = target if target.startswith(("?", "(")) else f"<{target}>"
                raise ValidationFailed(
                    f"federated SPARQL queries are not allowed; found SERVICE {shown}"
                    + (
                        "; only the query service's own services (e.g. wikibase:label) are"
                        if allowed_services
                        else ""
                    ),
                    details={"field": "query", "keyword": "SERVICE", "service": target},
                )
    return str(form)


# ------------------------------------------------------------------------------------------------ values

_INTEGER_TYPES = frozenset(
    XSD + name
    for name in (
        "integer",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "nonPositiveInteger",
        "negativeInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    )
)


def _boolean(text: str) -> bool:
    if text in {"true", "1"}:
        return True
    if text in {"false", "0"}:
        return False
    raise ValueError(f"not an xsd:boolean: {text!r}")


def _datetime(text: str) -> datetime | str:
    """A ``datetime`` when Python can hold the value; else the lexical form (BCE, year 0, …)."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return text


_CONVERTERS: dict[str, Callable[[str], Any]] = {
    **dict.fromkeys(_INTEGER_TYPES, int),
    XSD + "decimal": Decimal,
    XSD + "double": float,
    XSD + "float": float,
    XSD + "boolean": _boolean,
    XSD + "dateTime": _datetime,
    XSD + "date": date.fromisoformat,
}


def convert_literal(value: str, datatype: str | None) -> Any:
    """A literal's Python value by datatype; the lexical string when the type is unknown or the
    lexical form does not fit it (never an exception: a bad cell must not lose the row)."""
    converter = _CONVERTERS.get(datatype or "")
    if converter is None:
        return value
    try:
        return converter(value.strip())
    except (ValueError, InvalidOperation):
        return value


@dataclass(frozen=True, slots=True)
class SparqlValue:
    """One bound cell: ``type`` is ``uri``, ``literal`` or ``bnode``; ``value`` the lexical form."""

    type: str
    value: str
    datatype: str | None = None
    lang: str | None = None
    python: Any = None

    @property
    def is_uri(self) -> bool:
        return self.type == "uri"

    @property
    def is_literal(self) -> bool:
        return self.type == "literal"

    @property
    def is_bnode(self) -> bool:
        return self.type == "bnode"

    @property
    def datetime(self) -> datetime | None:
        """The parsed ``xsd:dateTime`` (``None`` when not a dateTime or not representable)."""
        return self.python if isinstance(self.python, datetime) else None

    @property
    def entity_id(self) -> str | None:
        """``Q42`` for ``http://www.wikidata.org/entity/Q42``; ``None`` for anything else."""
        if self.type != "uri" or not self.value.startswith(WD_ENTITY):
            return None
        tail = self.value[len(WD_ENTITY) :]
        return tail if _ENTITY_RE.match(tail) else None

    @property
    def claim_guid(self) -> str | None:
        """The statement GUID (``Q42$F078…``) of a ``wds:`` statement URI; ``None`` otherwise."""
        return guid_from_statement_uri(self.value) if self.type == "uri" else None

    def as_dict(self) -> dict[str, Any]:
        """The SPARQL JSON form of the cell (what to store next to the query text)."""
        out: dict[str, Any] = {"type": self.type, "value": self.value}
        if self.datatype:
            out["datatype"] = self.datatype
        if self.lang:
            out["xml:lang"] = self.lang
        return out


def parse_value(raw: Any) -> SparqlValue:
    """One binding cell of SPARQL 1.1 JSON results (``typed-literal`` of old endpoints included)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"a binding is not an object: {raw!r:.80}")
    kind, value = raw.get("type"), raw.get("value")
    if not isinstance(kind, str) or not isinstance(value, str):
        raise ValueError(f"a binding has no string type/value: {raw!r:.80}")
    if kind in {"literal", "typed-literal"}:
        lang = raw.get("xml:lang")
        datatype = raw.get("datatype")
        lang = lang if isinstance(lang, str) and lang else None
        datatype = datatype if isinstance(datatype, str) and datatype else None
        python = value if lang else convert_literal(value, datatype)
        return SparqlValue("literal", value, datatype=datatype, lang=lang, python=python)
    return SparqlValue(kind, value, python=value)


@dataclass(slots=True)
class SparqlResult:
    """Results of one query, with the query text and the endpoint that answered."""

    query: str
    endpoint: str
    vars: list[str]
    rows: list[dict[str, SparqlValue]] = field(default_factory=list)
    boolean: bool | None = None
    retrieved_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, var: str) -> list[SparqlValue | None]:
        return [row.get(var) for row in self.rows]

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "endpoint": self.endpoint,
            "vars": list(self.vars),
            "rows": [{var: cell.as_dict() for var, cell in row.items()} for row in self.rows],
            **({"boolean": self.boolean} if self.boolean is not None else {}),
            "retrievedAt": self.retrieved_at.isoformat(),
        }


def parse_results(body: Any, *, query: str = "", endpoint: str = "") -> SparqlResult:
    """A decoded SPARQL 1.1 JSON results document (SELECT bindings or ASK boolean)."""
    if not isinstance(body, Mapping):
        raise ValueError("the body is not a JSON object")
    head = body.get("head", {})
    if not isinstance(head, Mapping):
        raise ValueError("'head' is not an object")
    raw_vars = head.get("vars", [])
    if not isinstance(raw_vars, list) or not all(isinstance(v, str) for v in raw_vars):
        raise ValueError("'head.vars' is not a list of names")
    if "boolean" in body:
        if not isinstance(body["boolean"], bool):
            raise ValueError("'boolean' is not true or false")
        return SparqlResult(query=query, endpoint=endpoint, vars=list(raw_vars), boolean=body["boolean"])
    results = body.get("results")
    bindings = results.get("bindings") if isinstance(results, Mapping) else None
    if not isinstance(bindings, list):
        raise ValueError("no 'results.bindings' list")
    names = list(raw_vars)
    rows: list[dict[str, SparqlValue]] = []
    for binding in bindings:
        if not isinstance(binding, Mapping):
            raise ValueError("a row of 'results.bindings' is not an object")
        row = {str(var): parse_value(cell) for var, cell in binding.items()}
        names.extend(var for var in row if var not in names)
        rows.append(row)
    return SparqlResult(query=query, endpoint=endpoint, vars=names, rows=rows)


# ------------------------------------------------------------------------------------------- responses


def _server_message(response: httpx.Response) -> str:
    """The useful line of a WDQS error body (a Java stack trace): the exception's message."""
    text = response.text or ""
    for line in text.splitlines():
        if "MalformedQueryException" in line or "QueryParseException" in line:
            return line.strip()[:500]
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:500]
    return ""


def result_from_response(response: httpx.Response, *, query: str, endpoint: str) -> SparqlResult:
    """The parsed results of a 200 answer; otherwise the classified :class:`UpstreamError`."""
    status = response.status_code
    context = {"upstream": UPSTREAM, "status": status, "endpoint": endpoint}
    if status == 200:
        try:
            return parse_results(json.loads(response.content), query=query, endpoint=endpoint)
        except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
            raise UpstreamError(
                f"the Wikidata Query Service answered malformed results: {exc}",
                details={**context, "reason": "malformed", "body": response.text[:500]},
            ) from exc
    message = _server_message(response)
    if status == 500 and "TimeoutException" in response.text:
        raise UpstreamError(
            f"the query ran past the Wikidata Query Service's {WDQS_HARD_TIMEOUT_SECONDS:g} s limit; "
            "simplify it (retrying would time out again)",
            details={**context, "reason": "query_timeout", "message": message},
        )
    if status == 429 or status >= 500:
        wait = parse_retry_after(response.headers.get("Retry-After"))
        raise UpstreamError(
            f"the Wikidata Query Service is busy or failing (HTTP {status}); retry later",
            details={**context, "message": message, **({"retryAfter": wait} if wait is not None else {})},
            retryable=True,
            retry_after=wait,
        )
    if status == 400:
        raise UpstreamError(
            f"the Wikidata Query Service refused the query: {message or 'HTTP 400'}",
            details={**context, "reason": "query_rejected", "message": message, "body": response.text[:2000]},
        )
    if status == 403:
        raise UpstreamError(
            "the Wikidata Query Service refused access (HTTP 403); check that CORTEX_USER_AGENT follows "
            "the Wikimedia User-Agent policy",
            details={**context, "reason": "forbidden", "message": message},
        )
    if 300 <= status < 400:
        location = response.headers.get("Location", "")
        raise UpstreamError(
            f"the Wikidata Query Service redirected (HTTP {status}) to {location!r}; "
            "set WIKIDATA_SPARQL_URL to the final address",
            details={**context, "location": location},
        )
    raise UpstreamError(
        f"the Wikidata Query Service answered HTTP {status}" + (f": {message}" if message else ""),
        details={**context, "message": message},
    )


# ------------------------------------------------------------------------------------------------ client


class SparqlClient:
    """Synchronous WDQS client; cheap to create, holds no connection between requests."""

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        timeout: float | None = None,
        gate: Gate | None = None,
        deadline: float | None = None,
    ):
        self.endpoint = endpoint or sparql_url()
        self.timeout = timeout if timeout is not None else sparql_timeout()
        self.gate: Gate = gate or contextlib.nullcontext
        self.deadline = deadline  # no query outlasts it (a run's deadline, time.monotonic())

    def select(self, query: str, *, timeout: float | None = None) -> SparqlResult:
        """Run one read-only SELECT (or ASK) query; ``timeout`` bounds the read for this query."""
        form = ensure_read_only(query)
        if form not in {"SELECT", "ASK"}:
            raise ValidationFailed(
                f"select() runs SELECT or ASK queries, not {form} (those return RDF, not result rows)",
                details={"field": "query", "keyword": form},
            )
        return self.request(query, timeout=timeout)

    def request(self, query: str, *, timeout: float | None = None) -> SparqlResult:
        """Exactly one HTTP request (GET, or POST for long queries); the caller checked the query."""
        read_timeout = timeout if timeout is not None else self.timeout
        encoded = urlencode({"query": query})
        use_post = len(encoded) > MAX_GET_QUERY_BYTES
        started = time.perf_counter()
        try:
            with self.gate(), build_client(timeout=read_timeout) as http:
                headers = {"Accept": RESULTS_MEDIA_TYPE}
                bounds = timeout_before(self.deadline, read=read_timeout, upstream=UPSTREAM, name=NAME)
                if use_post:
                    response = http.post(
                        self.endpoint,
                        params={"format": "json"},
                        data={"query": query},
                        headers=headers,
                        timeout=bounds,
                    )
                else:
                    response = http.get(
                        self.endpoint,
                        params={"query": query, "format": "json"},
                        headers=headers,
                        timeout=bounds,
                    )
                # Judged inside the gate, so that it records an error answer (a 503, a 429) as the
                # failure it is, not as a request that went well (the health and alerts read those).
                logger.info(
                    "wikidata.sparql.request",
                    method="POST" if use_post else "GET",
                    status=response.status_code,
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                    query_chars=len(query),
                )
                return result_from_response(response, query=query, endpoint=self.endpoint)
        except httpx.TimeoutException as exc:
            raise UpstreamError(
                f"the Wikidata Query Service did not answer in time ({type(exc).__name__})",
                details={"upstream": UPSTREAM, "reason": "timeout", "endpoint": self.endpoint},
                retryable=True,
            ) from exc
        except httpx.UnsupportedProtocol as exc:
            raise UpstreamError(
                f"WIKIDATA_SPARQL_URL is not an http(s) URL: {self.endpoint!r}",
                details={"upstream": UPSTREAM, "reason": "configuration", "endpoint": self.endpoint},
            ) from exc
        except httpx.TransportError as exc:
            raise UpstreamError(
                f"could not reach the Wikidata Query Service ({type(exc).__name__}: {exc})",
                details={"upstream": UPSTREAM, "reason": "connection", "endpoint": self.endpoint},
                retryable=True,
            ) from exc


# ------------------------------------------------------------------------------------------- provenance

_ENTITY_RE = entity_id_pattern("QPL", sub_entities=False)
_QID_RE = ITEM_ID_RE
_PID_RE = PROPERTY_ID_RE
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
# A statement GUID is "<entity id>$<UUID>"; the entity part's case is kept as Wikibase stored it
# (Q42 has statements whose GUID starts with "q42$").
_GUID_RE = re.compile(rf"^(?P<entity>[QPLqpl][1-9][0-9]*)[$-](?P<uuid>{_UUID})$")

PROVENANCE_PREFIXES = {
    "wd": "http://www.wikidata.org/entity/",
    "wds": WD_STATEMENT,
    "wikibase": "http://wikiba.se/ontology#",
    "prov": "http://www.w3.org/ns/prov#",
    "p": "http://www.wikidata.org/prop/",
    "ps": "http://www.wikidata.org/prop/statement/",
}


def statement_uri(claim_guid: str) -> str:
    """``http://www.wikidata.org/entity/statement/Q42-F078…`` for ``Q42$F078…``.

    WDQS names a statement node by its GUID with the ``$`` replaced by ``-`` (the rest, case
    included, unchanged): ``wds:Q42-F078E5B3-F9A8-480E-B7AC-D97778CBBEF9``.
    """
    match = _GUID_RE.match(str(claim_guid).strip())
    if not match:
        raise ValidationFailed(
            f"{claim_guid!r} is not a statement GUID (Q42$xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
            details={"field": "claim_guid"},
        )
    return f"{WD_STATEMENT}{match['entity']}-{match['uuid']}"


def guid_from_statement_uri(uri: str) -> str | None:
    """``Q42$F078…`` for a WDQS statement URI (the inverse of :func:`statement_uri`)."""
    if not uri.startswith(WD_STATEMENT):
        return None
    match = _GUID_RE.match(uri[len(WD_STATEMENT) :])
    return f"{match['entity']}${match['uuid']}" if match else None


def _strict_id(value: str, pattern: re.Pattern[str], field_name: str, example: str) -> str:
    text = value.strip().upper() if isinstance(value, str) else ""
    if not pattern.match(text):
        raise ValidationFailed(
            f"{value!r} is not a valid {field_name} (e.g. {example})", details={"field": field_name}
        )
    return text


# The rank of ?statement and each reference snak (one row per snak), shared by both queries below.
_RANK_AND_REFERENCES = """  ?statement wikibase:rank ?rank .
  OPTIONAL {
    ?statement prov:wasDerivedFrom ?reference .
    OPTIONAL {
      ?reference ?refPredicate ?refValue .
      ?refProperty wikibase:reference ?refPredicate .
    }
  }"""


def statement_provenance_query(
    qid: str, claim_guid: str | None = None, property_id: str | None = None, *, limit: int = 500
) -> str:
    """The SELECT returning statement nodes of ``qid``, their value and rank, and their references.

    Variables: ``?statement`` (``wds:`` URI), ``?property`` (``wd:P…``), ``?value`` (unbound for
    ``novalue``; a blank node for ``somevalue``), ``?rank`` (``wikibase:PreferredRank`` …),
    ``?reference`` (``prov:wasDerivedFrom`` node, unbound when the statement has none),
    ``?refProperty`` and ``?refValue`` (one row per reference snak, e.g. ``wd:P854`` and the URL).
    Narrowed to one statement by ``claim_guid`` (whose entity must be ``qid``) and/or to one
    property by ``property_id``. Ids are validated strictly and only ever inserted in their
    validated form, so nothing else can reach the query text.
    """
    subject = _strict_id(qid, _QID_RE, "qid", "Q42")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
        raise ValidationFailed("limit must be an integer from 1 to 10000", details={"field": "limit"})
    prefixes = "\n".join(f"PREFIX {name}: <{iri}>" for name, iri in PROVENANCE_PREFIXES.items())
    lines: list[str] = []
    if claim_guid is not None:
        uri = statement_uri(claim_guid)
        guid_entity = uri[len(WD_STATEMENT) :].split("-", 1)[0]
        if guid_entity.upper() != subject:
            raise ValidationFailed(
                f"statement {claim_guid!r} does not belong to {subject}", details={"field": "claim_guid"}
            )
        lines.append(f"  VALUES ?statement {{ <{uri}> }}")
    if property_id is not None:
        prop = _strict_id(property_id, _PID_RE, "property_id", "P31")
        lines += [
            f"  VALUES ?property {{ wd:{prop} }}",
            f"  wd:{subject} p:{prop} ?statement .",
            f"  OPTIONAL {{ ?statement ps:{prop} ?value . }}",
        ]
    else:
        lines += [
            f"  wd:{subject} ?claim ?statement .",
            "  ?property wikibase:claim ?claim ;",
            "            wikibase:statementProperty ?statementProperty .",
            "  OPTIONAL { ?statement ?statementProperty ?value . }",
        ]
    body = "\n".join([*lines, _RANK_AND_REFERENCES])
    return (
        f"{prefixes}\n"
        "SELECT ?statement ?property ?value ?rank ?reference ?refProperty ?refValue WHERE {\n"
        f"{body}\n"
        "}\n"
        "ORDER BY ?statement ?reference ?refProperty\n"
        f"LIMIT {limit}\n"
    )


def statements_provenance_query(claim_guids: Sequence[str], *, limit: int = 500) -> str:
    """One SELECT for several statements (of any entities): the fact workflow's enrichment query,
    so the top facts of a run cost WDQS one request, not one each.

    Same variables as :func:`statement_provenance_query` plus ``?entity``; every GUID is validated
    by :func:`statement_uri` and only its URI form reaches the query text.
    """
    uris = list(dict.fromkeys(statement_uri(guid) for guid in claim_guids))
    if not uris:
        raise ValidationFailed("at least one statement GUID is needed", details={"field": "claim_guids"})
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
        raise ValidationFailed("limit must be an integer from 1 to 10000", details={"field": "limit"})
    prefixes = "\n".join(f"PREFIX {name}: <{iri}>" for name, iri in PROVENANCE_PREFIXES.items())
    values = " ".join(f"<{uri}>" for uri in uris)
    return (
        f"{prefixes}\n"
        "SELECT ?entity ?statement ?property ?value ?rank ?reference ?refProperty ?refValue WHERE {\n"
        f"  VALUES ?statement {{ {values} }}\n"
        "  ?entity ?claim ?statement .\n"
        "  ?property wikibase:claim ?claim ;\n"
        "            wikibase:statementProperty ?statementProperty .\n"
        "  OPTIONAL { ?statement ?statementProperty ?value . }\n"
        f"{_RANK_AND_REFERENCES}\n"
        "}\n"
        "ORDER BY ?statement ?reference ?refProperty\n"
        f"LIMIT {limit}\n"
    )
