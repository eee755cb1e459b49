"""What the MCP server does, independent of the SDK and the transport.

- ``mcp_tools_list``: CortexWeb's own tools, then the registry's published tools (the gateway's
  catalogue) under their canonical names. A catalogue tool named like an own tool is served by
  the own tool (``arxiv.search`` is both).
- ``mcp_tool_call``: authorise (the REST twin's scope), validate (the twin's input schema), run
  (the twin's service, or the gateway for catalogue tools), record (``ToolCall`` row, event,
  metrics) and render: ``ToolOutcome`` with structured content, text and ``is_error``. Every
  failure a client can cause or an upstream can report becomes an ``is_error`` outcome carrying
  the error shape's code and message; only an unknown tool name is raised (``UnknownTool``),
  because the protocol answers it with a JSON-RPC error. A Postgres or Redis outage is an
  ``is_error`` outcome too (``service_unavailable``), marked ``unavailable`` so that the HTTP edge,
  which has a status to say it with, answers REST's 503 instead.
- Resources (``cortexweb://…``) and the ``ground_answer`` prompt.

The functions are synchronous (Django ORM); the SDK handlers in ``server.py`` run them in threads.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import close_old_connections
from pydantic import ValidationError

from apps.connectors.gateway import tool_call, tool_call_record
from apps.connectors.models import CallTransport, RemoteTool, connectors_switched_off
from apps.connectors.selectors import (
    per_registry_version,
    service_map_cached,
    tool_input_schema,
    tool_resolve,
    tools_filtered,
)
from apps.core.errors import (
    ApplicationError,
    AuthenticationRequired,
    DependencyUnavailable,
    FeatureDisabled,
    NotFound,
    PermissionDenied,
    ValidationFailed,
    dependency_outage,
    error_payload,
    log_dependency_outage,
    pydantic_errors_to_details,
    visible_details,
)
from apps.core.logging import get_logger, reset_correlation_id, set_correlation_id
from apps.core.models import ApiToken, TokenScope
from apps.core.services import api_token_authenticate
from apps.core.text import unstorable_paths, unstorable_text_error
from apps.knowledge import selectors as knowledge_selectors
from apps.mcp_server import metrics
from apps.mcp_server.tools import CORTEX_TOOLS, CORTEX_TOOLS_BY_NAME, CallContext, CortexTool
from apps.wikidata import provenance
from apps.wikidata import selectors as wikidata_selectors

logger = get_logger(__name__)

OWN_CONNECTOR = "cortexweb"


class UnknownTool(Exception):
    """``tools/call`` named no tool this server lists (a JSON-RPC invalid-params error)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown tool: {name}. tools/list names the tools this server has.")
        self.name = name


class ResourceNotFound(Exception):
    """``resources/read`` of a URI this server has no resource for."""

    def __init__(self, uri: str, reason: str) -> None:
        super().__init__(f"Resource not found: {uri} ({reason})")
        self.uri = uri


class ResourceDenied(Exception):
    """``resources/read`` without the token the resource needs; carries the error shape."""

    def __init__(self, error: ApplicationError) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.error = error


@dataclass(frozen=True)
class Caller:
    """Who calls, as each transport knows it.

    On HTTP the edge has already authenticated a presented token (``token``; a bad one never gets
    this far). On stdio the token is the process's ``CORTEX_API_TOKEN`` (``raw_token``), checked on
    every call so that revocation applies at once.
    """

    transport: str
    token: ApiToken | None = None
    raw_token: str = ""
    # Why a presented token cannot be used now although it is valid (its rate limit): calls that
    # need it get this error as their result.
    token_error: ApplicationError | None = None
    base_url: str = ""
    correlation_id: str | None = None

    def authenticated(self) -> ApiToken:
        if self.token_error is not None:
            raise self.token_error
        if self.token is not None:
            return self.token
        if self.raw_token:
            return api_token_authenticate(raw_token=self.raw_token)
        how = (
            "set CORTEX_API_TOKEN in the server's environment"
            if self.transport == CallTransport.MCP_STDIO
            else "send 'Authorization: Bearer <token>'"
        )
        raise AuthenticationRequired(f"This needs an API token: {how}.")


@dataclass
class ToolOutcome:
    structured: dict[str, Any] | None
    text: str
    is_error: bool = False
    extra_text: list[str] = field(default_factory=list)
    # Set when Postgres or Redis failed the call: the answer is then an outage, not the tool's.
    unavailable: DependencyUnavailable | None = None


# --- Listing -----------------------------------------------------------------------------------


def _own_tools_published() -> list[CortexTool]:
    switched_off = connectors_switched_off()
    return [tool for tool in CORTEX_TOOLS if tool.connector not in switched_off]


def _own_tool_listing(tool: CortexTool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema(),
        "outputSchema": tool.output_schema(),
        "annotations": {
            "title": tool.title,
            "readOnlyHint": tool.read_only,
            "openWorldHint": tool.open_world,
            "idempotentHint": tool.idempotent,
        },
        "_meta": {"cortexweb/scope": tool.scope},
    }


def _catalogue_listing(tool: RemoteTool) -> dict[str, Any]:
    # The upstream's own hints (synced) where it gave them; every catalogue tool reaches an upstream.
    annotations = {k: v for k, v in (tool.annotations or {}).items() if k.endswith("Hint") or k == "title"}
    annotations["openWorldHint"] = True
    return {
        "name": tool.name,
        "description": tool.description
        or tool.upstream_description
        or f"{tool.name} ({tool.connector.slug})",
        "inputSchema": tool_input_schema(tool),
        "annotations": annotations,
        "_meta": {
            "cortexweb/scope": TokenScope.UPSTREAM,
            "cortexweb/connector": tool.connector.slug,
            "cortexweb/tags": tool.tags,
        },
    }


def _catalogue_tools() -> list[RemoteTool]:
    return [tool for tool in tools_filtered() if tool.name not in CORTEX_TOOLS_BY_NAME]


def _catalogue_knows(name: str) -> bool:
    """A registry tool by canonical name or alias (the gateway resolves aliases as on REST)."""
    try:
        tool_resolve(name=name)
    except NotFound:
        return False
    return True


def mcp_tools_list() -> list[dict[str, Any]]:
    """Every tool as ``tools/list`` shows it (MCP JSON): own tools first, then the catalogue.

    The same for every caller, asked at the start of every agent session, and about 100 ms to build
    at 1,000 catalogue tools (model instances, JSON columns): built once per registry version per
    process, as the planner's tool index is. The dicts are shared: callers must not change them.
    """
    return list(per_registry_version("mcp.tools_list", _tools_listed))


def _tools_listed() -> tuple[dict[str, Any], ...]:
    return tuple(
        [_own_tool_listing(tool) for tool in _own_tools_published()]
        + [_catalogue_listing(tool) for tool in _catalogue_tools()]
    )


def mcp_tool_scope(name: str) -> str | None:
    """The scope calling ``name`` needs, None when it needs no token (the HTTP edge answers 401
    before the call when one is needed and missing).

    Own tools follow their REST twin (the service map is public); catalogue tools need ``upstream``,
    as ``/v1/tools/call`` does. An unknown name needs none: the protocol's unknown-tool error says no
    more than the public ``tools/list`` does.
    """
    own = CORTEX_TOOLS_BY_NAME.get(name)
    if own is not None:
        return own.scope
    return TokenScope.UPSTREAM if _catalogue_knows(name) else None


def mcp_tool_needs_token(name: str) -> bool:
    return mcp_tool_scope(name) is not None


# --- Calling -----------------------------------------------------------------------------------


def _arguments_check(arguments: Any) -> dict[str, Any]:
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        raise ValidationFailed("'arguments' must be a JSON object.", details={"fields": []})
    # The same text check as the HTTP edge's (apps/core/text.py): NUL and lone surrogates are refused.
    if bad := unstorable_paths(arguments, "arguments"):
        raise unstorable_text_error(bad)
    return arguments


def _validated(tool: CortexTool, arguments: dict[str, Any]) -> Any:
    try:
        return tool.input_model.model_validate(arguments)
    except ValidationError as error:
        details = pydantic_errors_to_details([dict(item) for item in error.errors()])
        listed = "; ".join(
            f"{item['path'] or '(arguments)'}: {item['message']}" for item in details["fields"]
        )
        raise ValidationFailed(
            f"Invalid arguments for tool '{tool.name}': {listed}.", details=details
        ) from error


def _scope_check(tool_name: str, scope: str | None, caller: Caller) -> ApiToken | None:
    """The caller's token when ``scope`` needs one (raising when it is missing or lacks the scope)."""
    if scope is None:
        return caller.token
    token = caller.authenticated()
    if not token.has_scope(scope):
        raise PermissionDenied(
            f"Tool '{tool_name}' needs a token with the '{scope}' scope.",
            details={"required": scope, "granted": token.scopes},
        )
    return token


def _feature_check(tool: CortexTool) -> None:
    if tool.connector in connectors_switched_off():
        flag = settings.CORTEX_CONNECTOR_FEATURE_FLAGS[tool.connector]
        raise FeatureDisabled(
            f"Tool '{tool.name}' is switched off ({flag} is false).", details={"flag": flag}
        )


def _own_call(tool: CortexTool, arguments: Any, caller: Caller, token: ApiToken | None) -> ToolOutcome:
    payload = _validated(tool, _arguments_check(arguments))
    context = CallContext(token=token, transport=caller.transport, base_url=caller.base_url)
    result = tool.handler(payload, context)
    structured = tool.output_model.model_validate(result).model_dump(mode="json", exclude_none=True)
    # A run that ended failed is the run's answer and a failed call: the agent must not read it as data.
    failed_run = isinstance(structured.get("error"), dict)
    return ToolOutcome(structured=structured, text=tool.summary(structured), is_error=failed_run)


def _catalogue_call(name: str, arguments: Any, caller: Caller, token: ApiToken | None) -> ToolOutcome:
    answer = tool_call(
        name=name, arguments=_arguments_check(arguments), token=token, transport=caller.transport
    )
    upstream = answer["result"]
    texts = [
        item["text"]
        for item in (upstream.get("content") or [] if isinstance(upstream, dict) else [])
        if isinstance(item, dict) and item.get("type") == "text"
    ]
    return ToolOutcome(structured=answer, text="\n".join(texts) or json.dumps(upstream, ensure_ascii=False))


def _error_outcome(error: ApplicationError, *, token: ApiToken | None = None) -> ToolOutcome:
    # Upstream URLs only for admin-scope tokens, as on /v1/.
    details = visible_details(error, privileged=token is not None and token.has_scope(TokenScope.ADMIN))
    return ToolOutcome(
        structured=None,
        text=f"{error.code}: {error.message}",
        is_error=True,
        extra_text=[json.dumps(error_payload(error.code, error.message, details), ensure_ascii=False)],
        unavailable=error if isinstance(error, DependencyUnavailable) else None,
    )


def mcp_outage_outcome(outage: DependencyUnavailable) -> ToolOutcome:
    """The result of a call that an outage stopped before it reached the tool (resolving its name)."""
    return _error_outcome(outage)


def mcp_tool_call(*, name: str, arguments: Any, caller: Caller) -> ToolOutcome:
    """Run one ``tools/call``; raises ``UnknownTool``, and an outage while resolving a name that is not
    an own tool's. Records every call of an own tool here (catalogue calls are recorded by the
    gateway), and counts every call in the MCP metrics."""
    started = time.perf_counter()
    own = CORTEX_TOOLS_BY_NAME.get(name)
    if own is None and not _catalogue_knows(name):
        metrics.mcp_tool_calls_total.labels(tool="(unknown)", outcome="unknown_tool").inc()
        raise UnknownTool(name)
    error: BaseException | None = None
    token: ApiToken | None = caller.token
    try:
        if own is not None:
            _feature_check(own)
            token = _scope_check(name, own.scope, caller)
            outcome = _own_call(own, arguments, caller, token)
        else:
            token = _scope_check(name, TokenScope.UPSTREAM, caller)  # as POST /v1/tools/call
            outcome = _catalogue_call(name, arguments, caller, token)
    except ApplicationError as application_error:
        error = application_error
        outcome = _error_outcome(application_error, token=token)
    except Exception as unexpected:
        if (outage := dependency_outage(unexpected)) is not None:
            # Postgres or Redis is down or stalled (authenticating, counting or in the tool): an
            # operations matter the caller may retry, as REST's 503 says, not a bug.
            log_dependency_outage(unexpected, outage)
            error = outage
            outcome = _error_outcome(outage, token=token)
        else:
            # A bug, not the caller's doing: the trace goes to the log, the caller gets the correlation id.
            logger.exception("mcp.tool_failed", tool=name)
            error = unexpected
            outcome = ToolOutcome(
                structured=None,
                text="internal_error: The tool failed unexpectedly; operators can find it in the logs "
                f"by correlation id {caller.correlation_id or '(none)'}.",
                is_error=True,
            )
    if own is not None:
        _own_call_record(name, started=started, token=token, transport=caller.transport, error=error)
    outcome_label = "ok" if error is None else getattr(error, "code", "internal_error")
    metrics.mcp_tool_calls_total.labels(tool=name, outcome=outcome_label).inc()
    metrics.mcp_tool_duration_seconds.labels(tool=name).observe(time.perf_counter() - started)
    return outcome


def _own_call_record(
    name: str, *, started: float, token: ApiToken | None, transport: str, error: BaseException | None
) -> None:
    try:
        tool_call_record(
            tool=None,
            tool_name=name,
            connector_slug=OWN_CONNECTOR,
            requested_name=name,
            upstream_name="",
            started=started,
            token=token,
            transport=transport,
            error=error,
        )
    except Exception as failed:
        if (outage := dependency_outage(failed)) is None:
            raise
        # The answer stands (the outage may be what it reports); only its ToolCall row is lost.
        log_dependency_outage(failed, outage)


def mcp_call_in_thread(caller: Caller, work: Any, /, *args: Any, **kwargs: Any) -> Any:
    """Run ``work`` as a worker thread serving one MCP request: the caller's correlation id on every
    log line, and the thread's database connection handled as Django does around a request. A
    Postgres or Redis outage is raised as ``DependencyUnavailable`` (logged once), the 503 REST
    answers, for the transport to say in its own terms."""
    token = set_correlation_id(caller.correlation_id)
    try:
        close_old_connections()
        return work(*args, **kwargs)
    except Exception as error:
        if (outage := dependency_outage(error)) is None:
            raise
        log_dependency_outage(error, outage)
        raise outage from error
    finally:
        close_old_connections()
        reset_correlation_id(token)


# --- Resources ---------------------------------------------------------------------------------

SERVICE_MAP_URI = "cortexweb://service-map"
RESOURCE_TEMPLATES: list[dict[str, str]] = [
    {
        "uriTemplate": "cortexweb://facts/runs/{id}",
        "name": "fact-run",
        "title": "A fact run",
        "description": "A fact run and its facts with provenance (as facts.run returns it).",
        "mimeType": "application/json",
    },
    {
        "uriTemplate": "cortexweb://facts/runs/{id}/prov.ttl",
        "name": "fact-run-prov",
        "title": "A fact run's PROV-O export",
        "description": "The run's provenance as PROV-O Turtle: each fact wasDerivedFrom its Wikidata "
        "statement.",
        "mimeType": "text/turtle",
    },
    {
        "uriTemplate": "cortexweb://knowledge/{entryId}",
        "name": "knowledge-entry",
        "title": "A knowledge entry",
        "description": "A curated knowledge entry (e.g. SEC-022) with its source and URL.",
        "mimeType": "application/json",
    },
]
_RUN_URI = re.compile(r"^cortexweb://facts/runs/(?P<id>[^/]+)(?P<prov>/prov\.ttl)?$")
_ENTRY_URI = re.compile(r"^cortexweb://knowledge/(?P<id>[^/]+)$")


def mcp_resources_list() -> list[dict[str, str]]:
    return [
        {
            "uri": SERVICE_MAP_URI,
            "name": "service-map",
            "title": "The signed service map",
            "description": "Every connector and its published tools, signed (public).",
            "mimeType": "application/json",
        }
    ]


def mcp_resource_needs_token(uri: str) -> bool:
    return uri != SERVICE_MAP_URI


@dataclass(frozen=True)
class ResourceContent:
    uri: str
    text: str
    mime_type: str


def mcp_resource_read(*, uri: str, caller: Caller) -> ResourceContent:
    """The resource's text; ``ResourceNotFound`` for unknown URIs and ids, ``ResourceDenied`` without
    a token with the ``read`` scope (everything but the service map needs one)."""
    if uri == SERVICE_MAP_URI:
        return ResourceContent(uri, service_map_cached().body.decode(), "application/json")
    run_match, entry_match = _RUN_URI.match(uri), _ENTRY_URI.match(uri)
    if not (run_match or entry_match):
        raise ResourceNotFound(uri, "no resource has this URI; resources/templates/list shows the forms")
    try:
        _scope_check(uri, TokenScope.READ, caller)
    except ApplicationError as error:
        raise ResourceDenied(error) from error
    try:
        if run_match:
            try:
                run_id = UUID(run_match["id"])
            except ValueError as error:
                raise ResourceNotFound(uri, "a fact run id is a UUID") from error
            run = wikidata_selectors.fact_run_get(run_id=run_id)
            if run_match["prov"]:
                return ResourceContent(uri, provenance.fact_run_prov(run=run, fmt="turtle"), "text/turtle")
            outcome = wikidata_selectors.fact_run_outcome(run=run, base_url=caller.base_url)
            return ResourceContent(uri, json.dumps(outcome, ensure_ascii=False), "application/json")
        entry = knowledge_selectors.entry_get(entry_id=entry_match["id"])  # type: ignore[index]
        return ResourceContent(
            uri, json.dumps(knowledge_selectors.entry_as_dict(entry), ensure_ascii=False), "application/json"
        )
    except NotFound as error:
        raise ResourceNotFound(uri, error.message) from error


# --- The prompt --------------------------------------------------------------------------------

GROUND_ANSWER = {
    "name": "ground_answer",
    "title": "Answer a question with verifiable grounding",
    "description": "How to answer a question with CortexWeb's tools: gather facts and knowledge, draft, "
    "verify the draft, and cite statement GUIDs and knowledge entry ids.",
    "arguments": [{"name": "question", "description": "The question to answer.", "required": True}],
}


def ground_answer_prompt(*, question: str) -> str:
    """The text of ``ground_answer``: the order in which the tools work together."""
    question = " ".join(question.split())
    if not question:
        raise ValidationFailed("The prompt argument 'question' must not be empty.")
    return (
        f"Answer this question with claims you can verify: {question}\n\n"
        "1. Gather evidence before you write:\n"
        "   - facts.query with the question for Wikidata statements (if it returns a runId still "
        "running, poll facts.run); each result's metadata.wikidata has the QID and claimGuid;\n"
        "   - knowledge.search with the question for curated entries (ids such as SEC-022);\n"
        "   - arxiv.search when the question is about research.\n"
        "2. Draft the answer from that evidence only.\n"
        "3. Call grounding.ground with the draft. Fix every claim it marks contradicted (use its "
        "correction) and say plainly which claims stay unverified.\n"
        "4. Cite as you go: a Wikidata statement by its claimGuid (e.g. Q42$…), a knowledge entry by "
        "its id, a paper by its arXiv id. Never cite what no tool returned."
    )
