"""Calls to MCP connectors over streamable HTTP, with the official ``mcp`` SDK client.

One connection per call: ``initialize`` → ``notifications/initialized`` → the request,
then (stateful servers only) ``DELETE`` of the session. The SDK echoes the
``mcp-session-id`` a stateful server returns and sends none to a stateless one, so
both generations of the Wikidata MCP server work unchanged.

The service code is synchronous (Django views in threads, Celery tasks), so the
public functions run the async client on an event loop of their own.

Listening for ``notifications/tools/list_changed``: with one connection per call there is no
long-lived session to listen on (and a stateless server, like the current Wikidata one, has no
standalone stream at all), so a notification can only arrive on the stream of a request CortexWeb
made. Each session watches for it and reports it through ``on_tools_changed``, after the request.

Every failure leaves here as :class:`~apps.core.errors.UpstreamError`: timeouts,
connection errors and HTTP 429/5xx are retryable; other 4xx, JSON-RPC errors and
malformed replies are terminal.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types
from django.conf import settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from apps.connectors.environment import connector_env_read
from apps.connectors.models import AuthType, Connector
from apps.connectors.selectors import connector_endpoint
from apps.core.errors import UpstreamError
from apps.core.http import build_mcp_async_client, default_headers, parse_retry_after

T = TypeVar("T")

CLIENT_INFO = mcp_types.Implementation(name="CortexWeb", version="1.0")
MAX_LIST_PAGES = 50  # a paginating server that never ends cannot hang a sync


@dataclass
class _HttpTrace:
    """What the SDK does not tell us: the HTTP status behind a failed MCP request.

    The SDK turns an HTTP error into a generic JSON-RPC error ("Server returned an
    error response"), which loses whether it was a 503 (retry) or a 401 (don't).
    """

    error_status: int | None = None
    retry_after: float | None = None

    async def on_response(self, response: httpx2.Response) -> None:
        if response.status_code >= 400 and response.request.method != "DELETE":
            self.error_status = response.status_code
            self.retry_after = parse_retry_after(response.headers.get("Retry-After"))


def upstream_error(
    message: str, *, details: dict[str, Any], retryable: bool = False, retry_after: float | None = None
) -> UpstreamError:
    """An ``UpstreamError`` whose details also say whether a retry may help (clients see details)."""
    return UpstreamError(
        message, details={**details, "retryable": retryable}, retryable=retryable, retry_after=retry_after
    )


def connector_timeout(connector: Connector) -> float:
    return connector.timeout_seconds or settings.CORTEX_HTTP_READ_TIMEOUT


def connector_headers(connector: Connector) -> dict[str, str]:
    """User-Agent, correlation id and the connector's credentials (read from its environment variable,
    when the connector may read it: a refused name is never read)."""
    headers = default_headers()
    if connector.auth_type == AuthType.NONE:
        return headers
    secret = connector_env_read(connector.slug, connector.auth_secret_env, endpoint=False)
    if not secret:
        raise upstream_error(
            f"Connector '{connector.slug}' needs a secret in the environment variable "
            f"'{connector.auth_secret_env}', which is not set.",
            details={"connector": connector.slug, "secretEnv": connector.auth_secret_env},
        )
    if connector.auth_type == AuthType.BEARER:
        headers["Authorization"] = f"Bearer {secret}"
    else:
        headers[connector.auth_header or "X-API-Key"] = secret
    return headers


def _http_client(connector: Connector, trace: _HttpTrace) -> httpx2.AsyncClient:
    return build_mcp_async_client(
        timeout=connector_timeout(connector),
        headers=connector_headers(connector),
        event_hooks={"response": [trace.on_response]},
    )


class _ToolsChangedWatch:
    """Notes a ``notifications/tools/list_changed`` sent on the session's streams."""

    def __init__(self) -> None:
        self.seen = False

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.seen = True


async def _with_session(
    connector: Connector, work: Callable[[Client], Awaitable[T]], tools_changed: _ToolsChangedWatch
) -> T:
    trace = _HttpTrace()
    timeout = connector_timeout(connector)
    url = connector_endpoint(connector)
    try:
        # The whole exchange (handshake, request, session teardown) shares one deadline.
        with anyio.fail_after(timeout):
            async with _http_client(connector, trace) as http_client:
                transport = streamable_http_client(url, http_client=http_client)
                # "legacy": the initialize handshake every deployed server speaks; "auto" would
                # first probe server/discover, one more request against the upstream's budget.
                async with Client(
                    transport,
                    mode="legacy",
                    cache=None,
                    read_timeout_seconds=timeout,
                    client_info=CLIENT_INFO,
                    message_handler=tools_changed,
                ) as client:
                    return await work(client)
    except Exception as error:  # every failure is classified below
        raise _classified(error, connector=connector, url=url, trace=trace, timeout=timeout) from error


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """The SDK's task groups wrap the real failure in (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def _classified(  # noqa: PLR0911 - one return per kind of failure reads best
    error: Exception, *, connector: Connector, url: str, trace: _HttpTrace, timeout: float
) -> UpstreamError:
    if isinstance(error, UpstreamError):
        return error
    leaves = list(_leaves(error))
    cause = next((leaf for leaf in leaves if not isinstance(leaf, anyio.get_cancelled_exc_class())), error)
    if isinstance(cause, UpstreamError):  # e.g. the outbound rule refused the endpoint's address
        cause.details.setdefault("connector", connector.slug)
        cause.details.setdefault("endpoint", url)
        return cause
    details: dict[str, Any] = {"connector": connector.slug, "endpoint": url}
    name = connector.slug

    if trace.error_status is not None:
        status = trace.error_status
        retryable = status == 429 or status >= 500
        details["httpStatus"] = status
        if trace.retry_after is not None:
            details["retryAfter"] = trace.retry_after
        return upstream_error(
            f"MCP server '{name}' answered HTTP {status}.",
            details=details,
            retryable=retryable,
            retry_after=trace.retry_after,
        )
    if isinstance(cause, httpx2.TimeoutException | TimeoutError) or (
        isinstance(cause, MCPError) and cause.code == mcp_types.REQUEST_TIMEOUT
    ):
        return upstream_error(
            f"MCP server '{name}' did not answer within {timeout:g} s.", details=details, retryable=True
        )
    if isinstance(cause, httpx2.TransportError):
        return upstream_error(
            f"MCP server '{name}' could not be reached: {cause or type(cause).__name__}.",
            details=details,
            retryable=True,
        )
    if isinstance(cause, MCPError):
        details["jsonrpcCode"] = cause.code
        # A stream that closed before its answer is a transport hiccup; the rest are protocol errors.
        retryable = cause.code == mcp_types.CONNECTION_CLOSED
        return upstream_error(
            f"MCP server '{name}' returned an error: {cause.message}", details=details, retryable=retryable
        )
    if isinstance(cause, ValidationError | RuntimeError | ValueError):
        return upstream_error(
            f"MCP server '{name}' sent a malformed reply: {_first_line(str(cause))}", details=details
        )
    return upstream_error(
        f"MCP server '{name}' failed: {type(cause).__name__}: {_first_line(str(cause))}", details=details
    )


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _run(coroutine_factory: Callable[[], Awaitable[T]]) -> T:
    """Run the async client from sync code: its own loop here, or in a helper thread when
    this thread already runs one (sync code called from a coroutine by mistake must not deadlock)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine_factory())  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine_factory()).result()  # type: ignore[arg-type]


def _in_session(
    connector: Connector,
    work: Callable[[Client], Awaitable[T]],
    on_tools_changed: Callable[[], None] | None,
) -> T:
    """``work`` in a session of its own; ``on_tools_changed`` runs afterwards (failed or not) when the
    upstream said its tool list changed."""
    tools_changed = _ToolsChangedWatch()
    try:
        return _run(lambda: _with_session(connector, work, tools_changed))
    finally:
        if tools_changed.seen and on_tools_changed is not None:
            on_tools_changed()


def _tool_as_dict(tool: mcp_types.Tool) -> dict[str, Any]:
    return tool.model_dump(by_alias=True, mode="json", exclude_none=True)


def list_tools(
    connector: Connector, *, on_tools_changed: Callable[[], None] | None = None
) -> list[dict[str, Any]]:
    """The upstream's ``tools/list`` (all pages), each tool as JSON (name, description, inputSchema...)."""

    async def work(client: Client) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="bypass")
            tools.extend(_tool_as_dict(tool) for tool in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    return _in_session(connector, work, on_tools_changed)


def call_tool(
    connector: Connector,
    upstream_name: str,
    arguments: dict[str, Any],
    *,
    on_tools_changed: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """``tools/call`` of ``upstream_name``; the result as JSON (content, structuredContent, isError)."""

    async def work(client: Client) -> dict[str, Any]:
        # send_request rather than client.call_tool: the latter lists the tools first to check
        # the output schema, a second upstream request per call that the gateway does not need.
        request = mcp_types.CallToolRequest(
            params=mcp_types.CallToolRequestParams(name=upstream_name, arguments=arguments)
        )
        result = await client.session.send_request(request, mcp_types.CallToolResult)
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return {
            "content": dumped.get("content", []),
            "structuredContent": dumped.get("structuredContent"),
            "isError": bool(result.is_error),
        }

    return _in_session(connector, work, on_tools_changed)


def ping(connector: Connector) -> tuple[int, float]:
    """How many tools the upstream lists and how long that took (ms), for "test connection"."""
    started = time.perf_counter()
    tools = list_tools(connector)
    return len(tools), round((time.perf_counter() - started) * 1000, 1)
