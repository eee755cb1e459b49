"""``ontology_query``: read-only SPARQL over the ontology's OWL 2 RL closure (seed 003's Cypher tool,
as the agentbox bridge does it with SPARQL).

The query runs against the *closure* (``graph.py``), so what the reasoner derives is answerable:
``?c rdfs:subClassOf cw:CWE74Injection`` finds CWE-89 although its note names only CWE-943.

Validation comes before any evaluation and refuses, with ``errors`` and ``hints``:

- text rdflib's SPARQL 1.1 Query grammar rejects (its message and the line/column in the text sent);
- updates (INSERT, DELETE, LOAD, CLEAR, …) and ``SERVICE`` anywhere, nested or not — the Wikidata
  client's guard (``apps.wikidata.sparql.ensure_read_only`` with no service allowed) is reused;
- ``FROM`` / ``FROM NAMED``: rdflib would fetch those URLs into the dataset;
- ``CONSTRUCT`` and ``DESCRIBE``: only ``SELECT`` (rows) and ``ASK`` (one boolean row) are served —
  a class's triples are ``ontology_read``'s job, and a constructed graph cannot be capped by rows;
- ``cw:`` names that are neither a class nor a property of the ontology, with the nearest class
  local names as "did you mean" hints.

Nothing is fetched from a URL: the refusals above remove every construct rdflib dereferences
(``SERVICE`` is sent to its endpoint, ``FROM`` is loaded), and the parsed algebra is checked again
for ``ServiceGraphPattern`` before it is evaluated.

Bounds (docs/ontology.md, "query"). The text is at most :data:`QUERY_MAX_LENGTH` characters (a
422 beyond). Parsing, validation and evaluation all run in a forked child process
(``isolation.py``) that is killed at ``ONTOLOGY_QUERY_TIME_LIMIT_SECONDS`` (+
:data:`KILL_GRACE_SECONDS`): no operator, however long it holds the interpreter, can delay the web
process's other requests or run past the limit, and at most ``ONTOLOGY_QUERY_CONCURRENCY`` queries
run at once per process (a 503 with ``Retry-After`` when all are taken for a whole time limit). In
the child, the closure is read through a ``triples()`` that checks the same deadline on every
triple, so a cartesian product stops with its row count rather than being killed; ``REGEX`` and
``REPLACE`` run on RE2, which does not backtrack (``sparql_regex.py``); the child may map at most
:data:`MEMORY_LIMIT_BYTES` more than it inherits. The answer has at most :data:`ROW_CAP` rows (a
query without ``LIMIT``, or with a larger one, gets the cap and the response says so) and at most
:data:`RESULT_MAX_BYTES` bytes of rows.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from pyparsing import ParseException, ParseResults
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import OWL, RDF, RDFS, SKOS, XSD
from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.plugins.sparql.evaluate import evalQuery
from rdflib.plugins.sparql.parser import parseQuery
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.processor import SPARQLResult
from rdflib.term import BNode, Node

from apps.core.errors import ServiceUnavailable, ValidationFailed
from apps.ontology import isolation, sparql_regex
from apps.ontology.graph import OntologyGraph, ontology_graph
from apps.ontology.models import NAMESPACE

# The parser's packrat cache is global: share the Wikidata client's lock rather than race it.
from apps.wikidata.sparql import _PARSER_LOCK as PARSER_LOCK
from apps.wikidata.sparql import ensure_read_only

ROW_CAP = 1000
# Far above any query an agent writes by hand (the starter examples are under 300 characters), far
# below what makes parsing alone take seconds.
QUERY_MAX_LENGTH = 10_000
RESULT_MAX_BYTES = 1_000_000
MEMORY_LIMIT_BYTES = 512 * 2**20
# The child's own deadline stops rdflib between two triple reads with a proper answer; the kill,
# this much later, is for work that never reads a triple (one long regex, big-number arithmetic).
KILL_GRACE_SECONDS = 0.25
# pyparsing recurses past Python's stack beyond about 30 nested levels: such a query is refused.
_NESTING_HINT = "Flatten the nested groups ({ { … } }) or parentheses: about 30 levels parse."
SERVED_FORMS = ("SELECT", "ASK")
STANDARD_PREFIXES: dict[str, str] = {
    "cw": NAMESPACE,
    "prov": "http://www.w3.org/ns/prov#",
    "owl": str(OWL),
    "rdfs": str(RDFS),
    "rdf": str(RDF),
    "skos": str(SKOS),
    "xsd": str(XSD),
}
_DECLARED_PREFIX_RE = re.compile(r"\bPREFIX\s+([A-Za-z][\w.\-]*)?\s*:", re.IGNORECASE)
# Names in cw: that are not classes: the properties ``graph.asserted_graph`` writes.
_CW_PROPERTIES = frozenset({"termId", "domain"})


class QueryTimedOut(Exception):
    """The evaluation read triples past its deadline."""


class QueryCapacityFull(ServiceUnavailable):
    """Every query slot of this process stayed taken for a whole time limit."""

    def __init__(self, slots: int, retry_after: int) -> None:
        super().__init__(
            f"{slots} ontology queries are already running in this server process; retry in {retry_after} s.",
            details={"retryAfter": retry_after},
        )
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


def time_limit_seconds() -> float:
    return float(settings.ONTOLOGY_QUERY_TIME_LIMIT_SECONDS)


@dataclass
class QueryAnswer:
    """What ``ontology_query`` answers: the seed's ``validation`` and, when it ran, its QueryResult."""

    valid: bool
    errors: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    form: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False
    executed: bool = False

    def as_dict(self) -> dict[str, Any]:
        result = None
        if self.executed:
            result = {
                "columns": self.columns,
                "rows": self.rows,
                "row_count": len(self.rows),
                "truncated": self.truncated,
            }
        return {
            "success": self.valid and self.executed and not self.errors,
            "validation": {"valid": self.valid, "errors": self.errors, "hints": self.hints},
            "query_type": self.form or None,
            # Set by cypher.py for a Cypher query: the SPARQL it ran as.
            "translated_sparql": None,
            "result": result,
        }


def prefixes_injected(sparql: str) -> tuple[str, int]:
    """``(text, offset)``: the standard prefixes the query does not declare, on one line before it;
    ``offset`` is that line's length (to map parser positions back onto the caller's text)."""
    declared = {(match.group(1) or "") for match in _DECLARED_PREFIX_RE.finditer(sparql)}
    missing = [f"PREFIX {name}: <{iri}>" for name, iri in STANDARD_PREFIXES.items() if name not in declared]
    if not missing:
        return sparql, 0
    head = " ".join(missing) + "\n"
    return head + sparql, len(head)


def _position(text: str, loc: int) -> tuple[int, int]:
    """1-based (line, column) of character ``loc`` of ``text``."""
    loc = max(0, min(loc, len(text)))
    line = text.count("\n", 0, loc) + 1
    column = loc - (text.rfind("\n", 0, loc) + 1) + 1
    return line, column


def _walk(node: Any) -> Iterator[Any]:
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        if isinstance(current, CompValue):
            pending.extend(current.values())
            # rdflib keeps some translated parts as attributes, not items: an EXISTS's graph.
            pending.extend(value for name, value in vars(current).items() if name not in ("_evalfn", "ctx"))
        elif isinstance(current, ParseResults | list | tuple):
            pending.extend(current)


def _cw_names(parsed: Any) -> set[str]:
    """Local names of every ``cw:`` term the query mentions (prefixed or as a full IRI)."""
    names: set[str] = set()
    for node in _walk(parsed):
        if isinstance(node, CompValue) and node.name == "pname" and str(node.get("prefix") or "") == "cw":
            names.add(str(node.get("localname") or ""))
        elif isinstance(node, URIRef) and str(node).startswith(NAMESPACE):
            names.add(str(node)[len(NAMESPACE) :])
    names.discard("")
    return names


def _unknown_names(names: set[str], graph: OntologyGraph) -> tuple[list[str], list[str]]:
    """Errors and "did you mean" hints for ``cw:`` names that are neither a class nor a property."""
    local_names = graph.cw_local_names
    known = local_names | graph.cw_properties | _CW_PROPERTIES
    by_lower = {name.lower(): name for name in local_names}
    errors, hints = [], []
    for name in sorted(names - known):
        errors.append(f"cw:{name} is not a class or property of the ontology.")
        close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
        if close:
            hints.append(
                f"cw:{name}: did you mean " + " or ".join(f"`cw:{by_lower[item]}`" for item in close) + "?"
            )
        else:
            hints.append(f"cw:{name}: ontology_discover finds classes by term or definition.")
    return errors, hints


def _limit(parsed: Any) -> int | None:
    # CompValue.get answers the key's name for a missing key: test membership instead.
    if "limitoffset" not in parsed[1] or "limit" not in parsed[1]["limitoffset"]:
        return None
    return int(parsed[1]["limitoffset"]["limit"])


class _DeadlineGraph(Graph):
    """The closure's store seen through a ``triples()`` that raises :class:`QueryTimedOut` once the
    deadline has passed: the only way to stop rdflib's evaluation part-way."""

    def __init__(self, source: Graph, *, deadline: float) -> None:
        super().__init__(
            store=source.store, identifier=source.identifier, namespace_manager=source.namespace_manager
        )
        self._deadline = deadline

    def triples(self, triple: Any) -> Any:
        deadline = self._deadline
        for found in super().triples(triple):
            if time.monotonic() > deadline:
                raise QueryTimedOut
            yield found


# JSON numbers a client reads exactly (JavaScript's safe integers); larger ones go as their digits.
_JSON_SAFE_INTEGER = 2**53


def _json_value(value: Node | None) -> Any:
    if isinstance(value, Literal):
        return _json_literal(value)
    if isinstance(value, BNode):
        return f"_:{value}"
    return None if value is None else str(value)


def _json_literal(value: Literal) -> Any:
    python = value.toPython()
    if isinstance(python, bool) or (isinstance(python, int) and abs(python) < _JSON_SAFE_INTEGER):
        return python
    if isinstance(python, float):
        if math.isfinite(python):
            return python
        # JSON has no infinities or NaN: XSD's spelling of them, as text.
        return "NaN" if math.isnan(python) else ("INF" if python > 0 else "-INF")
    return str(value)  # the lexical form: big integers, strings, dates, …


class _Refused(Exception):
    """A validation refusal: its ``errors`` and ``hints`` go into the answer."""

    def __init__(self, errors: list[str], hints: list[str] | None = None) -> None:
        super().__init__(errors[0])
        self.errors = errors
        self.hints = hints or []


def _parsed(sparql: str) -> tuple[Any, str]:
    """``(parse tree, text with the prefixes)``; ``_Refused`` for what is not one query."""
    if not sparql.strip():
        raise _Refused(["The SPARQL query is empty."])
    if len(sparql) > QUERY_MAX_LENGTH:
        raise _Refused([f"The SPARQL query is longer than {QUERY_MAX_LENGTH} characters."])
    text, offset = prefixes_injected(sparql)
    try:
        with PARSER_LOCK:
            return parseQuery(text), text
    except RecursionError:
        raise _Refused(["The query nests too deeply to be parsed."], [_NESTING_HINT]) from None
    except ParseException as error:
        # An update, or a query whose form is misspelt, does not parse as a query: say which it is
        # rather than where the grammar stopped.
        try:
            ensure_read_only(text, allowed_services=frozenset())
        except ValidationFailed as refusal:
            raise _read_only_refused(refusal) from None
        except RecursionError:
            pass  # not an update either: the syntax error below says where the query went wrong
        line, column = _position(sparql, error.loc - offset)
        raise _Refused([f"SPARQL syntax error at line {line}, column {column}: {error.msg}."]) from None


def _read_only_refused(refusal: ValidationFailed) -> _Refused:
    """The shared read-only guard's refusal in this endpoint's words. The guard serves Wikidata, which
    runs CONSTRUCT and DESCRIBE too; here only SELECT and ASK are served, so a query whose first word
    is no query form (``SELEC``) is told those two, with the nearest as a hint, never the guard's list."""
    keyword = str(refusal.details.get("keyword") or "")
    if keyword == "SERVICE":
        return _Refused(
            [refusal.message], ["The query runs on the ontology alone; nothing is fetched from a URL."]
        )
    if refusal.message.startswith("only read-only"):  # an update keyword
        return _Refused([f"{refusal.message}; ontology changes go through ontology_propose."])
    found = f"; found {keyword}" if keyword else "; found no query form"
    nearest = difflib.get_close_matches(keyword.upper(), SERVED_FORMS, n=1, cutoff=0.6)
    start = "Start the query with SELECT (rows) or ASK (one boolean), after any PREFIX lines."
    return _Refused(
        [f"Only SELECT and ASK queries are served here{found}."],
        [f"Did you mean {nearest[0]}? {start}" if nearest else start],
    )


def _checked(parsed: Any, text: str, graph: OntologyGraph) -> tuple[str, Any]:
    """``(form, algebra)`` of a parsed query allowed to run; ``_Refused`` naming what is not."""
    try:
        ensure_read_only(text, allowed_services=frozenset())
    except ValidationFailed as refusal:
        raise _read_only_refused(refusal) from None
    form = str(getattr(parsed[1], "name", "")).removesuffix("Query").upper()
    if form not in SERVED_FORMS:
        raise _Refused(
            [f"{form} queries are not served here; only SELECT and ASK."],
            ["Select the triples as rows (SELECT ?s ?p ?o WHERE { … }), or use ontology_read."],
        )
    if "datasetClause" in parsed[1]:
        raise _Refused(["FROM and FROM NAMED are not allowed: the query runs on the ontology graph only."])
    # Read before translateQuery, which rewrites the tree in place: a cw: name inside a FILTER went
    # unseen afterwards (FILTER(?c = cw:Typo) ran and answered nothing instead of "did you mean").
    cw_names = _cw_names(parsed)
    try:
        query = translateQuery(parsed)
    except Exception as error:  # noqa: BLE001 - rdflib raises bare Exception for unknown prefixes
        raise _Refused(
            [f"SPARQL error: {error}."],
            ["Declared without PREFIX: " + ", ".join(f"{name}:" for name in STANDARD_PREFIXES)],
        ) from None
    algebra = list(_walk(query.algebra))
    names = {node.name for node in algebra if isinstance(node, CompValue)}
    # Again on the algebra rdflib will evaluate: a SERVICE there would be sent to its endpoint.
    if "ServiceGraphPattern" in names:
        raise _Refused(["federated SPARQL queries are not allowed; found SERVICE"])
    if "Graph" in names:
        raise _Refused(
            ["GRAPH is not served: the ontology is one default graph, with no named graphs."],
            ["Write the pattern without GRAPH { … }."],
        )
    problems = sparql_regex.pattern_problems(algebra)
    if problems:
        raise _Refused(problems, ["REGEX and REPLACE use RE2 syntax: no backreferences, no look-around."])
    errors, hints = _unknown_names(cw_names, graph)
    if errors:
        raise _Refused(errors, hints)
    sparql_regex.use_re2(algebra)
    for node in algebra:
        if isinstance(node, CompValue) and node.name == "Slice":
            # rdflib slices with itertools.islice(start, start + length), which refuses numbers past
            # sys.maxsize; no result is that long, so the clamped LIMIT and OFFSET select the same rows.
            node["start"] = min(int(node.start or 0), sys.maxsize // 2)
            if node.length is not None:
                node["length"] = min(int(node.length), sys.maxsize // 2)
    return form, query


def query_validate(sparql: str, graph: OntologyGraph) -> tuple[QueryAnswer, Any]:
    """The validation of ``sparql`` (prefixes injected) and, when valid, its translated algebra."""
    try:
        parsed, text = _parsed(sparql)
        form, query = _checked(parsed, text, graph)
    except _Refused as refusal:
        return QueryAnswer(valid=False, errors=refusal.errors, hints=refusal.hints), None
    answer = QueryAnswer(valid=True, form=form)
    limit = _limit(parsed) if form == "SELECT" else None
    if form == "SELECT" and limit is None:
        answer.hints.append(f"The query has no LIMIT: LIMIT {ROW_CAP} (the row cap) was applied.")
    elif limit is not None and limit > ROW_CAP:
        answer.hints.append(f"LIMIT {limit} is above the row cap: at most {ROW_CAP} rows are returned.")
    return answer, query


@functools.cache
def _query_slots(size: int) -> isolation.Slots:
    return isolation.Slots(size)


def ontology_query(*, sparql: str, row_cap: int = ROW_CAP, time_limit: float | None = None) -> dict[str, Any]:
    """Validate ``sparql`` and run it on the ontology's closure, in a child process killed at the
    time limit (``ONTOLOGY_QUERY_TIME_LIMIT_SECONDS`` unless ``time_limit`` is given): the seed's
    ``validation`` plus ``result`` ``{columns, rows: [{column: value}], row_count, truncated}``
    (``None`` when refused or stopped). ``QueryCapacityFull`` when every query slot stays taken.

    Values: IRIs and other literals as strings, numbers and booleans as JSON (integers beyond 2^53 and
    INF/NaN as their lexical form), unbound as ``null``.
    """
    limit = time_limit_seconds() if time_limit is None else time_limit
    graph = ontology_graph()  # the current version, read here: the child sees exactly this graph
    # Built here, once per version, rather than in every child that would throw them away.
    _ = graph.cw_local_names, graph.cw_properties
    slots = _query_slots(int(settings.ONTOLOGY_QUERY_CONCURRENCY))
    try:
        with slots.held(wait=limit):
            return isolation.run_isolated(
                lambda: query_answer(sparql, graph, row_cap=row_cap, time_limit=limit),
                timeout=limit + KILL_GRACE_SECONDS,
                memory_bytes=MEMORY_LIMIT_BYTES,
                locks=[PARSER_LOCK],
            )
    except isolation.IsolationBusy:
        raise QueryCapacityFull(slots.size, retry_after=max(1, math.ceil(limit))) from None
    except isolation.IsolatedTimeout:
        error = (
            f"The query ran past the {limit:g} s time limit and was stopped; no partial result is returned."
        )
    except isolation.IsolatedFailed as failure:
        error = (
            f"The query needed more than {MEMORY_LIMIT_BYTES // 2**20} MB and was stopped."
            if failure.reason == "memory"
            else "The query could not be evaluated: its process ended without an answer."
        )
    return QueryAnswer(valid=False, errors=[error], hints=[_NARROWER]).as_dict()


_NARROWER = "Bind the patterns to each other (shared variables) or to known classes, and add a LIMIT."


def query_answer(sparql: str, graph: OntologyGraph, *, row_cap: int, time_limit: float) -> dict[str, Any]:
    """What ``ontology_query`` answers, computed in the calling process (``ontology_query`` calls
    it in the child): validation, then evaluation until ``time_limit`` seconds from now."""
    deadline = time.monotonic() + time_limit
    answer, query = query_validate(sparql, graph)
    if query is None:
        return answer.as_dict()
    view = _DeadlineGraph(graph.closure, deadline=deadline)
    try:
        result = SPARQLResult(evalQuery(view, query, {}))
        if answer.form == "ASK":
            answer.columns, answer.rows = ["ask"], [{"ask": bool(result.askAnswer)}]
        else:
            answer.columns = [str(var) for var in result.vars or []]
            size = 0
            for row in result:
                if len(answer.rows) >= row_cap:
                    answer.truncated = True
                    break
                values: Any = row  # a ResultRow for SELECT (rdflib types the iteration for every form)
                item = {
                    column: _json_value(value) for column, value in zip(answer.columns, values, strict=True)
                }
                size += len(json.dumps(item, ensure_ascii=False))
                if size > RESULT_MAX_BYTES:
                    answer.truncated = True
                    answer.hints.append(
                        f"The rows are cut at {RESULT_MAX_BYTES} bytes: select fewer or shorter values."
                    )
                    break
                answer.rows.append(item)
    except QueryTimedOut:
        return _failed(
            answer,
            f"The query ran past the {time_limit:g} s time limit and was stopped "
            f"({len(answer.rows)} rows read); no partial result is returned.",
            _NARROWER,
        )
    except RecursionError:
        return _failed(answer, "The query nests too deeply to be evaluated.", _NESTING_HINT)
    except MemoryError:
        return _failed(
            answer, f"The query needed more than {MEMORY_LIMIT_BYTES // 2**20} MB and was stopped."
        )
    except Exception as error:  # noqa: BLE001 - rdflib raises anything from an operator; say what
        return _failed(answer, f"The query could not be evaluated: {type(error).__name__}: {error}"[:500])
    answer.executed = True
    return answer.as_dict()


def _failed(answer: QueryAnswer, error: str, hint: str | None = None) -> dict[str, Any]:
    answer.errors.append(error)
    if hint:
        answer.hints.append(hint)
    answer.rows = []
    return answer.as_dict()
