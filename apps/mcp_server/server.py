"""The MCP server (official ``mcp`` SDK, low-level ``Server``) and its HTTP edge.

``build_server`` wires the SDK's request handlers to ``services``; the same server serves both
transports. Handlers run the synchronous services in worker threads (Django's ORM is sync).

``McpHttpApp`` is what ``cortexweb/asgi.py`` mounts at ``/mcp``: the SDK's streamable-HTTP app in
stateless JSON mode (any number of uvicorn workers can serve it), behind an edge that
- checks ``Host`` and ``Origin`` against Django's ``ALLOWED_HOSTS`` and ``CSRF_TRUSTED_ORIGINS``
  (DNS-rebinding protection with Django's own host matching);
- serves POST only (405 otherwise: stateless, there is no SSE stream to GET and no session to
  DELETE), and only ``application/json`` bodies (415);
- reads the JSON-RPC body once (413 over ``CORTEX_MAX_BODY_BYTES``; 400 nested deeper than
  ``CORTEX_MAX_JSON_DEPTH``, as REST), parses it as the SDK does, refuses a request whose id is
  not a string or an integer (400) and, when it calls a tool or
  reads a resource that needs a token, answers 401 unless a valid ``Authorization: Bearer`` token
  came with it: ``WWW-Authenticate: Bearer`` with an ``error_description`` and a JSON-RPC error body
  (-32010, the error shape in its data) saying what to send; discovery (initialize, ping, lists,
  logging/setLevel) needs none;
- answers a Postgres or Redis outage, wherever in the request it happens (its own token check,
  or a handler), as REST does: 503 with ``Retry-After`` and the error shape;
- hands the authenticated token, the correlation id and the base URL to the handlers through the
  request's ASGI ``state``.

Errors about the JSON-RPC message (parse, invalid request, media type) are JSON-RPC error objects
with id null, as the SDK's own are, so that an MCP client shows their message; so is the 401 of a
missing or bad token (with the request's id). Errors about the HTTP exchange (host, origin, method,
size, outage) are the error shape REST answers.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apps.connectors.models import CallTransport
from apps.core.auth import bearer_token
from apps.core.errors import (
    ApplicationError,
    AuthenticationRequired,
    DependencyUnavailable,
    MethodNotAllowed,
    PayloadTooLarge,
    RateLimited,
    error_payload,
)
from apps.core.logging import accept_or_generate_correlation_id, get_logger
from apps.core.middleware import json_nested_too_deep
from apps.core.models import ApiToken, TokenScope
from apps.core.services import api_token_authenticate
from apps.mcp_server import services
from apps.mcp_server.services import Caller
from apps.oauth import services as oauth_services

logger = get_logger(__name__)

SERVER_NAME = "cortexweb"
SERVER_VERSION = "1.0"
INSTRUCTIONS = (
    "CortexWeb grounds answers in knowledge you can verify. facts.query answers factual questions from "
    "Wikidata with statement GUIDs; knowledge.search and knowledge.verify use a curated knowledge base; "
    "grounding.ground checks a draft; arxiv.search finds papers. The prompt ground_answer shows how they "
    "work together. Calls need an API token (Authorization: Bearer on HTTP, CORTEX_API_TOKEN on stdio)."
)
EDGE_STATE_KEY = "cortexweb_mcp"
EXCHANGE_STATE_KEY = "cortexweb_mcp_exchange"
# Implementation-defined JSON-RPC code (the -32000..-32019 band) for a resource read without the token
# it needs; the error shape (code, message, details) is in the error's data.
NOT_AUTHORISED = -32010
# The same band: Postgres or Redis is down or stalled (REST's 503); the error shape is in data.
UNAVAILABLE = -32011


@dataclass
class Exchange:
    """What a handler tells the HTTP edge about the request it serves (stdio has no edge)."""

    outage: DependencyUnavailable | None = None


def _tell_edge(ctx: Any, outage: DependencyUnavailable) -> None:
    """On HTTP, have the edge answer ``outage`` (503) in place of what the SDK writes."""
    request = ctx.request
    if request is not None:
        exchange: Exchange | None = request.scope.get("state", {}).get(EXCHANGE_STATE_KEY)
        if exchange is not None:
            exchange.outage = outage


def _outage_guarded(handler: Callable[[Any, Any], Awaitable[Any]]) -> Callable[[Any, Any], Awaitable[Any]]:
    """A handler whose request met a Postgres or Redis outage answers JSON-RPC error ``UNAVAILABLE``
    (what stdio sends); on HTTP the edge answers REST's 503 in its place."""

    async def guarded(ctx: Any, params: Any) -> Any:
        try:
            return await handler(ctx, params)
        except DependencyUnavailable as outage:
            _tell_edge(ctx, outage)
            raise MCPError(
                code=UNAVAILABLE,
                message=f"{outage.code}: {outage.message}",
                data=error_payload(outage.code, outage.message, outage.details),
            ) from outage

    return guarded


def _caller(ctx: Any, *, stdio_token: str) -> Caller:
    request = ctx.request
    if request is None:  # stdio
        return Caller(
            transport=CallTransport.MCP_STDIO,
            raw_token=stdio_token,
            correlation_id=accept_or_generate_correlation_id(None),
        )
    caller: Caller | None = request.scope.get("state", {}).get(EDGE_STATE_KEY)
    # Without the edge (the SDK app mounted bare) nothing is authenticated.
    return caller or Caller(
        transport=CallTransport.MCP_HTTP, correlation_id=accept_or_generate_correlation_id(None)
    )


async def _in_thread(caller: Caller, work: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    return await anyio.to_thread.run_sync(lambda: services.mcp_call_in_thread(caller, work, *args, **kwargs))


def build_server(*, stdio_token: str = "") -> Server[Any]:
    """The MCP server; ``stdio_token`` is the stdio process's ``CORTEX_API_TOKEN``."""

    async def list_tools(ctx: Any, params: Any) -> dict[str, Any]:
        tools = await _in_thread(_caller(ctx, stdio_token=stdio_token), services.mcp_tools_list)
        # The wire form as it is: the SDK validates a result against the protocol version's schema
        # before it sends it, so ``types.Tool`` models here were built only to be dumped again (a
        # third of tools/list's own time at 1,000 tools).
        return {"tools": tools}

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = _caller(ctx, stdio_token=stdio_token)
        try:
            outcome = await _in_thread(
                caller, services.mcp_tool_call, name=params.name, arguments=params.arguments, caller=caller
            )
        except services.UnknownTool as error:
            raise MCPError(
                code=types.INVALID_PARAMS, message=str(error), data={"name": error.name}
            ) from error
        except DependencyUnavailable as outage:  # looking the name up in the registry
            outcome = services.mcp_outage_outcome(outage)
        if outcome.unavailable is not None:
            # A tool's failure is a result the model reads (stdio); HTTP answers the 503 in its place.
            _tell_edge(ctx, outcome.unavailable)
        texts = [outcome.text, *outcome.extra_text]
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text) for text in texts],
            structured_content=outcome.structured,
            is_error=outcome.is_error,
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[types.Resource.model_validate(item) for item in services.mcp_resources_list()]
        )

    async def list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate.model_validate(item) for item in services.RESOURCE_TEMPLATES
            ]
        )

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        caller = _caller(ctx, stdio_token=stdio_token)
        uri = str(params.uri)
        try:
            content = await _in_thread(caller, services.mcp_resource_read, uri=uri, caller=caller)
        except services.ResourceNotFound as error:
            raise MCPError(code=types.INVALID_PARAMS, message=str(error), data={"uri": uri}) from error
        except services.ResourceDenied as denied:
            error = denied.error
            raise MCPError(
                code=NOT_AUTHORISED,
                message=str(denied),
                data=error_payload(error.code, error.message, error.details),
            ) from denied
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=content.uri, text=content.text, mime_type=content.mime_type)
            ]
        )

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt.model_validate(services.GROUND_ANSWER)])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != services.GROUND_ANSWER["name"]:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}; prompts/list names them."
            )
        question = (params.arguments or {}).get("question", "")
        try:
            text = services.ground_answer_prompt(question=question)
        except ApplicationError as error:
            raise MCPError(code=types.INVALID_PARAMS, message=error.message) from error
        return types.GetPromptResult(
            description=services.GROUND_ANSWER["description"],
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    async def set_logging_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        # The server sends no log notifications (its logs go to operators, not to clients), so a
        # client's level has nothing to filter; it is accepted, as the capability promises, and noted.
        logger.info("mcp.logging_level_set", level=params.level)
        return types.EmptyResult()

    # The logging capability is deprecated in the SDK's newest protocol version, but clients of the
    # versions deployed today (and the conformance suite) still call logging/setLevel.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Server(
            SERVER_NAME,
            version=SERVER_VERSION,
            title="CortexWeb",
            instructions=INSTRUCTIONS,
            on_list_tools=_outage_guarded(list_tools),
            on_call_tool=call_tool,
            on_list_resources=_outage_guarded(list_resources),
            on_list_resource_templates=_outage_guarded(list_resource_templates),
            on_read_resource=_outage_guarded(read_resource),
            on_list_prompts=_outage_guarded(list_prompts),
            on_get_prompt=_outage_guarded(get_prompt),
            on_set_logging_level=set_logging_level,
        )


def stdio_initialization_options(server: Server[Any]) -> Any:
    """A stdio session is stateful: it is told when the tool catalogue changes."""
    return server.create_initialization_options(NotificationOptions(tools_changed=True))


# --- The HTTP edge -------------------------------------------------------------------------------


def _origin_allowed(origin: str) -> bool:
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    scheme, _, rest = origin.partition("://")
    if scheme not in ("http", "https") or not rest or "/" in rest:
        return False
    domain, _port = split_domain_port(rest)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


# The one media type the SDK serves; any other is refused before the body is read.
JSON_MEDIA_TYPE = "application/json"
_NOT_PARSED = object()


def _parsed(body: bytes) -> Any:
    """The JSON of ``body`` read by the SDK's own parser (pydantic's: depth-limited, no lone
    surrogates, numbers within range), so that what the edge reads is what the SDK will handle;
    ``_NOT_PARSED`` for a body it refuses, which the SDK answers with its parse error."""
    try:
        return pydantic_core.from_json(body)
    except ValueError:
        return _NOT_PARSED


def _invalid_id(message: Any) -> bool:
    """A request (it has a method) whose id no JSON-RPC response can carry back. The SDK would take
    it for a notification and answer nothing (202), leaving the client waiting; MCP ids are strings
    or integers, never null."""
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return False
    request_id = message["id"]
    return isinstance(request_id, bool) or not isinstance(request_id, (str, int))


@dataclass(frozen=True)
class TokenDemand:
    """The first request of a message that needs a token: what it asks for, the scope, its id."""

    what: str
    scope: str
    request_id: Any

    def explained(self, problem: str) -> str:
        """What a 401 says: the problem with the token sent (or not sent), then what to do. Plain
        ASCII without double quotes or backslashes: it is also the challenge's error_description."""
        return (
            f"{problem} {self.what} needs an API token with the '{self.scope}' scope; an operator creates "
            f"one with: manage.py tokens create --name <agent> --scopes {self.scope}"
        )


def _token_demand(message: Any) -> TokenDemand | None:
    """The first JSON-RPC request in ``message`` (parsed) that calls a tool or reads a resource
    needing a token, None when none does."""
    for item in message if isinstance(message, list) else [message]:
        if not isinstance(item, dict):
            continue
        params = item.get("params") if isinstance(item.get("params"), dict) else {}
        request_id = item.get("id")
        if item.get("method") == "tools/call":
            name = str(params.get("name", ""))
            if (scope := services.mcp_tool_scope(name)) is not None:
                return TokenDemand(f"Tool '{name}'", str(scope), request_id)
        if item.get("method") == "resources/read":
            uri = str(params.get("uri", ""))
            if services.mcp_resource_needs_token(uri):
                return TokenDemand(f"Resource '{uri}'", str(TokenScope.READ), request_id)
    return None


async def _respond(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    raw = json.dumps(body).encode()
    header_list = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    header_list += [(key.lower().encode(), value.encode()) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": header_list})
    await send({"type": "http.response.body", "body": raw})


async def _rpc_error(send: Send, status: int, code: int, message: str) -> None:
    await _respond(send, status, {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})


async def _error(send: Send, error: ApplicationError, headers: dict[str, str] | None = None) -> None:
    await _respond(
        send,
        error.status_code,
        error_payload(error.code, error.message, error.details),
        {**error.headers(), **(headers or {})},
    )


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, list[Message]]:
    """The whole body (None when it passes ``limit``), and the messages to replay to the SDK app."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), [message]
        body = message.get("body", b"")
        size += len(body)
        if size > limit:
            return None, []
        chunks.append(body)
        if not message.get("more_body", False):
            return b"".join(chunks), []


def _bearer_token(authorization: str) -> ApiToken:
    return api_token_authenticate(raw_token=bearer_token(authorization))


def _declared_too_large(content_length: str, limit: int) -> PayloadTooLarge | None:
    """The 413 a declared ``Content-Length`` over ``limit`` gets before the body is read (as REST's)."""
    length = int(content_length) if content_length.isdigit() else 0  # the server checked its form
    if length <= limit:
        return None
    return PayloadTooLarge(
        f"The request body is {length} bytes; the limit is {limit} bytes.",
        details={"limitBytes": limit, "receivedBytes": length},
    )


class _Answered(Exception):
    """The edge has answered the request itself; the SDK does not see it."""


class McpHttpApp:
    """The ASGI app at ``/mcp``: the edge described in the module docstring, then the SDK app."""

    path = "/mcp"

    def __init__(self) -> None:
        self.server = build_server()
        # Host and Origin are checked by the edge with Django's rules; the SDK's own check would need
        # the same lists in its own (less expressive) format.
        self.sdk_app: ASGIApp = self.server.streamable_http_app(
            streamable_http_path=self.path,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=settings.CORTEX_MAX_BODY_BYTES,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.sdk_app(scope, receive, send)  # lifespan: runs the SDK's session manager
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        caller = Caller(
            transport=CallTransport.MCP_HTTP,
            correlation_id=accept_or_generate_correlation_id(headers.get("x-request-id")),
            base_url=f"{scope.get('scheme', 'http')}://{headers.get('host', '')}",
        )
        correlation_header = (b"x-request-id", (caller.correlation_id or "").encode())

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), correlation_header]}
            await send(message)

        try:
            await self._screen(scope["method"], headers, send_with_id)
            body, trailing = await self._body(receive, send_with_id)
            depth = settings.CORTEX_MAX_JSON_DEPTH
            if json_nested_too_deep(body, depth):  # the one limit of every edge
                await _rpc_error(
                    send_with_id,
                    400,
                    types.INVALID_REQUEST,
                    f"Invalid Request: the JSON is nested more than {depth} levels deep; send a flatter "
                    "document.",
                )
                return
            message = _parsed(body)
            if _invalid_id(message):
                await _rpc_error(
                    send_with_id,
                    400,
                    types.INVALID_REQUEST,
                    "Invalid Request: a request's id must be a string or an integer (not null, a "
                    "fraction or a boolean).",
                )
                return
            caller = await self._authenticated(
                send_with_id, caller, message, headers.get("authorization", "")
            )
        except _Answered:
            return
        replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}, *trailing]
        exchange = Exchange()
        scope = {
            **scope,
            "path": self.path,
            "raw_path": self.path.encode(),
            "state": {**scope.get("state", {}), EDGE_STATE_KEY: caller, EXCHANGE_STATE_KEY: exchange},
        }

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        replaced = False

        async def answer(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and exchange.outage is not None:
                # A handler met an outage: HTTP says it as REST does, in place of the SDK's answer.
                replaced = True
                await _error(send_with_id, exchange.outage)
            elif not replaced:
                await send_with_id(message)

        await self.sdk_app(scope, replayed, answer)

    async def _screen(self, method: str, headers: dict[str, str], send: Send) -> None:
        """Refuse (and raise ``_Answered``) what is refused before the body is read."""
        host = headers.get("host", "")
        domain, _port = split_domain_port(host)
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            await _respond(send, 421, error_payload("invalid_host", f"Host {host!r} is not served here."))
            raise _Answered
        origin = headers.get("origin")
        if origin and not _origin_allowed(origin):
            await _respond(
                send, 403, error_payload("invalid_origin", f"Origin {origin!r} may not call this server.")
            )
            raise _Answered
        if method != "POST":
            # Stateless: no SSE stream to GET (the SDK would hold one open for good) and no session
            # to DELETE.
            refusal = MethodNotAllowed(
                f"{method} is not served: /mcp answers JSON-RPC messages sent with POST (it is "
                "stateless: no event stream, no session).",
                allowed=["POST"],
            )
            await _error(send, refusal)
            raise _Answered
        if headers.get("content-type", "").split(";")[0].strip().lower() != JSON_MEDIA_TYPE:
            # The SDK's own answer to a media type it does not serve (it checks after reading).
            await _rpc_error(
                send,
                415,
                types.INVALID_REQUEST,
                "Unsupported Media Type: Content-Type must be application/json",
            )
            raise _Answered
        if too_large := _declared_too_large(
            headers.get("content-length", ""), settings.CORTEX_MAX_BODY_BYTES
        ):
            await _error(send, too_large)
            raise _Answered

    async def _body(self, receive: Receive, send: Send) -> tuple[bytes, list[Message]]:
        """The body and the messages after it, or 413 (and ``_Answered``) past the limit."""
        limit = settings.CORTEX_MAX_BODY_BYTES
        body, trailing = await _read_body(receive, limit)
        if body is None:
            await _error(
                send,
                PayloadTooLarge(
                    f"The request body is larger than the limit of {limit} bytes.",
                    details={"limitBytes": limit},
                ),
            )
            raise _Answered
        return body, trailing

    async def _authenticated(self, send: Send, caller: Caller, message: Any, authorization: str) -> Caller:
        """``caller`` with the presented token when ``message`` needs one; raises ``_Answered`` once it
        has answered the request itself (401, or 503 when Postgres or Redis is out)."""
        try:
            demand = None if message is _NOT_PARSED else await _in_thread(caller, _token_demand, message)
            if demand is None:
                return caller
            token = await _in_thread(caller, _bearer_token, authorization)
            if not token.has_scope(demand.scope) and await _in_thread(
                caller, oauth_services.is_grant_token, token
            ):
                # An OAuth host can ask its user for the wider scope (MCP step-up): tell it which.
                await self._insufficient_scope(send, demand, origin=caller.base_url)
                raise _Answered
        except AuthenticationRequired as error:
            assert demand is not None  # only the token check raises it
            await self._unauthorised(
                send, error, demand, presented=bool(authorization), origin=caller.base_url
            )
            raise _Answered from error
        except RateLimited as error:
            return replace(caller, token_error=error)
        except DependencyUnavailable as outage:
            await _error(send, outage)
            raise _Answered from outage
        return replace(caller, token=token)

    async def _insufficient_scope(self, send: Send, demand: TokenDemand, *, origin: str) -> None:
        """403 ``insufficient_scope`` (RFC 6750 §3.1) with the scope needed, for an OAuth token; an
        API token lacking a scope gets the tool's own refusal, as over stdio (no one to ask)."""
        description = (
            f"{demand.what} needs the '{demand.scope}' scope, which this authorization did not grant; "
            f"authorize again asking for it."
        )
        challenge = (
            f'Bearer realm="cortexweb", error="insufficient_scope", scope="{demand.scope}", '
            f'error_description="{description}", '
            f'resource_metadata="{oauth_services.resource_metadata_url(origin)}"'
        )
        await _respond(
            send,
            403,
            {
                "jsonrpc": "2.0",
                "id": demand.request_id,
                "error": {
                    "code": NOT_AUTHORISED,
                    "message": description,
                    "data": error_payload("permission_denied", description, {"required": demand.scope}),
                },
            },
            {"WWW-Authenticate": challenge},
        )

    async def _unauthorised(
        self, send: Send, error: AuthenticationRequired, demand: TokenDemand, *, presented: bool, origin: str
    ) -> None:
        """401 with the explanation where each reader looks for it. The official SDK client turns a
        non-2xx answer into "Server returned an error response" unless its body is a JSON-RPC error,
        whose message it raises instead: so the body is one (with the error shape in its data, as a
        resource read refused over stdio has it), and the challenge repeats it for HTTP tools."""
        description = demand.explained(error.message)
        # RFC 6750 §3.1: the error attribute only when a token was sent; the description always
        # (§3 allows it), since it says what to send.
        attributes = ['realm="cortexweb"', *(['error="invalid_token"'] if presented else [])]
        attributes.append(f'error_description="{description}"')
        # RFC 9728 §5.1 (and the MCP authorization spec): where an OAuth client discovers how to get
        # a token for this resource.
        attributes.append(f'resource_metadata="{oauth_services.resource_metadata_url(origin)}"')
        await _respond(
            send,
            error.status_code,
            {
                "jsonrpc": "2.0",
                "id": demand.request_id,
                "error": {
                    "code": NOT_AUTHORISED,
                    "message": description,
                    "data": error_payload(error.code, description, {"required": demand.scope}),
                },
            },
            {"WWW-Authenticate": "Bearer " + ", ".join(attributes)},
        )
