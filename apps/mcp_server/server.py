"""The MCP server (official ``mcp`` SDK, low-level ``Server``) and its HTTP edge.

``build_server`` wires the SDK's request handlers to ``services``; the same server serves both
transports. Handlers run the synchronous services in worker threads (Django's ORM is sync).

``McpHttpApp`` is what ``cortexweb/asgi.py`` mounts at ``/mcp``: the SDK's streamable-HTTP app in
stateless JSON mode (any number of uvicorn workers can serve it), behind an edge that
- checks ``Host`` and ``Origin`` against Django's ``ALLOWED_HOSTS`` and ``CSRF_TRUSTED_ORIGINS``
  (DNS-rebinding protection with Django's own host matching);
- reads the JSON-RPC body once (413 over ``CORTEX_MAX_BODY_BYTES``) and, when it calls a tool or
  reads a resource that needs a token, answers 401 with ``WWW-Authenticate: Bearer`` unless a
  valid ``Authorization: Bearer`` token came with it; discovery (initialize, ping, lists,
  logging/setLevel) needs none;
- hands the authenticated token, the correlation id and the base URL to the handlers through the
  request's ASGI ``state``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apps.connectors.models import CallTransport
from apps.core.auth import bearer_token
from apps.core.errors import ApplicationError, AuthenticationRequired, RateLimited, error_payload
from apps.core.logging import accept_or_generate_correlation_id, get_logger
from apps.core.models import ApiToken
from apps.core.services import api_token_authenticate
from apps.mcp_server import services
from apps.mcp_server.services import Caller

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
# Implementation-defined JSON-RPC code (the -32000..-32019 band) for a resource read without the token
# it needs; the error shape (code, message, details) is in the error's data.
NOT_AUTHORISED = -32010


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

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = await _in_thread(_caller(ctx, stdio_token=stdio_token), services.mcp_tools_list)
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in tools])

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
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_resource_templates,
            on_read_resource=read_resource,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
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


def _needs_token(body: bytes) -> bool:
    """Whether any JSON-RPC request in ``body`` calls a tool or reads a resource that needs a token.
    A body that is not JSON needs none: the SDK answers it with a parse error."""
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    for item in message if isinstance(message, list) else [message]:
        if not isinstance(item, dict):
            continue
        params = item.get("params") if isinstance(item.get("params"), dict) else {}
        if item.get("method") == "tools/call" and services.mcp_tool_needs_token(str(params.get("name", ""))):
            return True
        if item.get("method") == "resources/read" and services.mcp_resource_needs_token(
            str(params.get("uri", ""))
        ):
            return True
    return False


async def _respond(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    raw = json.dumps(body).encode()
    header_list = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    header_list += [(key.lower().encode(), value.encode()) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": header_list})
    await send({"type": "http.response.body", "body": raw})


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
        host = headers.get("host", "")
        domain, _port = split_domain_port(host)
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            await _respond(send, 421, error_payload("invalid_host", f"Host {host!r} is not served here."))
            return
        origin = headers.get("origin")
        if origin and not _origin_allowed(origin):
            await _respond(
                send, 403, error_payload("invalid_origin", f"Origin {origin!r} may not call this server.")
            )
            return
        caller = Caller(
            transport=CallTransport.MCP_HTTP,
            correlation_id=accept_or_generate_correlation_id(headers.get("x-request-id")),
            base_url=f"{scope.get('scheme', 'http')}://{host}",
        )
        replay: list[Message] = []
        if scope["method"] == "POST":
            body, trailing = await _read_body(receive, settings.CORTEX_MAX_BODY_BYTES)
            if body is None:
                await _respond(
                    send,
                    413,
                    error_payload("payload_too_large", "The request body is larger than the server accepts."),
                )
                return
            if await _in_thread(caller, _needs_token, body):
                authorization = headers.get("authorization", "")
                try:
                    token = await _in_thread(caller, _bearer_token, authorization)
                except AuthenticationRequired as error:
                    await self._unauthorised(send, error, bool(authorization))
                    return
                except RateLimited as error:
                    caller = replace(caller, token_error=error)
                else:
                    caller = replace(caller, token=token)
            replay = [{"type": "http.request", "body": body, "more_body": False}, *trailing]
        scope = {
            **scope,
            "path": self.path,
            "raw_path": self.path.encode(),
            "state": {**scope.get("state", {})},
        }
        scope["state"][EDGE_STATE_KEY] = caller
        correlation_header = (b"x-request-id", (caller.correlation_id or "").encode())

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), correlation_header]}
            await send(message)

        await self.sdk_app(scope, replayed if scope["method"] == "POST" else receive, send_with_id)

    async def _unauthorised(self, send: Send, error: AuthenticationRequired, presented: bool) -> None:
        # RFC 6750 §3: no error attribute when no credentials were sent.
        challenge = (
            'Bearer realm="cortexweb", error="invalid_token"' if presented else 'Bearer realm="cortexweb"'
        )
        await _error(send, error, {"WWW-Authenticate": challenge})
