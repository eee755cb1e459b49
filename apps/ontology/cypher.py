"""``ontology_query``'s ``cypher`` input (seed 003): a read-only Cypher subset translated to SPARQL,
which then runs exactly as a ``sparql`` query does (``sparql.ontology_query``: validated, in the
forked child with the hard time limit, RE2 regexes, row and byte caps) — never around that path.

The subset, over the ontology's classes (every node variable is an ``owl:Class``)::

    MATCH <pattern> [WHERE <condition>] RETURN [DISTINCT] <item>, … [LIMIT n]

- pattern: ``(a)`` or a chain ``(a)-[:subClassOf]->(b)<-[:mitigates]-(c)``; a node may carry the label
  ``:Class``; a relationship names one or more types (``[:uses|requires]``), none (``-->`` or ``-[]-``:
  any), an optional variable that is not returned, a direction or none, and optionally a length
  ``*``, ``*n``, ``*n..m``, ``*..m`` (1 ≤ n ≤ m ≤ :data:`MAX_HOPS`).
- types: ``subClassOf``, ``disjointWith`` and the notes' relationships, as written in the notes
  (```has-part```, backticked because of the hyphen) or as their property (``hasPart``).
- condition: ``v.p = 'text'``, ``<>``, ``CONTAINS``, ``STARTS WITH``, ``ENDS WITH``, with ``AND``,
  ``OR``, ``NOT`` and parentheses; ``p`` is ``iri`` (a full IRI or a short name such as
  ``cw:CWE89SqlInjection``), ``name`` (the local name) or ``label`` (the preferred term).
- items: ``v`` (the class IRI) or ``v.p``, each with an optional ``AS alias``.

The text is at most :data:`CYPHER_MAX_LENGTH` characters and is read by a hand-written tokenizer (one
pass, no regular expression) and a recursive-descent parser whose nesting is bounded; user text
reaches the SPARQL only as an escaped string literal or as an IRI checked character by character.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.ontology.graph import relationship_property
from apps.ontology.models import NAMESPACE, RELATIONSHIP_TYPES
from apps.ontology.notes import LOCAL_NAME_RE, iri_compact
from apps.ontology.selectors import iri_resolve
from apps.ontology.sparql import QueryAnswer, ontology_query

CYPHER_MAX_LENGTH = 2000
MAX_HOPS = 5
MAX_NESTING = 20
MAX_LIMIT = 1_000_000

SUPPORTED_HINT = (
    "Supported Cypher: MATCH (a)-[:subClassOf]->(b) WHERE a.label CONTAINS 'SQL' RETURN a, b LIMIT 10 — "
    "one MATCH of a node or a chain of relationships (types subClassOf, disjointWith or a note "
    "relationship such as `relates-to`/relatesTo; optional *1..5), WHERE with =, <>, CONTAINS, STARTS WITH, "
    "ENDS WITH on iri, name or label joined by AND/OR/NOT, RETURN [DISTINCT] variables or v.iri/v.name/"
    "v.label, LIMIT n. For anything else send `sparql` (a SPARQL SELECT or ASK) instead of `cypher`."
)
_WRITE_KEYWORDS = frozenset(
    {"CREATE", "MERGE", "DELETE", "DETACH", "SET", "REMOVE", "DROP", "LOAD", "FOREACH"}
)
_UNSUPPORTED_KEYWORDS = frozenset(
    {"CALL", "OPTIONAL", "UNWIND", "WITH", "UNION", "ORDER", "SKIP", "EXISTS", "USE", "SHOW", "YIELD"}
)
_KEYWORDS = frozenset(
    {"MATCH", "WHERE", "RETURN", "DISTINCT", "LIMIT", "AND", "OR", "NOT", "AS", "CONTAINS", "STARTS",
     "ENDS", "XOR", "IS", "IN"}
) | _WRITE_KEYWORDS | _UNSUPPORTED_KEYWORDS  # fmt: skip

_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_OWL = "http://www.w3.org/2002/07/owl#"


def relationship_types() -> dict[str, str]:
    """Cypher relationship type → the predicate IRI it stands for."""
    types = {"subClassOf": _RDFS + "subClassOf", "disjointWith": _OWL + "disjointWith"}
    for kind in RELATIONSHIP_TYPES:
        predicate = str(relationship_property(kind))
        types[kind] = predicate
        types[predicate[len(NAMESPACE) :]] = predicate
    return types


class CypherRefused(Exception):
    """Outside the subset: the message says what, the hint says what is supported."""


# ------------------------------------------------------------------------------------------ tokens


@dataclass(frozen=True)
class Token:
    kind: str  # "name", "keyword", "string", "int", "symbol", "end"
    text: str
    at: int


_SYMBOLS = (
    "=~",
    "<>",
    "<-",
    "->",
    "..",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "-",
    ":",
    ",",
    ".",
    "*",
    "|",
    "=",
    "<",
    ">",
)


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text`` in one left-to-right pass (each character read a bounded number of times)."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif char == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif char.isascii() and (char.isalpha() or char == "_"):
            start = i
            while i < n and text[i].isascii() and (text[i].isalnum() or text[i] == "_"):
                i += 1
            word = text[start:i]
            kind = "keyword" if word.upper() in _KEYWORDS else "name"
            tokens.append(Token(kind, word.upper() if kind == "keyword" else word, start))
        elif char == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise CypherRefused(f"Unclosed ` at character {i + 1}.")
            tokens.append(Token("name", text[i + 1 : end], i))
            i = end + 1
        elif char in "'\"":
            i = _string(text, i, tokens)
        elif char.isascii() and char.isdigit():
            start = i
            while i < n and text[i].isascii() and text[i].isdigit():
                i += 1
            tokens.append(Token("int", text[start:i], start))
        else:
            symbol = next((s for s in _SYMBOLS if text.startswith(s, i)), None)
            if symbol is None:
                raise CypherRefused(f"Unexpected character {char!r} at character {i + 1}.")
            tokens.append(Token("symbol", symbol, i))
            i += len(symbol)
    tokens.append(Token("end", "", n))
    return tokens


_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


def _string(text: str, start: int, tokens: list[Token]) -> int:
    quote, i = text[start], start + 1
    out: list[str] = []
    while i < len(text):
        char = text[i]
        if char == quote:
            tokens.append(Token("string", "".join(out), start))
            return i + 1
        if char == "\\":
            escaped = text[i + 1 : i + 2]
            if escaped not in _ESCAPES:
                raise CypherRefused(f"Unknown escape \\{escaped} in the string at character {start + 1}.")
            out.append(_ESCAPES[escaped])
            i += 2
            continue
        out.append(char)
        i += 1
    raise CypherRefused(f"Unclosed string at character {start + 1}.")


# ------------------------------------------------------------------------------------------ syntax


@dataclass
class Hop:
    types: list[str]  # predicate IRIs; empty for any type
    direction: str  # "out", "in" or "both"
    hops: tuple[int, int] | None  # (min, max), None for one hop; max 0 for unbounded
    target: str


@dataclass
class Condition:
    variable: str
    prop: str
    op: str  # "=", "<>", "CONTAINS", "STARTS WITH", "ENDS WITH"
    value: str


@dataclass
class Boolean:
    op: str  # "AND", "OR", "NOT"
    parts: list[Any]


@dataclass
class Item:
    variable: str
    prop: str | None
    alias: str


@dataclass
class Match:
    start: str
    hops: list[Hop] = field(default_factory=list)
    where: Any = None
    distinct: bool = False
    items: list[Item] = field(default_factory=list)
    limit: int | None = None
    variables: list[str] = field(default_factory=list)  # node variables, in order of appearance


_PROPERTIES = ("iri", "name", "label")


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens, self.i, self.anonymous, self.depth = tokens, 0, 0, 0
        self.types = relationship_types()
        self.match: Match | None = None
        self.relationship_variables: set[str] = set()

    @property
    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, kind: str, text: str | None = None) -> bool:
        token = self.peek
        return token.kind == kind and (text is None or token.text == text)

    def expect(self, kind: str, text: str | None = None, what: str = "") -> Token:
        if not self.at(kind, text):
            token = self.peek
            found = "the end of the query" if token.kind == "end" else f"{token.text!r}"
            self._refuse_keyword(token)
            raise CypherRefused(
                f"Expected {what or text or kind} at character {token.at + 1}, found {found}."
            )
        return self.take()

    @staticmethod
    def _refuse_keyword(token: Token) -> None:
        if token.kind != "keyword":
            return
        if token.text in _WRITE_KEYWORDS:
            raise CypherRefused(
                f"Cypher {token.text} changes the graph: ontology_query is read-only; changes go through "
                "ontology_propose."
            )
        if token.text in _UNSUPPORTED_KEYWORDS:
            raise CypherRefused(f"Cypher {token.text} is outside the supported subset.")
        if token.text == "MATCH":
            raise CypherRefused("Only one MATCH clause is supported.")

    def query(self) -> Match:
        self.expect("keyword", "MATCH")
        start = self.node()
        match = self.match = Match(start=start, variables=[start])
        while self.at("symbol", "-") or self.at("symbol", "<-"):
            hop = self.hop()
            match.hops.append(hop)
            if hop.target not in match.variables:
                match.variables.append(hop.target)
        if self.at("symbol", ","):
            raise CypherRefused("Only one pattern is supported: join the parts into one chain.")
        if self.at("keyword", "WHERE"):
            self.take()
            match.where = self.disjunction()
        self.expect("keyword", "RETURN")
        if self.at("keyword", "DISTINCT"):
            self.take()
            match.distinct = True
        match.items.append(self.item())
        while self.at("symbol", ","):
            self.take()
            match.items.append(self.item())
        if self.at("keyword", "LIMIT"):
            self.take()
            limit = int(self.expect("int", what="a number after LIMIT").text[:12])
            if limit > MAX_LIMIT:
                raise CypherRefused(f"LIMIT {limit} is above {MAX_LIMIT}.")
            match.limit = limit
        self.expect("end", what="the end of the query")
        aliases = [item.alias for item in match.items]
        if len(set(aliases)) != len(aliases):
            raise CypherRefused("Two RETURN items have the same name: give one an AS alias.")
        return match

    def variable(self) -> str:
        name = self.expect("name", what="a variable").text
        if not name.isascii() or not (name[0].isalpha() or name[0] == "_") or "__" in name:
            raise CypherRefused(f"Variable {name!r}: use letters, digits and single underscores.")
        if not all(char.isalnum() or char == "_" for char in name):
            raise CypherRefused(f"Variable {name!r}: use letters, digits and single underscores.")
        return name

    def node(self) -> str:
        self.expect("symbol", "(", what="a node such as (a)")
        if self.at("name"):
            name = self.variable()
        else:
            self.anonymous += 1
            name = f"node__{self.anonymous}"
        if self.at("symbol", ":"):
            self.take()
            label = self.expect("name", what="a node label").text
            if label != "Class":
                raise CypherRefused(
                    f"Node label :{label} is unknown: nodes are classes (:Class or no label)."
                )
        if self.at("symbol", "{"):
            raise CypherRefused("Property maps in a node are not supported: write the condition in WHERE.")
        self.expect("symbol", ")", what="')' closing the node")
        return name

    def hop(self) -> Hop:
        incoming = self.take().text == "<-"
        types: list[str] = []
        hops: tuple[int, int] | None = None
        if self.at("symbol", "["):
            self.take()
            if self.at("name"):
                self.relationship_variables.add(self.variable())
            if self.at("symbol", ":"):
                self.take()
                types.append(self.relationship_type())
                while self.at("symbol", "|"):
                    self.take()
                    if self.at("symbol", ":"):
                        self.take()
                    types.append(self.relationship_type())
            if self.at("symbol", "*"):
                self.take()
                hops = self.length()
            if self.at("symbol", "{"):
                raise CypherRefused("Relationship properties are not supported.")
            self.expect("symbol", "]", what="']' closing the relationship")
            # "]->" tokenizes as "]", "->"; "]-" as "]", "-".
            arrow = self.expect("symbol", what="'-' or '->' after the relationship")
        else:
            # "-->" tokenizes as "-", "->"; "--" as "-", "-"; "<--" as "<-", "-".
            arrow = self.expect("symbol", what="'-', '->' or '-[:type]->'")
        if arrow.text not in ("-", "->"):
            raise CypherRefused(f"Expected '-' or '->' at character {arrow.at + 1}.")
        outgoing = arrow.text == "->"
        if incoming and outgoing:
            raise CypherRefused("A relationship points one way: <-[…]- or -[…]->, not both.")
        direction = "in" if incoming else "out" if outgoing else "both"
        return Hop(types=list(dict.fromkeys(types)), direction=direction, hops=hops, target=self.node())

    def relationship_type(self) -> str:
        token = self.expect("name", what="a relationship type")
        if token.text not in self.types:
            known = ", ".join(sorted(name for name in self.types if "-" not in name))
            raise CypherRefused(f"Unknown relationship type {token.text!r}; the ontology's are {known}.")
        return self.types[token.text]

    def length(self) -> tuple[int, int]:
        low, high = 1, 0
        if self.at("int"):
            low = high = int(self.take().text[:6])
        if self.at("symbol", ".."):
            self.take()
            high = int(self.take().text[:6]) if self.at("int") else 0
        if low < 1:
            raise CypherRefused("Variable-length relationships start at 1 hop (*1..n).")
        if high and (high < low or high > MAX_HOPS):
            raise CypherRefused(f"Variable-length relationships go 1 to {MAX_HOPS} hops (*1..{MAX_HOPS}).")
        if not high and low != 1:
            raise CypherRefused(f"An open length starts at 1 (*1..); a bounded one is *{low}..{MAX_HOPS}.")
        return low, high

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise CypherRefused(f"The WHERE condition nests deeper than {MAX_NESTING} levels.")

    def disjunction(self) -> Any:
        self.nested()
        parts = [self.conjunction()]
        while self.at("keyword", "OR"):
            self.take()
            parts.append(self.conjunction())
        self.depth -= 1
        return parts[0] if len(parts) == 1 else Boolean("OR", parts)

    def conjunction(self) -> Any:
        parts = [self.negation()]
        while self.at("keyword", "AND"):
            self.take()
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else Boolean("AND", parts)

    def negation(self) -> Any:
        if self.at("keyword", "NOT"):
            self.take()
            self.nested()
            inner = self.negation()
            self.depth -= 1
            return Boolean("NOT", [inner])
        if self.at("symbol", "("):
            self.take()
            inner = self.disjunction()
            self.expect("symbol", ")", what="')' closing the condition")
            return inner
        return self.comparison()

    def property_of(self) -> tuple[str, str]:
        variable = self.variable()
        self.known(variable)
        self.expect("symbol", ".", what=f"a property of {variable} (.iri, .name or .label)")
        prop = self.expect("name", what="a property (iri, name or label)").text
        if prop not in _PROPERTIES:
            raise CypherRefused(f"Property {variable}.{prop} is unknown: classes have iri, name and label.")
        return variable, prop

    def known(self, variable: str) -> None:
        assert self.match is not None
        if variable in self.relationship_variables:
            raise CypherRefused(f"{variable} is a relationship: conditions and RETURN take node variables.")
        if variable not in self.match.variables:
            raise CypherRefused(f"Variable {variable} is not in the MATCH pattern.")

    def comparison(self) -> Condition:
        variable, prop = self.property_of()
        token = self.take()
        if token.kind == "symbol" and token.text in ("=", "<>"):
            op = token.text
        elif token.kind == "keyword" and token.text == "CONTAINS":
            op = "CONTAINS"
        elif token.kind == "keyword" and token.text in ("STARTS", "ENDS"):
            self.expect("keyword", "WITH", what=f"WITH after {token.text}")
            op = f"{token.text} WITH"
        else:
            self._refuse_keyword(token)
            raise CypherRefused(
                f"Unsupported comparison {token.text!r} at character {token.at + 1}: use =, <>, CONTAINS, "
                "STARTS WITH or ENDS WITH."
            )
        value = self.expect("string", what="a quoted string to compare with").text
        return Condition(variable, prop, op, value)

    def item(self) -> Item:
        variable = self.variable()
        self.known(variable)
        prop = None
        if self.at("symbol", "."):
            self.take()
            prop = self.expect("name", what="a property (iri, name or label)").text
            if prop not in _PROPERTIES:
                raise CypherRefused(
                    f"Property {variable}.{prop} is unknown: classes have iri, name and label."
                )
        alias = f"{variable}.{prop}" if prop else variable
        if self.at("keyword", "AS"):
            self.take()
            alias = self.variable()
        return Item(variable, prop, alias)


def parse(text: str) -> Match:
    if len(text) > CYPHER_MAX_LENGTH:
        raise CypherRefused(f"The Cypher query is longer than {CYPHER_MAX_LENGTH} characters.")
    if not text.strip():
        raise CypherRefused("The Cypher query is empty.")
    tokens = tokenize(text)
    first = tokens[0]
    if not (first.kind == "keyword" and first.text == "MATCH"):
        _Parser._refuse_keyword(first)
    return _Parser(tokens).query()


# ------------------------------------------------------------------------------------------ SPARQL


def literal(value: str) -> str:
    """``value`` as a SPARQL string literal (every character that could end or bend it escaped)."""
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


_IRI_FORBIDDEN = frozenset('<>"{}|^`\\ ')


def iri_term(value: str) -> str:
    """``<iri>`` for a full IRI or a short name (``cw:Name``), resolved by the one helper the other
    tools use; refused when it holds a character an IRI reference cannot."""
    iri = iri_resolve(value)
    if not iri.startswith(("http://", "https://")) or any(c in _IRI_FORBIDDEN or ord(c) <= 0x20 for c in iri):
        raise CypherRefused(f"{value!r} is not an IRI or a short name such as cw:CWE89SqlInjection.")
    local = iri[len(NAMESPACE) :]
    if iri.startswith(NAMESPACE) and LOCAL_NAME_RE.match(local):
        # As a cw: name, so that the SPARQL validation checks it is a class (with "did you mean").
        return f"cw:{local}"
    return f"<{iri}>"


def _predicate(types: list[str]) -> str:
    # The ontology's own predicates, by their prefixed names (the query text declares the prefixes).
    names = [iri_compact(iri) for iri in (types or list(dict.fromkeys(relationship_types().values())))]
    return names[0] if len(names) == 1 else "(" + "|".join(names) + ")"


def _path(hop: Hop) -> str:
    step = _predicate(hop.types)
    if hop.direction == "in":
        step = f"^{step}"
    elif hop.direction == "both":
        step = f"({step}|^{step})"
    if hop.hops is None:
        return step
    low, high = hop.hops
    if not high:
        return f"{step}+"
    sequences = ["/".join([step] * count) for count in range(low, high + 1)]
    return sequences[0] if len(sequences) == 1 else "(" + "|".join(sequences) + ")"


def _value(variable: str, prop: str) -> str:
    if prop == "label":
        return f"STR(?{variable}__label)"
    if prop == "name":
        return f'REPLACE(STR(?{variable}), "^.*[#/]", "")'
    return f"STR(?{variable})"


def _condition(node: Any, *, top: bool = False) -> str:
    if isinstance(node, Boolean):
        if node.op == "NOT":
            return f"!({_condition(node.parts[0], top=True)})"
        joined = (" && " if node.op == "AND" else " || ").join(_condition(part) for part in node.parts)
        return joined if top else f"({joined})"
    if node.prop == "iri" and node.op in ("=", "<>"):
        return f"?{node.variable} {'=' if node.op == '=' else '!='} {iri_term(node.value)}"
    value, text = _value(node.variable, node.prop), literal(node.value)
    if node.op == "=":
        return f"{value} = {text}"
    if node.op == "<>":
        return f"{value} != {text}"
    function = {"CONTAINS": "CONTAINS", "STARTS WITH": "STRSTARTS", "ENDS WITH": "STRENDS"}[node.op]
    return f"{function}({value}, {text})"


def _labels_used(node: Any, found: list[str]) -> None:
    if isinstance(node, Boolean):
        for part in node.parts:
            _labels_used(part, found)
    elif node is not None and node.prop == "label":
        found.append(node.variable)


def translate(match: Match) -> tuple[str, dict[str, str]]:
    """``(SPARQL, {column: Cypher name})``: the SELECT ``match`` means on the ontology's closure."""
    lines = [f"?{variable} a owl:Class ." for variable in match.variables]
    previous = match.start
    for hop in match.hops:
        lines.append(f"?{previous} {_path(hop)} ?{hop.target} .")
        # The closure makes every class its own subclass: a hop back to the same class is not an edge.
        lines.append(f"FILTER(?{previous} != ?{hop.target})")
        previous = hop.target
    labelled: list[str] = []
    _labels_used(match.where, labelled)
    labelled += [item.variable for item in match.items if item.prop == "label"]
    for variable in dict.fromkeys(labelled):
        lines.append(f"?{variable} rdfs:label ?{variable}__label .")
    if match.where is not None:
        lines.append(f"FILTER({_condition(match.where, top=True)})")
    columns: dict[str, str] = {}
    projection = []
    for item in match.items:
        if item.prop is None and item.alias == item.variable:
            projection.append(f"?{item.variable}")
            columns[item.variable] = item.alias
            continue
        column = item.alias if "." not in item.alias else f"{item.variable}__{item.prop}"
        if item.prop is None:
            expression = f"?{item.variable}"
        elif item.prop == "label":
            expression = f"?{item.variable}__label"
        else:
            expression = _value(item.variable, item.prop)
        projection.append(expression if expression == f"?{column}" else f"({expression} AS ?{column})")
        columns[column] = item.alias
    head = "SELECT " + ("DISTINCT " if match.distinct else "") + " ".join(projection)
    body = "\n".join(f"  {line}" for line in lines)
    tail = f"\nLIMIT {match.limit}" if match.limit is not None else ""
    return f"{head}\nWHERE {{\n{body}\n}}{tail}", columns


def ontology_query_cypher(*, cypher: str) -> dict[str, Any]:
    """``ontology_query`` for a Cypher text: translated, then run by ``sparql.ontology_query`` (the
    hardened path); the answer carries ``translated_sparql`` and the rows under the Cypher names
    (``a.label``). Outside the subset: ``valid: false`` with the error and :data:`SUPPORTED_HINT`."""
    try:
        sparql, columns = translate(parse(cypher))
    except CypherRefused as refusal:
        return QueryAnswer(valid=False, errors=[str(refusal)], hints=[SUPPORTED_HINT]).as_dict()
    answer = ontology_query(sparql=sparql)
    result = answer.get("result")
    if result is not None:
        result["columns"] = [columns.get(column, column) for column in result["columns"]]
        result["rows"] = [
            {columns.get(key, key): value for key, value in row.items()} for row in result["rows"]
        ]
    return {**answer, "translated_sparql": sparql}


def ontology_query_request(*, sparql: str | None = None, cypher: str | None = None) -> dict[str, Any]:
    """The ``query`` tool's input (exactly one of the two, which the schema checks) answered."""
    if cypher is not None:
        return ontology_query_cypher(cypher=cypher)
    return ontology_query(sparql=sparql or "")
