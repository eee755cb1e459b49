"""The tool gateway: call tools by canonical name, and sync MCP connectors' tool lists.

``tool_call`` resolves a name or alias, checks the arguments against the tool's
input schema, waits for the connector's shared rate limit, dispatches to the MCP
server or native adapter, recognises failures the upstream reports as ordinary
text, and records every call (row, metrics, event).

``connector_sync`` reads an MCP server's ``tools/list`` and records next to the
operator's catalogue what the upstream calls each tool now, its description and
input schema, and whether it drifted. It never touches names, tags, scopes or
descriptions: those are the operator's. A changed upstream description or input
schema of a known tool is held as pending until an operator approves it.

The registry heals itself: a sync runs on a schedule (``connectors.sync_all``), on the
next call after an upstream sent ``notifications/tools/list_changed``, and once when an
upstream answers a call with "unknown tool", which is then retried once under the
tool's new upstream name.
"""

from __future__ import annotations

import functools
import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from redis.exceptions import LockError
from referencing.exceptions import Unresolvable

from apps.connectors import adapters, mcp_client, schema_refs
from apps.connectors import metrics as gateway_metrics
from apps.connectors.drift import upstream_changes
from apps.connectors.models import (
    CallTransport,
    Connector,
    ConnectorSync,
    DriftState,
    RemoteTool,
    SyncTrigger,
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
from apps.core.redis import get_redis
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
    if connector.transport == Transport.MCP:
        _resync_if_tools_changed(tool)
    upstream_name = tool.upstream_call_name
    healing = _Healing()
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
            result = _dispatch(tool, arguments, healing)
            _text_errors_raise(tool, tool.upstream_call_name, result)
        else:
            result = _shaped_call(tool, shaped, healing)
    except Exception as error:
        record(error=error, upstream_name=tool.upstream_call_name)
        raise
    # A call healed after a rename went out under the tool's new upstream name.
    upstream_name = tool.upstream_call_name
    duration_ms = record(upstream_name=upstream_name)
    return {
        "tool": tool.name,
        "upstreamTool": upstream_name,
        "connector": connector.slug,
        "result": result,
        "durationMs": duration_ms,
    }


def _shaped_call(tool: RemoteTool, shaped: adapters.CallsShaped, healing: _Healing) -> dict[str, Any]:
    """Each call of a shaped call in order, every one's arguments checked before any is sent. A failure
    of any call fails the whole call (no partial answer); merged, the answer is every call's content in
    order plus ``results: [{<key>: ..., "result": ...}]``."""
    for _, arguments in shaped.calls:
        _arguments_validate(tool, arguments)
    results = []
    for _, arguments in shaped.calls:
        result = _dispatch(tool, arguments, healing)
        _text_errors_raise(tool, tool.upstream_call_name, result)
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


def tool_arguments_check(tool: RemoteTool, arguments: Any) -> None:
    """The checks ``tool_call`` makes before sending anything (the tool's call shape, then the upstream's
    input schema for each call); ``ValidationFailed`` naming the paths, as the call would raise."""
    shaped = adapters.arguments_shaped(tool.name, arguments) if isinstance(arguments, dict) else None
    for _, each in shaped.calls if shaped is not None else [("", arguments)]:
        _arguments_validate(tool, each)


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
        return mcp_client.call_tool(
            connector,
            upstream_name,
            arguments,
            on_tools_changed=functools.partial(tools_list_changed_observed, slug=connector.slug),
        )


@dataclass
class _Healing:
    """One call's allowance of self-healing: a single sync and retry, however the call is shaped."""

    attempted: bool = False


# How MCP servers say a tool does not exist: FastMCP (the Wikidata server) answers a result with
# isError and "Unknown tool: <name>"; the specification's example is JSON-RPC -32602 "Unknown tool".
UNKNOWN_TOOL_RE = re.compile(r"\bunknown tool\b|\btool\b.{0,200}\bnot found\b", re.IGNORECASE)
UNKNOWN_TOOL_CODES = (-32602, -32601)


def _unknown_tool_result(result: Any) -> bool:
    return (
        isinstance(result, dict)
        and bool(result.get("isError"))
        and any(UNKNOWN_TOOL_RE.search(text) for text in _result_texts(result))
    )


def _unknown_tool_error(error: UpstreamError) -> bool:
    return error.details.get("jsonrpcCode") in UNKNOWN_TOOL_CODES and bool(
        UNKNOWN_TOOL_RE.search(error.message)
    )


def _healed(tool: RemoteTool, healing: _Healing) -> bool:
    """After an "unknown tool" answer: sync the connector once, and say whether the tool now has
    another upstream name to retry under. At most once per call, so a confused upstream cannot loop."""
    if healing.attempted:
        return False
    healing.attempted = True
    before = tool.upstream_call_name
    logger.info("tool.unknown_upstream", tool=tool.name, connector=tool.connector.slug, upstream_tool=before)
    try:
        # Only a sync that listed the tools after this answer can know the new name.
        connector_sync_once(slug=tool.connector.slug, trigger=SyncTrigger.UNKNOWN_TOOL, since=timezone.now())
    except ApplicationError as error:
        logger.warning("tool.heal_sync_failed", tool=tool.name, error=error.message)
        return False
    tool.refresh_from_db(fields=list(_SYNCED_TOOL_FIELDS))
    if tool.drift == DriftState.MISSING_UPSTREAM or tool.upstream_call_name == before:
        return False
    logger.info("tool.renamed_upstream_retry", tool=tool.name, old=before, new=tool.upstream_call_name)
    return True


def _mcp_dispatch(tool: RemoteTool, arguments: dict[str, Any], healing: _Healing) -> dict[str, Any]:
    connector = tool.connector
    try:
        result = _connector_call(connector, tool.upstream_call_name, arguments)
    except UpstreamError as error:
        if not (_unknown_tool_error(error) and _healed(tool, healing)):
            raise
        return _connector_call(connector, tool.upstream_call_name, arguments)
    if _unknown_tool_result(result) and _healed(tool, healing):
        return _connector_call(connector, tool.upstream_call_name, arguments)
    return result


def _dispatch(tool: RemoteTool, arguments: dict[str, Any], healing: _Healing) -> dict[str, Any]:
    connector = tool.connector
    if connector.transport == Transport.MCP:
        try:
            return _mcp_dispatch(tool, arguments, healing)
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

# The fields a sync writes on a tool (re-read after a sync healed a call).
_SYNCED_TOOL_FIELDS = (
    "upstream_name",
    "upstream_input_schema",
    "upstream_description",
    "annotations",
    "drift",
    "last_seen_upstream_at",
    "pending_description",
    "pending_input_schema",
    "pending_changes",
    "pending_since",
)
TOOLS_CHANGED_KEY = "cortex:connectors:tools-changed:{slug}"
SYNC_LOCK_KEY = "cortex:connectors:sync-lock:{slug}"
_DELETE_IF_EQUAL = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)
# Sync records older than this are pruned by the scheduled sync.
SYNC_RECORDS_KEPT = timedelta(days=30)


@dataclass
class SyncReport:
    """What a sync found: the canonical names in each state, and upstream tools nobody declared.

    ``schema_changed`` and ``description_changed`` list the tools whose upstream change awaits an
    operator's approval (held, not used); ``changed`` only those whose change is new this sync.
    """

    connector: str
    upstream_tools: int = 0
    in_sync: list[str] = field(default_factory=list)
    schema_changed: list[str] = field(default_factory=list)
    description_changed: list[str] = field(default_factory=list)
    missing_upstream: list[str] = field(default_factory=list)
    undeclared_upstream: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # canonical name → its new upstream name
    changed: dict[str, list[str]] = field(default_factory=dict)  # canonical name → its changes, in words
    # canonical name → why its upstream input schema was not stored (a reference outside it)
    schema_refused: dict[str, str] = field(default_factory=dict)

    @property
    def drifted(self) -> bool:
        return bool(
            self.schema_changed
            or self.description_changed
            or self.missing_upstream
            or self.undeclared_upstream
            or self.schema_refused
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "connector": self.connector,
            "upstreamTools": self.upstream_tools,
            "inSync": self.in_sync,
            "schemaChanged": self.schema_changed,
            "descriptionChanged": self.description_changed,
            "missingUpstream": self.missing_upstream,
            "undeclaredUpstream": self.undeclared_upstream,
            "renamed": self.renamed,
            "changed": self.changed,
            "schemaRefused": self.schema_refused,
        }

    def summary(self) -> str:
        def part(label: str, names: list[str]) -> str:
            return f"{len(names)} {label}" + (f" ({', '.join(names)})" if names else "")

        parts = [
            part("in sync", self.in_sync),
            part("schema changed", self.schema_changed),
            part("missing upstream", self.missing_upstream),
            part("undeclared upstream", self.undeclared_upstream),
        ]
        if self.description_changed:
            parts.insert(2, part("description changed", self.description_changed))
        return (
            f"{self.connector}: {self.upstream_tools} upstream tools; "
            + "; ".join(parts)
            + (
                f"; renamed upstream: {', '.join(f'{k} → {v}' for k, v in self.renamed.items())}"
                if self.renamed
                else ""
            )
            + (
                f"; awaiting approval: {', '.join(self.schema_changed + self.description_changed)}"
                if self.schema_changed or self.description_changed
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


def tools_list_changed_observed(*, slug: str) -> None:
    """An upstream sent ``notifications/tools/list_changed``: its next call syncs first, and a
    background sync is enqueued now (whichever runs first, the other finds the work done)."""
    from apps.connectors.tasks import connector_sync_task  # the tasks module imports this one

    observed = timezone.now()
    get_redis().set(TOOLS_CHANGED_KEY.format(slug=slug), observed.isoformat())
    logger.info("connectors.tools_list_changed", connector=slug)

    def enqueue() -> None:
        try:
            connector_sync_task.delay(slug, SyncTrigger.LIST_CHANGED, observed.isoformat())
        except Exception as error:  # noqa: BLE001 - a broker outage must not fail the call that saw it
            # The flag above still makes the next call sync first.
            logger.warning("connectors.list_changed_enqueue_failed", connector=slug, error=str(error))

    transaction.on_commit(enqueue)


def _resync_if_tools_changed(tool: RemoteTool) -> None:
    """Before a call: sync the tool's connector if its upstream said its tools changed since the last
    sync. A failed sync does not fail the call: it goes on with what the registry knows."""
    slug = tool.connector.slug
    observed = get_redis().get(TOOLS_CHANGED_KEY.format(slug=slug))
    if observed is None:
        return
    since = datetime.fromisoformat(observed.decode() if isinstance(observed, bytes) else observed)
    try:
        connector_sync_once(slug=slug, trigger=SyncTrigger.LIST_CHANGED, since=since)
    except ApplicationError as error:
        logger.warning("connectors.list_changed_sync_failed", connector=slug, error=error.message)
        return
    tool.refresh_from_db(fields=list(_SYNCED_TOOL_FIELDS))


def connector_sync_once(*, slug: str, trigger: str, since: datetime | None = None) -> SyncReport | None:
    """``connector_sync``, one at a time per connector; with ``since``, only if no sync has listed
    the upstream's tools since then (concurrent calls that met the same rename sync once).

    Returns ``None`` when a sync since ``since`` made this one unnecessary.
    """
    connector = _mcp_connector_get(slug, action="sync")
    wait = mcp_client.connector_timeout(connector)
    lock = get_redis().lock(SYNC_LOCK_KEY.format(slug=slug), timeout=wait * 2 + 5, blocking_timeout=wait + 5)
    acquired = lock.acquire()
    try:
        if since is not None:
            connector.refresh_from_db(fields=["last_synced_at"])
            if connector.last_synced_at is not None and connector.last_synced_at >= since:
                return None
        return connector_sync(slug=slug, trigger=trigger)
    finally:
        if acquired:
            try:
                lock.release()
            except LockError:  # held past its timeout and taken over; nothing left to release
                pass


def connector_sync(*, slug: str, trigger: str = SyncTrigger.MANUAL) -> SyncReport:
    """Read an MCP connector's ``tools/list`` and record upstream names, schemas and drift.

    Each declared tool is matched by its current upstream name, then its aliases, then
    its canonical name (each pass claiming upstream tools before the next looks), then, for
    a tool seen before, by an unclaimed upstream tool with exactly its description and
    input schema (a pure rename). A changed description or input schema of a tool seen
    before is kept as pending, not used, until approved (``tool_changes_approve``); the
    first sync of a tool trusts what it finds. Every sync is recorded (``ConnectorSync``).
    On failure the error is kept on the connector (``last_sync_error``) and re-raised.
    """
    connector = _mcp_connector_get(slug, action="sync")
    # The time the upstream was asked: a notification or "unknown tool" answer before it is covered.
    now = timezone.now()
    started = time.perf_counter()
    tools_changed_key = TOOLS_CHANGED_KEY.format(slug=slug)
    tools_changed = get_redis().get(tools_changed_key)
    try:
        upstream = mcp_client.list_tools(connector)
    except UpstreamError as error:
        connector.last_sync_error = error.message
        connector.save(update_fields=["last_sync_error", "updated_at"])  # the signal refreshes caches
        ConnectorSync.objects.create(
            connector=connector,
            trigger=trigger,
            ok=False,
            error=error.message,
            started_at=now,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        event_emit(name="connectors.sync_failed", payload={"connector": slug, "error": error.message})
        raise

    by_name = {entry["name"]: entry for entry in upstream if isinstance(entry.get("name"), str)}
    report = SyncReport(connector=slug, upstream_tools=len(by_name))
    with transaction.atomic():
        connector = Connector.objects.select_for_update().get(pk=connector.pk)
        tools = list(
            connector.tools.select_for_update().prefetch_related("aliases").order_by("position", "name")
        )
        known_before = _upstream_names_known(connector, tools)
        was_missing = {tool.pk for tool in tools if tool.drift == DriftState.MISSING_UPSTREAM}
        matches = _match_tools(tools, by_name)
        removed = []
        for tool in tools:
            matched = matches.get(tool.pk)
            if matched is None:
                tool.drift = DriftState.MISSING_UPSTREAM
                tool.save(update_fields=["drift"])
                report.missing_upstream.append(tool.name)
                if tool.pk not in was_missing:
                    removed.append(tool.name)
                continue
            if tool.upstream_call_name != matched:
                report.renamed[tool.name] = matched
            tool.upstream_name = matched
            _upstream_recorded(tool, by_name[matched], report, now)
            tool.save(update_fields=list(_SYNCED_TOOL_FIELDS))
        report.undeclared_upstream = sorted(set(by_name) - set(matches.values()))
        connector.undeclared_upstream_tools = report.undeclared_upstream
        connector.last_synced_at = now
        connector.last_sync_error = report.refused_text() if report.schema_refused else ""
        connector.save(
            update_fields=["undeclared_upstream_tools", "last_synced_at", "last_sync_error", "updated_at"]
        )
        ConnectorSync.objects.create(
            connector=connector,
            trigger=trigger,
            ok=True,
            upstream_tools=report.upstream_tools,
            # On a first sync everything is new; "added" is for what appears later.
            added=sorted(set(by_name) - known_before - set(report.renamed.values())) if known_before else [],
            removed=removed,
            renamed=report.renamed,
            changed=report.changed,
            report=report.as_dict(),
            started_at=now,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        event_emit(name="connectors.synced", payload={**report.as_dict(), "trigger": trigger})
    if tools_changed is not None:
        # This sync listed the tools after that notification; a newer one still asks for another.
        get_redis().eval(_DELETE_IF_EQUAL, 1, tools_changed_key, tools_changed)
    logger.info("connectors.synced", trigger=trigger, **report.as_dict())
    return report


def _upstream_names_known(connector: Connector, tools: list[RemoteTool]) -> set[str]:
    """The upstream names the previous sync saw (empty before the first sync)."""
    if connector.last_synced_at is None:
        return set()
    seen = {
        tool.upstream_call_name
        for tool in tools
        if tool.last_seen_upstream_at is not None and tool.drift != DriftState.MISSING_UPSTREAM
    }
    return seen | set(connector.undeclared_upstream_tools)


def _upstream_recorded(tool: RemoteTool, entry: dict[str, Any], report: SyncReport, now: datetime) -> None:
    """Record the upstream's description, schema and annotations on ``tool``, holding changes.

    A schema with a reference outside itself is refused: the approved one is kept (the upstream's
    is never stored, so never validated against) and the tool counts as changed upstream.
    """
    description = entry.get("description") or ""
    schema = entry.get("inputSchema")
    tool.annotations = entry.get("annotations") or {}
    first_sight = tool.last_seen_upstream_at is None
    tool.last_seen_upstream_at = now
    refusal = schema_refs.schema_refusal(schema)
    if refusal:
        logger.warning(
            "connectors.sync_schema_refused", connector=report.connector, tool=tool.name, error=refusal
        )
        tool.drift = DriftState.SCHEMA_CHANGED
        report.schema_refused[tool.name] = refusal
        return
    if first_sight:  # nothing approved yet to compare with: trusted on first use
        tool.upstream_description, tool.upstream_input_schema = description, schema
    changes = upstream_changes(
        old_description=tool.upstream_description,
        new_description=description,
        old_schema=tool.upstream_input_schema,
        new_schema=schema,
    )
    if not changes:  # in sync (again: an upstream that reverted needs no approval)
        _pending_cleared(tool)
        tool.drift = DriftState.IN_SYNC
        report.in_sync.append(tool.name)
        return
    if tool.pending_since is None or (tool.pending_description, tool.pending_input_schema) != (
        description,
        schema,
    ):
        tool.pending_since = now
        report.changed[tool.name] = changes
    tool.pending_description, tool.pending_input_schema, tool.pending_changes = description, schema, changes
    if schema != tool.upstream_input_schema:
        tool.drift = DriftState.SCHEMA_CHANGED
        report.schema_changed.append(tool.name)
    else:
        tool.drift = DriftState.DESCRIPTION_CHANGED
        report.description_changed.append(tool.name)


def _pending_cleared(tool: RemoteTool) -> None:
    tool.pending_description, tool.pending_input_schema = "", None
    tool.pending_changes, tool.pending_since = [], None


@transaction.atomic
def tool_changes_approve(*, tool: RemoteTool, actor: str) -> list[str]:
    """Trust a tool's pending upstream description and input schema from now on; the changes approved.

    Raises ``Conflict`` when nothing is pending (approved meanwhile, or the upstream reverted).
    """
    tool = RemoteTool.objects.select_for_update().get(pk=tool.pk)
    if tool.pending_since is None:
        raise Conflict(
            f"Tool '{tool.name}' has no upstream change awaiting approval.", details={"tool": tool.name}
        )
    approved = list(tool.pending_changes)
    tool.upstream_description, tool.upstream_input_schema = (
        tool.pending_description,
        tool.pending_input_schema,
    )
    _pending_cleared(tool)
    tool.drift = DriftState.IN_SYNC
    tool.save(update_fields=list(_SYNCED_TOOL_FIELDS))
    event_emit(
        name="connectors.tool_changes_approved",
        payload={"tool": tool.name, "connector": tool.connector.slug, "changes": approved, "actor": actor},
    )
    logger.info("connectors.tool_changes_approved", tool=tool.name, changes=approved, actor=actor)
    return approved


def connectors_sync_scheduled() -> dict[str, str]:
    """Sync every enabled MCP connector (Celery beat, every ``CONNECTORS_SYNC_INTERVAL_SECONDS``).

    One connector's failure (recorded on it and in its sync history) does not stop the others.
    Returns connector id → ``"ok"`` or the error. Also prunes sync records past their keep.
    """
    outcome: dict[str, str] = {}
    slugs = (
        Connector.objects.enabled()
        .switched_on()
        .filter(transport=Transport.MCP)
        .values_list("slug", flat=True)
    )
    for slug in slugs:
        try:
            connector_sync_once(slug=slug, trigger=SyncTrigger.SCHEDULE)
        except ApplicationError as error:
            outcome[slug] = error.message
        else:
            outcome[slug] = "ok"
    ConnectorSync.objects.filter(started_at__lt=timezone.now() - SYNC_RECORDS_KEPT).delete()
    return outcome


def _signature(tool_or_entry: Any) -> tuple[str, str]:
    if isinstance(tool_or_entry, RemoteTool):
        description, schema = tool_or_entry.upstream_description, tool_or_entry.upstream_input_schema
    else:
        description, schema = tool_or_entry.get("description") or "", tool_or_entry.get("inputSchema")
    return description, json.dumps(schema, sort_keys=True)


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
    _match_renamed(tools, upstream, matches, claimed)
    return matches


def _match_renamed(
    tools: list[RemoteTool], upstream: dict[str, dict[str, Any]], matches: dict[int, str], claimed: set[str]
) -> None:
    """A pure rename under a name nobody declared: the one unclaimed upstream tool with exactly the
    approved description and input schema of exactly one unmatched tool seen before. Anything less
    certain stays missing (and undeclared) for an operator to alias."""
    unmatched = [
        tool
        for tool in tools
        if tool.pk not in matches
        and tool.last_seen_upstream_at is not None
        and (tool.upstream_description or tool.upstream_input_schema)
    ]
    by_signature: dict[tuple[str, str], list[RemoteTool]] = {}
    for tool in unmatched:
        by_signature.setdefault(_signature(tool), []).append(tool)
    offered: dict[tuple[str, str], list[str]] = {}
    for name, entry in upstream.items():
        if name not in claimed:
            offered.setdefault(_signature(entry), []).append(name)
    for signature, owners in by_signature.items():
        names = offered.get(signature, [])
        if len(owners) == 1 and len(names) == 1:
            matches[owners[0].pk] = names[0]
            claimed.add(names[0])


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
