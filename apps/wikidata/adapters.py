"""Native implementations of the canonical ``wikidata.*`` tools (registered with the gateway).

The gateway calls these when the Wikidata MCP server is down (``_dispatch`` falls back on a
retryable MCP failure), and would call them directly if the wikidata connector were made native.
So each takes its arguments exactly as the upstream MCP tool does (``query``/``lang`` for the
searches, ``entity_id``/``property_id``/``lang``/``include_external_ids`` for claims, ``sparql``/``K``
for SPARQL, ``entity_id``/``max_depth``/``lang`` for the hierarchy; see
``tests/fixtures/mcp/tools_list.result.json``), plus a few the native clients can honour (``K``,
``instanceof`` and ``rerank`` for the searches, ``property_id`` for claims). Bad arguments raise
``ValidationFailed`` naming each one and what to fix.

Results have the shape the gateway returns for MCP tools (``mcp_client.call_tool``)::

    {"content": [{"type": "text", "text": <the JSON text>}], "structuredContent": {...},
     "isError": False, "source": "native"}

Structured data rather than the upstream's prose: the caller is a program, and the native clients
give GUIDs, ranks, qualifiers and references the prose leaves out.

Every request goes through the gated clients of :mod:`apps.wikidata.clients` (the shared Redis
limiters, metrics, bounded retries) with the connector's timeout as deadline. Upstream failures
propagate as ``UpstreamError`` (``retryable`` or not); labels are best effort (a failure leaves
them out, never fails the call).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from django.conf import settings

from apps.connectors.adapters import CallsShaped, register_adapter, register_argument_shape
from apps.connectors.models import RemoteTool
from apps.core.errors import RateLimited, UpstreamError, ValidationFailed
from apps.core.logging import get_logger
from apps.wikidata import action_api, clients, vectordb
from apps.wikidata import sparql as wdqs
from apps.wikidata.action_api import EntitiesResult
from apps.wikidata.labels import labels_cached
from apps.wikidata.search import entities_search
from apps.wikidata.statements import (
    ITEM_ID_RE,
    PROPERTY_ID_RE,
    EntityIdValue,
    Statement,
    entity_id_pattern,
    snak_ids,
)

logger = get_logger(__name__)

SOURCE = "native"
MAX_SPARQL_ROWS = 1000
DEFAULT_SPARQL_ROWS = 10  # the upstream execute_sparql's default K
DEFAULT_HIERARCHY_DEPTH = 5  # the upstream's default max_depth
MAX_HIERARCHY_DEPTH = 5
MAX_HIERARCHY_NODES = 100
MAX_LABEL_IDS = 100  # two wbgetentities requests at most for the labels of one answer
INSTANCE_OF = "P31"
SUBCLASS_OF = "P279"

_ENTITY_RE = entity_id_pattern("QPL", sub_entities=False)
_PROPERTY_RE = PROPERTY_ID_RE
_QID_RE = ITEM_ID_RE
_LANG_RE = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{1,8})*$")

_MISSING = object()


# --------------------------------------------------------------------------------------------- arguments


class _Arguments:
    """Collects every problem with a call's arguments, then raises one ``ValidationFailed`` listing them
    (the gateway's shape: ``details.errors = [{path, message}]``)."""

    def __init__(self, tool: str, arguments: Any, accepted: Sequence[str]) -> None:
        self.tool = tool
        self.errors: list[dict[str, str]] = []
        if not isinstance(arguments, Mapping):
            raise ValidationFailed(
                f"'arguments' of tool '{tool}' must be a JSON object, not {type(arguments).__name__}.",
                details={"tool": tool, "errors": [{"path": "$", "message": "must be an object"}]},
            )
        self.arguments: Mapping[str, Any] = arguments
        for name in sorted(set(arguments) - set(accepted)):
            self.error(name, f"unknown argument; {tool} takes {', '.join(accepted)}")

    def error(self, name: str, message: str) -> None:
        self.errors.append({"path": f"$.{name}", "message": message})

    def raw(self, name: str) -> Any:
        return self.arguments.get(name, _MISSING)

    def text(self, name: str, *, required: bool = False, default: str = "", max_length: int = 0) -> str:
        value = self.raw(name)
        if value is _MISSING or value is None:
            if required:
                self.error(name, "is required (a non-empty string)")
            return default
        if not isinstance(value, str):
            self.error(name, f"must be a string, not {type(value).__name__}")
            return default
        value = value.strip()
        if required and not value:
            self.error(name, "must not be empty")
        if max_length and len(value) > max_length:
            self.error(name, f"must be at most {max_length} characters (got {len(value)})")
        return value

    def integer(self, name: str, *, default: int, minimum: int, maximum: int | None = None) -> int:
        value = self.raw(name)
        if value is _MISSING or value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(name, f"must be an integer, not {type(value).__name__}")
            return default
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"from {minimum} to {maximum}" if maximum is not None else f"at least {minimum}"
            self.error(name, f"must be an integer {bound} (got {value})")
            return default
        return value

    def boolean(self, name: str, *, default: bool = False) -> bool:
        value = self.raw(name)
        if value is _MISSING or value is None:
            return default
        if not isinstance(value, bool):
            self.error(name, f"must be true or false, not {type(value).__name__}")
            return default
        return value

    def entity_id(self, name: str, *, required: bool, pattern: re.Pattern[str], example: str) -> str | None:
        value = self.text(name, required=required)
        if not value:
            return None
        normalized = value.upper()
        if not pattern.match(normalized):
            self.error(name, f"must be a Wikidata id such as {example}, not {value!r}")
            return None
        return normalized

    def language(self, name: str = "lang", *, allow_all: bool = False) -> str:
        value = self.text(name, default="en").lower() or "en"
        if allow_all and value == "all":
            return value
        if not _LANG_RE.match(value):
            self.error(name, f"must be a language code such as en, de or pt-br, not {value!r}")
            return "en"
        return value

    def instanceof(self, name: str = "instanceof") -> list[str]:
        value = self.raw(name)
        if value is _MISSING or value is None:
            return []
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            self.error(name, "must be item ids (Q5) as a list or a comma-separated string")
            return []
        qids = list(dict.fromkeys(item.strip().upper() for item in items if item.strip()))
        wrong = [qid for qid in qids if not _QID_RE.match(qid)]
        if wrong:
            self.error(name, f"takes item ids such as Q5, not {', '.join(wrong)}")
            return []
        if len(qids) > vectordb.MAX_INSTANCEOF:
            self.error(name, f"takes at most {vectordb.MAX_INSTANCEOF} item ids (got {len(qids)})")
            return []
        return qids

    def check(self) -> None:
        if self.errors:
            self.errors.sort(key=lambda item: (item["path"], item["message"]))
            listed = "; ".join(f"{item['path']}: {item['message']}" for item in self.errors)
            raise ValidationFailed(
                f"Invalid arguments for tool '{self.tool}': {listed}.",
                details={"tool": self.tool, "errors": self.errors},
            )


# ----------------------------------------------------------------------------------------------- helpers


def tool_result(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` in the MCP ``CallToolResult`` shape the gateway returns, marked as answered natively."""
    return {
        "content": [{"type": "text", "text": json.dumps(data, ensure_ascii=False)}],
        "structuredContent": data,
        "isError": False,
        "source": SOURCE,
    }


def _deadline(tool: RemoteTool) -> float:
    """The connector's timeout from now: the same bound an MCP call of this tool has."""
    connector = getattr(tool, "connector", None)
    seconds = getattr(connector, "timeout_seconds", None) or settings.CORTEX_HTTP_READ_TIMEOUT
    return time.monotonic() + float(seconds)


def _labels(ids: Iterable[str], *, language: str, deadline: float, what: str) -> dict[str, str]:
    """Id → label for up to :data:`MAX_LABEL_IDS` ids (shared with the fact workflow's Redis cache);
    best effort: the labels got before a failure."""
    wanted = [i for i in dict.fromkeys(ids) if _ENTITY_RE.match(i)][:MAX_LABEL_IDS]
    lookup = labels_cached(wanted, language=language, deadline=deadline)
    if lookup.error is not None:
        logger.warning("wikidata.tool.labels_failed", what=what, error=lookup.error.message)
    return lookup.labels


def _terms(ids: Sequence[str], *, language: str, deadline: float) -> EntitiesResult | None:
    """Labels and descriptions of search hits; best effort."""
    if not ids:
        return None
    client = clients.action_api_client(deadline=deadline)
    try:
        return clients.with_retries(
            lambda: client.get_entities(
                list(ids)[:MAX_LABEL_IDS], props=("labels", "descriptions"), languages=[language]
            ),
            what="search hit labels",
            deadline=deadline,
        )
    except (UpstreamError, RateLimited, ValidationFailed) as error:
        logger.warning("wikidata.tool.labels_failed", what="search hits", error=error.message)
        return None


# ------------------------------------------------------------------------------------------------ search


def _vector_search(tool: RemoteTool, arguments: dict[str, Any], *, kind: vectordb.Kind) -> dict[str, Any]:
    """The shared entity search with the tool's options. Keyword search stands in only when the vector
    database fails, not when it finds nothing: that may be the answer (an ``instanceof`` filter, which
    keyword search cannot apply, matched nothing)."""
    accepted = ["query", "lang", "K", "instanceof", "rerank"]
    if kind == "property":
        accepted.append("exclude_external_ids")
    args = _Arguments(tool.name, arguments, accepted)
    query = args.text("query", required=True, max_length=vectordb.MAX_QUERY_LENGTH)
    lang = args.language(allow_all=True)
    k = args.integer("K", default=vectordb.DEFAULT_K, minimum=1, maximum=vectordb.MAX_K)
    instanceof = args.instanceof()
    rerank = args.boolean("rerank")
    exclude_external_ids = args.boolean("exclude_external_ids")
    args.check()

    deadline = _deadline(tool)
    found = entities_search(
        query,
        kind=kind,
        language=lang,
        k=k,
        deadline=deadline,
        instanceof=instanceof,
        rerank=rerank,
        exclude_external_ids=exclude_external_ids,
        tool=tool.name,
    )
    if found.error is not None:
        raise found.error
    data: dict[str, Any] = {"query": query, "lang": lang, "kind": kind, "via": found.via}
    if found.via == "keyword":
        # The vector database is an experimental service; Wikidata's own keyword search stood in.
        assert found.vector_error is not None  # the only fallback this tool asks for
        data["fallback"] = {"from": "vector", "reason": found.vector_error.message}
        data["results"] = [
            {
                "id": hit["id"],
                "kind": kind,
                "rank": rank,
                "source": "keyword",
                **{key: hit[key] for key in ("label", "description", "match", "aliases") if hit.get(key)},
            }
            for rank, hit in enumerate(found.keyword_hits, start=1)
        ]
        return tool_result(data)
    terms_language = "en" if lang == "all" else lang
    results = [hit.as_dict() for hit in found.vector_hits]
    terms = _terms([hit.id for hit in found.vector_hits], language=terms_language, deadline=deadline)
    if terms is not None:
        for result in results:
            entity = terms.get(result["id"])
            if entity is not None:
                result.setdefault("label", entity.label(terms_language))
                result.setdefault("description", entity.description(terms_language))
    data["results"] = results
    return tool_result(data)


@register_adapter("wikidata.vector_search_items")
def vector_search_items(tool: RemoteTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """Items for a text: the vector database, else keyword search. Upstream: ``search_items``."""
    return _vector_search(tool, arguments, kind="item")


@register_adapter("wikidata.vector_search_properties")
def vector_search_properties(tool: RemoteTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """Properties for a text: the vector database, else keyword search. Upstream: ``search_properties``."""
    return _vector_search(tool, arguments, kind="property")


# ------------------------------------------------------------------------------------------------ claims


def _statement_ids(statement: Statement) -> list[str]:
    """The ids a reader needs labels for: subject, and each main and qualifier snak's property and entity
    value or unit (not references: bounded)."""
    ids = [statement.entity_id]
    for snak in (statement.mainsnak, *statement.qualifiers):
        ids.extend(snak_ids(snak))
    return ids


def _statement_data(statement: Statement) -> dict[str, Any]:
    data = statement.as_dict()
    try:
        data["statementUri"] = wdqs.statement_uri(statement.guid)
    except ValidationFailed:
        pass  # a GUID Wikibase did not mint (none in practice): the statement is still reported
    return data


@register_adapter("wikidata.get_claims")
def get_claims(tool: RemoteTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The statements of an entity (or of one property): every rank, with GUIDs, qualifiers and
    references, from ``wbgetclaims``. Upstream: ``get_statements`` / ``get_statement_values``.

    Like the upstream, external identifiers are left out unless ``include_external_ids`` (or the
    property asked for is one).
    """
    args = _Arguments(tool.name, arguments, ["entity_id", "property_id", "lang", "include_external_ids"])
    entity_id = args.entity_id("entity_id", required=True, pattern=_ENTITY_RE, example="Q42 or P31")
    property_id = args.entity_id("property_id", required=False, pattern=_PROPERTY_RE, example="P31")
    lang = args.language()
    include_external_ids = args.boolean("include_external_ids")
    args.check()
    assert entity_id is not None  # checked above

    deadline = _deadline(tool)
    client = clients.action_api_client(deadline=deadline)
    statements = clients.with_retries(
        lambda: client.get_claims(entity_id, property_id=property_id), what="wbgetclaims", deadline=deadline
    )
    omitted = 0
    if not include_external_ids and property_id is None:
        kept = [s for s in statements if s.mainsnak.datatype != "external-id"]
        omitted = len(statements) - len(kept)
        statements = kept
    labels = _labels(
        (i for s in statements for i in _statement_ids(s)) if statements else [entity_id],
        language=lang,
        deadline=deadline,
        what="claims",
    )
    data: dict[str, Any] = {
        "entity_id": entity_id,
        **({"property_id": property_id} if property_id else {}),
        "lang": lang,
        "count": len(statements),
        "omittedExternalIds": omitted,
        "statements": [_statement_data(statement) for statement in statements],
        "labels": labels,
    }
    return tool_result(data)


# Seed 000 calls ``callTool("wikidata.get_claims", {qids: ["Q937"]})``; the upstream's get_statements
# takes one ``entity_id``. Each QID is one upstream call, one after another under the connector's rate
# limit (burst 5, then one per 2 s by default): 10 ids answer within ~10 s, and an agent's top-N
# (the seed's story 4 takes the top 5) fits.
MAX_CLAIMS_QIDS = 10
_CLAIM_ID_FIELDS = ("entity_id", "qid", "qids")


def _claims_shape_refused(message: str, path: str) -> ValidationFailed:
    return ValidationFailed(
        f"Invalid arguments for tool 'wikidata.get_claims': {path}: {message}.",
        details={"tool": "wikidata.get_claims", "errors": [{"path": path, "message": message}]},
    )


def get_claims_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The upstream's schema (``entity_id`` required) plus ``qid`` and ``qids``; exactly one of the three.

    Said in ``description`` rather than ``oneOf``: MCP hosts refuse combinators at a tool schema's top."""
    item_id = {"type": "string", "pattern": _QID_RE.pattern.replace("\\Z", "$")}
    properties = schema.get("properties")
    schema["properties"] = {
        **(properties if isinstance(properties, dict) else {}),
        "qid": {**item_id, "description": "One Wikidata item id, in place of entity_id."},
        "qids": {
            "type": "array",
            "items": item_id,
            "minItems": 1,
            "maxItems": MAX_CLAIMS_QIDS,
            "description": f"Up to {MAX_CLAIMS_QIDS} Wikidata item ids, asked one by one; the answer "
            "lists each one's result in this order under results[{qid, result}].",
        },
    }
    required = [name for name in schema.get("required") or [] if name != "entity_id"]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    schema["description"] = "Give exactly one of entity_id, qid or qids."
    return schema


@register_argument_shape("wikidata.get_claims", published_schema=get_claims_schema)
def get_claims_shape(arguments: dict[str, Any]) -> CallsShaped | None:
    """``{qid: "Q937"}`` is ``{entity_id: "Q937"}``; ``{qids: [...]}`` is one call per distinct QID, in
    the given order, answered together. The other arguments (``lang``, ``include_external_ids``, ...)
    go to every call. ``entity_id`` (or no id) is the upstream's own shape (``None``: nothing to do)."""
    given = [name for name in _CLAIM_ID_FIELDS if name in arguments]
    if given in ([], ["entity_id"]):
        # The upstream's shape; with no id at all its schema check names entity_id with every other error.
        return None
    if len(given) > 1:
        raise _claims_shape_refused(
            f"give exactly one of 'entity_id', 'qid' or 'qids', not {' and '.join(repr(n) for n in given)}",
            f"$.{given[-1]}",
        )
    rest = {key: value for key, value in arguments.items() if key not in _CLAIM_ID_FIELDS}
    if given == ["qid"]:
        qid = arguments["qid"]
        if not isinstance(qid, str) or not _QID_RE.match(qid):
            raise _claims_shape_refused(f"{qid!r} is not a Wikidata item id such as 'Q937'", "$.qid")
        return CallsShaped(calls=[(qid, {**rest, "entity_id": qid})], key="qid", merged=False)
    qids = arguments["qids"]
    if not isinstance(qids, list) or not qids:
        raise _claims_shape_refused("must be a non-empty list of item ids such as ['Q937']", "$.qids")
    if len(qids) > MAX_CLAIMS_QIDS:
        raise _claims_shape_refused(
            f"at most {MAX_CLAIMS_QIDS} ids per call, not {len(qids)}; split them over several calls",
            "$.qids",
        )
    for index, qid in enumerate(qids):
        if not isinstance(qid, str) or not _QID_RE.match(qid):
            raise _claims_shape_refused(
                f"{qid!r} is not a Wikidata item id such as 'Q937'", f"$.qids[{index}]"
            )
    distinct = list(dict.fromkeys(qids))  # a repeated id is asked once
    return CallsShaped(calls=[(qid, {**rest, "entity_id": qid}) for qid in distinct], key="qid", merged=True)


# ------------------------------------------------------------------------------------------------ SPARQL


@register_adapter("wikidata.sparql")
def sparql(tool: RemoteTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """A read-only SELECT or ASK on the Wikidata Query Service, at most ``K`` rows returned.
    Upstream: ``execute_sparql``. Updates (and CONSTRUCT/DESCRIBE) are refused."""
    args = _Arguments(tool.name, arguments, ["sparql", "K"])
    query = args.text("sparql", required=True, max_length=wdqs.MAX_QUERY_LENGTH)
    k = args.integer("K", default=DEFAULT_SPARQL_ROWS, minimum=1, maximum=MAX_SPARQL_ROWS)
    args.check()
    try:
        form = wdqs.ensure_read_only(query)
    except ValidationFailed as error:
        raise ValidationFailed(
            f"Invalid arguments for tool '{tool.name}': $.sparql: {error.message}.",
            details={"tool": tool.name, "errors": [{"path": "$.sparql", "message": error.message}]},
        ) from error
    if form not in {"SELECT", "ASK"}:
        message = f"must be a SELECT or ASK query, not {form} (this tool returns result rows, not RDF)"
        raise ValidationFailed(
            f"Invalid arguments for tool '{tool.name}': $.sparql: {message}.",
            details={"tool": tool.name, "errors": [{"path": "$.sparql", "message": message}]},
        )

    deadline = _deadline(tool)
    client = clients.sparql_client(deadline=deadline)
    result = clients.with_retries(lambda: client.select(query), what="sparql", deadline=deadline)
    data = result.as_dict()
    data["form"] = form
    data["rowCount"] = len(result.rows)
    data["truncated"] = len(result.rows) > k
    data["rows"] = data["rows"][:k]
    return tool_result(data)


# --------------------------------------------------------------------------------------------- hierarchy


def _parents(statements: Iterable[Statement], property_id: str) -> list[str]:
    """The item ids a property's non-deprecated statements point at, in statement order."""
    found: dict[str, None] = {}
    for statement in statements:
        value = statement.value
        if (
            statement.property_id == property_id
            and not statement.deprecated
            and isinstance(value, EntityIdValue)
            and _ENTITY_RE.match(value.id)
        ):
            found.setdefault(value.id, None)
    return list(found)


@register_adapter("wikidata.get_hierarchy")
def get_hierarchy(tool: RemoteTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """Instance-of (P31) and subclass-of (P279) of an entity and of its classes, up to ``max_depth``
    levels (at most :data:`MAX_HIERARCHY_DEPTH`, :data:`MAX_HIERARCHY_NODES` entities), with labels.
    Upstream: ``get_instance_and_subclass_hierarchy``.

    One ``wbgetentities`` per level (labels and claims, batched by 50) and one for the labels of
    the last level: the answer is a graph (``nodes`` keyed by id, each with ``instanceof`` and
    ``subclassof`` ids), not the upstream's nested tree, which repeats shared ancestors and grows
    with every path.
    """
    args = _Arguments(tool.name, arguments, ["entity_id", "max_depth", "lang"])
    root = args.entity_id("entity_id", required=True, pattern=_ENTITY_RE, example="Q42")
    requested_depth = args.integer("max_depth", default=DEFAULT_HIERARCHY_DEPTH, minimum=0)
    lang = args.language()
    args.check()
    assert root is not None  # checked above
    max_depth = min(requested_depth, MAX_HIERARCHY_DEPTH)

    deadline = _deadline(tool)
    client = clients.action_api_client(deadline=deadline)

    def fetch(ids: list[str], props: tuple[str, ...]) -> EntitiesResult:
        return clients.with_retries(
            lambda: client.get_entities(ids, props=props, languages=[lang]),
            what="hierarchy",
            deadline=deadline,
        )

    nodes: dict[str, dict[str, Any]] = {root: {"depth": 0}}
    truncated = False  # set when ancestors the caller asked for are left out
    frontier = [root]
    for depth in range(max_depth):
        if not frontier:
            break
        found = fetch(frontier, ("labels", "claims"))
        next_frontier: list[str] = []
        for entity_id in frontier:
            node = nodes[entity_id]
            entity = found.get(entity_id)
            if entity is None:
                if entity_id == root:
                    raise UpstreamError(
                        f"Entity {root} not found on Wikidata.",
                        details={"upstream": action_api.UPSTREAM, "entityId": root, "reason": "missing"},
                    )
                node["missing"] = True
                continue
            node["label"] = entity.label(lang)
            for key, property_id in (("instanceof", INSTANCE_OF), ("subclassof", SUBCLASS_OF)):
                kept: list[str] = []
                for parent in _parents(entity.statements, property_id):
                    if parent not in nodes:
                        if len(nodes) >= MAX_HIERARCHY_NODES:
                            truncated = True
                            continue
                        nodes[parent] = {"depth": depth + 1}
                        next_frontier.append(parent)
                    kept.append(parent)
                node[key] = kept
        frontier = next_frontier
    if frontier and requested_depth > max_depth:
        truncated = True  # the classes of the last level have parents within the depth asked for
    if max_depth == 0 or frontier:
        # The last level (or the root alone): labels only, their own parents are past max_depth.
        last = [root] if max_depth == 0 else frontier
        labels = _labels(last, language=lang, deadline=deadline, what="hierarchy")
        for entity_id in last:
            nodes[entity_id]["label"] = labels.get(entity_id)
    data = {
        "entity_id": root,
        "lang": lang,
        "maxDepth": max_depth,
        "truncated": truncated,
        "nodes": {
            entity_id: {
                "id": entity_id,
                "label": node.get("label"),
                "depth": node["depth"],
                **{key: node[key] for key in ("instanceof", "subclassof", "missing") if key in node},
            }
            for entity_id, node in nodes.items()
        },
    }
    return tool_result(data)


ADAPTERS: dict[str, Callable[[RemoteTool, dict[str, Any]], dict[str, Any]]] = {
    "wikidata.vector_search_items": vector_search_items,
    "wikidata.vector_search_properties": vector_search_properties,
    "wikidata.get_claims": get_claims,
    "wikidata.sparql": sparql,
    "wikidata.get_hierarchy": get_hierarchy,
}
