"""The tool gateway: call tools by canonical name, and sync MCP connectors' tool lists.

``tool_call`` resolves a name or alias, checks the arguments against the tool's
input schema, waits for the connector's shared rate limit, dispatches to the MCP
server or native adapter, recognises failures the upstream reports as ordinary
text, and records every call (row, metrics, event).

``connector_sync`` reads an MCP server's ``tools/list`` and records next to the
operator's catalogue what the upstream calls each tool now, its description and
input schema, and whether it drifted. It never touches names, tags, scopes or
descriptions: those are the operator's.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

from apps.connectors import adapters, mcp_client, schema_refs
from apps.connectors import metrics as gateway_metrics
from apps.connectors.models import (
    CallTransport,
    Connector,
    DriftState,
    RemoteTool,
    ToolCall,
    ToolCallStatus,
    Transport,
    connectors_switched_off,
)
from apps.connectors.selectors import connector_endpoint, tool_resolve
from apps.core.errors import (
    ApplicationError,
    AuthenticationRequired,
    Conflict,
    FeatureDisabled,
    NotFound,
    PermissionDenied,
    RateLimited,
    UpstreamError,
    ValidationFailed,
)
from apps.core.logging import current_correlation_id, get_logger
from apps.core.models import ApiToken
from apps.core.ratelimit import RateLimiter
from apps.core.services import event_emit, upstream_request_recorded

logger = get_logger(__name__)

WIKIDATA_CONNECTOR = "wikidata"


# --- Calls -----------------------------------------------------------------------------


def tool_call(
    *, name: str, arguments: Any, token: ApiToken | None = None, transport: str = CallTransport.REST
) -> dict[str, Any]:
    """Call a tool by canonical name or alias; the upstream's result under the canonical name.

    Returns ``{"tool", "upstreamTool", "connector", "result", "durationMs"}``. Raises
    ``NotFound`` (unknown name), ``Conflict`` (connector disabled), ``ValidationFailed``
    (arguments against the input schema), ``RateLimited`` (the connector's budget would
    pass the timeout), ``UpstreamError`` (upstream failures, ``retryable`` or not).

    Every dispatched call is recorded, failures included. The rows are written outside
    any transaction of this function, so they survive the error it raises; call it
    outside ``transaction.atomic`` (holding a transaction open across an upstream call
    is wrong anyway).
    """
    started = time.perf_counter()
    tool = tool_resolve(name=name)
    connector = tool.connector
    if name != tool.name:
        logger.info("tool.alias_resolved", requested=name, tool=tool.name, connector=connector.slug)
    if connector.slug in connectors_switched_off():
        flag = settings.CORTEX_CONNECTOR_FEATURE_FLAGS[connector.slug]
        raise FeatureDisabled(
            f"Tool '{tool.name}' is switched off ({flag} is false).",
            details={"tool": tool.name, "connector": connector.slug, "flag": flag},
        )
    if not connector.enabled:
        raise Conflict(
            f"Tool '{tool.name}' belongs to connector '{connector.slug}', which is disabled.",
            details={"tool": tool.name, "connector": connector.slug},
        )
    upstream_name = tool.upstream_call_name
    record = functools.partial(
        tool_call_record,
        tool=tool,
        tool_name=tool.name,
        connector_slug=connector.slug,
        requested_name=name,
        upstream_name=upstream_name,
        started=started,
        token=token,
        transport=transport,
    )
    try:
        shaped = adapters.arguments_shaped(tool.name, arguments) if isinstance(arguments, dict) else None
        if shaped is None:
            _arguments_validate(tool, arguments)
            result = _dispatch(tool, arguments)
            _text_errors_raise(tool, upstream_name, result)
        else:
            result = _shaped_call(tool, upstream_name, shaped)
    except Exception as error:
        record(error=error)
        raise
    duration_ms = record()
    return {
        "tool": tool.name,
        "upstreamTool": upstream_name,
        "connector": connector.slug,
        "result": result,
        "durationMs": duration_ms,
    }


def _shaped_call(tool: RemoteTool, upstream_name: str, shaped: adapters.CallsShaped) -> dict[str, Any]:
    """Each call of a shaped call in order, every one's arguments checked before any is sent. A failure
    of any call fails the whole call (no partial answer); merged, the answer is every call's content in
    order plus ``results: [{<key>: ..., "result": ...}]``."""
    for _, arguments in shaped.calls:
        _arguments_validate(tool, arguments)
    results = []
    for _, arguments in shaped.calls:
        result = _dispatch(tool, arguments)
        _text_errors_raise(tool, upstream_name, result)
        results.append(result)
    if not shaped.merged:
        return results[0]
    return {
        "content": [item for result in results for item in (result.get("content") or [])],
        "isError": False,
        "results": [
            {shaped.key: key, "result": result}
            for (key, _), result in zip(shaped.calls, results, strict=True)
        ],
    }


def _arguments_validate(tool: RemoteTool, arguments: Any) -> None:
    if not isinstance(arguments, dict):
        raise ValidationFailed(
            f"'arguments' of tool '{tool.name}' must be a JSON object, not {type(arguments).__name__}.",
            details={"tool": tool.name, "errors": [{"path": "$", "message": "must be an object"}]},
        )
    schema = tool.input_schema
    if not schema:
        return
    refusal = schema_refs.schema_refusal(schema)
    if refusal:
        # Stored before refs were refused on save and sync; never fetched (nor is anything else).
        logger.warning("tool.input_schema_invalid", tool=tool.name, error=refusal)
        return
    try:
        # The registry retrieves nothing: a reference outside the document is unresolvable.
        validator = Draft202012Validator(schema, registry=schema_refs.LOCAL_REGISTRY)
        validator.check_schema(schema)
        errors = [
            {"path": path, "message": error.message}
            for error in validator.iter_errors(arguments)
            for path in _error_paths(error)
        ]
    except (SchemaError, Unresolvable) as error:
        # The upstream's schema is broken; the upstream will judge the arguments itself.
        logger.warning(
            "tool.input_schema_invalid", tool=tool.name, error=getattr(error, "message", str(error))
        )
        return
    if errors:
        errors.sort(key=lambda item: (item["path"], item["message"]))
        listed = "; ".join(f"{item['path']}: {item['message']}" for item in errors)
        raise ValidationFailed(
            f"Invalid arguments for tool '{tool.name}': {listed}.",
            details={"tool": tool.name, "errors": errors},
        )


def _error_paths(error: Any) -> list[str]:
    """Where to point the caller: a missing required argument is named by its own path."""
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [
            prop
            for prop in error.validator_value
            if prop not in error.instance and repr(prop) in error.message
        ]
        if missing:
            return [_json_path(error.json_path, prop) for prop in missing[:1]]
    return [error.json_path]


def _json_path(parent: str, prop: str) -> str:
    return f"{parent}.{prop}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prop) else f"{parent}[{prop!r}]"


def _connector_limiter(connector: Connector) -> RateLimiter | None:
    if not connector.rate_limit_interval:
        return None
    return RateLimiter(
        f"connector:{connector.slug}",
        interval=connector.rate_limit_interval,
        burst=connector.rate_limit_burst,
    )


def connector_upstream(connector: Connector) -> tuple[str, float | None]:
    """The name an MCP connector's requests are recorded under (``UpstreamRequest.upstream``) and
    its hourly budget (``None``: the manifest gives it no rate limit)."""
    limiter = _connector_limiter(connector)
    return f"mcp:{connector.slug}", limiter.per_hour if limiter else None


def _connector_call(connector: Connector, upstream_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One ``tools/call`` to an MCP connector under its budget, recorded as an upstream request (a
    native adapter's requests are recorded by the clients it uses)."""
    limiter = _connector_limiter(connector)
    upstream, budget_per_hour = connector_upstream(connector)
    with upstream_request_recorded(upstream=upstream, budget_per_hour=budget_per_hour) as tally:
        if limiter is not None:
            tally.waited_seconds = limiter.acquire(max_wait=mcp_client.connector_timeout(connector))
        return mcp_client.call_tool(connector, upstream_name, arguments)


def _dispatch(tool: RemoteTool, arguments: dict[str, Any]) -> dict[str, Any]:
    connector = tool.connector
    if connector.transport == Transport.MCP:
        try:
            return _connector_call(connector, tool.upstream_call_name, arguments)
        except UpstreamError as error:
            adapter = adapters.adapter_for(tool.name)
            if adapter is None or not _native_fallback_allowed(error):
                raise
            return _native_fallback(tool, arguments, adapter, error)
    limiter = _connector_limiter(connector)
    if limiter is not None:
        limiter.acquire(max_wait=mcp_client.connector_timeout(connector))
    return adapters.adapter_get(tool.name)(tool, arguments)


def _native_fallback_allowed(error: UpstreamError) -> bool:
    """Only an MCP server that is down (unreachable, timing out, 5xx) is worked around. A 429 asks us
    to slow down, and terminal errors (4xx, protocol errors) are answers: neither is masked."""
    return error.retryable and error.details.get("httpStatus") != 429


def _native_fallback(
    tool: RemoteTool, arguments: dict[str, Any], adapter: adapters.Adapter, error: UpstreamError
) -> dict[str, Any]:
    """The tool's native adapter in place of its MCP server, the result marked with why.

    If the native path is down too (a retryable failure), the MCP server's error is raised: it is
    what the call was about. A terminal native answer (bad arguments, no such entity) is raised as is.
    """
    logger.warning("tool.native_fallback", tool=tool.name, connector=tool.connector.slug, error=error.message)
    try:
        result = adapter(tool, arguments)
    except (UpstreamError, RateLimited) as fallback_error:
        if isinstance(fallback_error, UpstreamError) and not fallback_error.retryable:
            raise
        logger.warning(
            "tool.native_fallback_failed",
            tool=tool.name,
            error=fallback_error.message,
            mcp_error=error.message,
        )
        raise error from error.__cause__
    result["fallback"] = {"from": "mcp", "reason": error.message}
    return result


def _result_texts(result: Any) -> list[str]:
    if not isinstance(result, dict):
        return []
    texts = []
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and isinstance(structured.get("result"), str):
        texts.append(structured["result"])
    for item in result.get("content") or []:
        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
    return texts


def _text_errors_raise(tool: RemoteTool, upstream_name: str, result: dict[str, Any]) -> None:
    """Failures that arrive as ordinary results: the connector's text patterns, then ``isError``."""
    connector = tool.connector
    texts = _result_texts(result)
    for entry in connector.text_error_patterns or []:
        try:
            pattern = re.compile(entry["pattern"])
        except (KeyError, TypeError, re.error):
            logger.warning("connector.text_error_pattern_invalid", connector=connector.slug, entry=entry)
            continue
        for text in texts:
            if pattern.search(text):
                retryable = bool(entry.get("retryable", False))
                raise mcp_client.upstream_error(
                    f"Tool '{tool.name}' of connector '{connector.slug}' reported a failure: {text.strip()}",
                    details={"connector": connector.slug, "tool": tool.name, "upstreamMessage": text},
                    retryable=retryable,
                )
    if isinstance(result, dict) and result.get("isError"):
        message = "\n".join(texts).strip() or "(no message)"
        raise mcp_client.upstream_error(
            f"Tool '{tool.name}' of connector '{connector.slug}' failed: {message}",
            details={"connector": connector.slug, "tool": tool.name, "upstreamMessage": message},
        )


def _call_status(error: BaseException | None) -> tuple[str, bool]:
    if error is None:
        return ToolCallStatus.OK, False
    if isinstance(error, ValidationFailed):
        return ToolCallStatus.INVALID_ARGUMENTS, False
    if isinstance(error, RateLimited):
        return ToolCallStatus.RATE_LIMITED, True
    if isinstance(error, AuthenticationRequired | PermissionDenied):
        return ToolCallStatus.DENIED, False
    if isinstance(error, UpstreamError):
        return ToolCallStatus.UPSTREAM_ERROR, error.retryable
    return ToolCallStatus.FAILED, False


def tool_call_record(
    *,
    tool: RemoteTool | None,
    tool_name: str,
    connector_slug: str,
    requested_name: str,
    upstream_name: str,
    started: float,
    token: ApiToken | None,
    transport: str,
    error: BaseException | None = None,
) -> float:
    """A call's row, metrics and event; returns its duration in ms.

    ``tool`` is the registry's tool; CortexWeb's own MCP tools have none and record under their
    own name and the connector ``cortexweb``.
    """
    seconds = time.perf_counter() - started
    duration_ms = round(seconds * 1000, 3)
    status, retryable = _call_status(error)
    if error is None:
        error_text = ""
    elif isinstance(error, ApplicationError):
        error_text = error.message
    else:
        error_text = f"{type(error).__name__}: {error}"
    ToolCall.objects.create(
        tool=tool,
        tool_name=tool_name,
        requested_name=requested_name[:200],
        upstream_name=upstream_name,
        connector_slug=connector_slug,
        status=status,
        retryable=retryable,
        duration_ms=duration_ms,
        error=error_text,
        correlation_id=current_correlation_id() or "",
        token=token,
        transport=transport,
    )
    gateway_metrics.tool_calls_total.labels(connector=connector_slug, tool=tool_name, status=status).inc()
    gateway_metrics.tool_call_duration_seconds.labels(connector=connector_slug, tool=tool_name).observe(
        seconds
    )
    if connector_slug == WIKIDATA_CONNECTOR:
        gateway_metrics.wikidata_tool_calls_total.labels(tool=tool_name).inc()
    event_emit(
        name="tool.call.completed" if error is None else "tool.call.failed",
        payload={
            "tool": tool_name,
            "connector": connector_slug,
            "status": status,
            "durationMs": duration_ms,
            "transport": transport,
        },
    )
    log = logger.info if error is None else logger.warning
    log(
        "tool.call",
        tool=tool_name,
        connector=connector_slug,
        upstream_tool=upstream_name,
        status=status,
        duration_ms=duration_ms,
        transport=transport,
        error=error_text or None,
    )
    return duration_ms


# --- Sync ------------------------------------------------------------------------------


@dataclass
class SyncReport:
    """What a sync found: the canonical names in each state, and upstream tools nobody declared."""

    connector: str
    upstream_tools: int = 0
    in_sync: list[str] = field(default_factory=list)
    schema_changed: list[str] = field(default_factory=list)
    missing_upstream: list[str] = field(default_factory=list)
    undeclared_upstream: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # canonical name → its new upstream name
    # canonical name → why its upstream input schema was not stored (a reference outside it)
    schema_refused: dict[str, str] = field(default_factory=dict)

    @property
    def drifted(self) -> bool:
        return bool(
            self.schema_changed or self.missing_upstream or self.undeclared_upstream or self.schema_refused
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "connector": self.connector,
            "upstreamTools": self.upstream_tools,
            "inSync": self.in_sync,
            "schemaChanged": self.schema_changed,
            "missingUpstream": self.missing_upstream,
            "undeclaredUpstream": self.undeclared_upstream,
            "renamed": self.renamed,
            "schemaRefused": self.schema_refused,
        }

    def summary(self) -> str:
        def part(label: str, names: list[str]) -> str:
            return f"{len(names)} {label}" + (f" ({', '.join(names)})" if names else "")

        return (
            f"{self.connector}: {self.upstream_tools} upstream tools; "
            + "; ".join(
                [
                    part("in sync", self.in_sync),
                    part("schema changed", self.schema_changed),
                    part("missing upstream", self.missing_upstream),
                    part("undeclared upstream", self.undeclared_upstream),
                ]
            )
            + (
                f"; renamed upstream: {', '.join(f'{k} → {v}' for k, v in self.renamed.items())}"
                if self.renamed
                else ""
            )
            + (f"; {self.refused_text()}" if self.schema_refused else "")
        )

    def refused_text(self) -> str:
        return "input schema refused, not stored: " + "; ".join(
            f"{name}: {reason}" for name, reason in self.schema_refused.items()
        )


def _connector_get(slug: str) -> Connector:
    connector = Connector.objects.filter(slug=slug).first()
    if connector is None:
        raise NotFound(f"No connector is called {slug!r}.", details={"connector": slug})
    return connector


def _mcp_connector_get(slug: str, *, action: str) -> Connector:
    connector = _connector_get(slug)
    if connector.transport != Transport.MCP:
        raise ValidationFailed(
            f"Connector '{slug}' uses native adapters and has no upstream tools/list to {action}; "
            "only MCP connectors can.",
            details={"connector": slug, "transport": connector.transport},
        )
    return connector


def connector_sync(*, slug: str) -> SyncReport:
    """Read an MCP connector's ``tools/list`` and record upstream names, schemas and drift.

    Each declared tool is matched by its current upstream name, then its aliases, then
    its canonical name (each pass claiming upstream tools before the next looks).
    On failure the error is kept on the connector (``last_sync_error``) and re-raised.
    """
    connector = _mcp_connector_get(slug, action="sync")
    try:
        upstream = mcp_client.list_tools(connector)
    except UpstreamError as error:
        connector.last_sync_error = error.message
        connector.save(update_fields=["last_sync_error", "updated_at"])  # the signal refreshes caches
        event_emit(name="connectors.sync_failed", payload={"connector": slug, "error": error.message})
        raise

    by_name = {entry["name"]: entry for entry in upstream if isinstance(entry.get("name"), str)}
    report = SyncReport(connector=slug, upstream_tools=len(by_name))
    now = timezone.now()
    with transaction.atomic():
        tools = list(
            connector.tools.select_for_update().prefetch_related("aliases").order_by("position", "name")
        )
        matches = _match_tools(tools, by_name)
        for tool in tools:
            matched = matches.get(tool.pk)
            if matched is None:
                tool.drift = DriftState.MISSING_UPSTREAM
                tool.save(update_fields=["drift"])
                report.missing_upstream.append(tool.name)
                continue
            entry = by_name[matched]
            schema = _schema_synced(tool, entry.get("inputSchema"), report)
            if tool.upstream_call_name != matched:
                report.renamed[tool.name] = matched
            tool.upstream_name = matched
            tool.upstream_input_schema = schema
            tool.upstream_description = entry.get("description") or ""
            tool.annotations = entry.get("annotations") or {}
            tool.last_seen_upstream_at = now
            tool.save(
                update_fields=[
                    "upstream_name",
                    "upstream_input_schema",
                    "upstream_description",
                    "annotations",
                    "drift",
                    "last_seen_upstream_at",
                ]
            )
        report.undeclared_upstream = sorted(set(by_name) - set(matches.values()))
        connector.undeclared_upstream_tools = report.undeclared_upstream
        connector.last_synced_at = now
        connector.last_sync_error = report.refused_text() if report.schema_refused else ""
        connector.save(
            update_fields=["undeclared_upstream_tools", "last_synced_at", "last_sync_error", "updated_at"]
        )
        event_emit(name="connectors.synced", payload=report.as_dict())
    logger.info("connectors.synced", **report.as_dict())
    return report


def _schema_synced(tool: RemoteTool, schema: Any, report: SyncReport) -> Any:
    """The upstream input schema to keep for ``tool``, its drift state set and reported.

    A schema with a reference outside itself is refused: the previous one is kept (the upstream's
    is never stored, so never validated against) and the tool counts as changed upstream.
    """
    previous = tool.upstream_input_schema
    refusal = schema_refs.schema_refusal(schema)
    if refusal:
        logger.warning(
            "connectors.sync_schema_refused", connector=report.connector, tool=tool.name, error=refusal
        )
        tool.drift = DriftState.SCHEMA_CHANGED
        report.schema_refused[tool.name] = refusal
        return previous
    if previous is not None and previous != schema:
        tool.drift = DriftState.SCHEMA_CHANGED
        report.schema_changed.append(tool.name)
    else:
        tool.drift = DriftState.IN_SYNC
        report.in_sync.append(tool.name)
    return schema


def _match_tools(tools: list[RemoteTool], upstream: dict[str, dict[str, Any]]) -> dict[int, str]:
    """Declared tool pk → the upstream tool name it is matched to."""
    candidates = {
        tool.pk: [
            [tool.upstream_call_name],
            [alias.name for alias in tool.aliases.all()],
            [tool.name],
        ]
        for tool in tools
    }
    matches: dict[int, str] = {}
    claimed: set[str] = set()
    for rank in range(3):
        for tool in tools:
            if tool.pk in matches:
                continue
            found = next(
                (name for name in candidates[tool.pk][rank] if name in upstream and name not in claimed), None
            )
            if found is not None:
                matches[tool.pk] = found
                claimed.add(found)
    return matches


def connector_test_connection(*, slug: str) -> dict[str, Any]:
    """For the admin: can this connector be reached (MCP), or does every tool have an adapter (native)?"""
    connector = _connector_get(slug)
    if connector.transport == Transport.MCP:
        endpoint = connector.endpoint  # until the endpoint variable is known to be readable
        try:
            endpoint = connector_endpoint(connector)
            count, latency_ms = mcp_client.ping(connector)
        except UpstreamError as error:
            return {
                "connector": slug,
                "transport": connector.transport,
                "endpoint": endpoint,
                "ok": False,
                "error": error.message,
                "retryable": error.retryable,
            }
        return {
            "connector": slug,
            "transport": connector.transport,
            "endpoint": endpoint,
            "ok": True,
            "toolCount": count,
            "latencyMs": latency_ms,
        }
    tools = [
        {"name": name, "adapter": adapters.adapter_for(name) is not None}
        for name in connector.tools.order_by("position", "name").values_list("name", flat=True)
    ]
    return {
        "connector": slug,
        "transport": connector.transport,
        "ok": all(tool["adapter"] for tool in tools),
        "tools": tools,
    }
