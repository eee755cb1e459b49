"""A real MCP server standing in for the Wikidata MCP server, built with the ``mcp`` SDK.

It serves the six tools of the recorded ``tools/list`` (``tests/fixtures/mcp``) under
their exact names and input schemas, over streamable HTTP on a free 127.0.0.1 port
(uvicorn in a background thread). Answers follow the recordings and the upstream's
documented behaviour: input problems and outages come back as ordinary text with
``isError: false``, schema violations and unknown tools as ``isError: true``.

Switches for tests: ``stateless`` (the current server) or stateful (older servers:
``mcp-session-id``), ``unavailable`` (every tool answers the outage text),
``fail_status`` (every HTTP request answers that status), ``delay`` (seconds
before each tool answers), and ``rename_tool`` /
``remove_tool`` / ``set_input_schema`` / ``set_description`` to make the next sync see drift.
``after_next_call`` changes the server while it runs (between two calls, nobody running a command),
``notify_tools_changed`` sends ``notifications/tools/list_changed`` on each call's response stream,
``unknown_as_jsonrpc_error`` answers an unknown tool with JSON-RPC -32602 instead of a result, and
``unknown_even_if_listed`` names tools it lists but answers "Unknown tool" for (a confused upstream).
"""

from __future__ import annotations

import copy
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import mcp_types as types
import pytest
import uvicorn
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from starlette.types import Receive, Scope, Send

from apps.core.ratelimit import RateLimiter

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "mcp"
UNAVAILABLE = "Wikidata is currently unavailable. Please retry shortly."


def _sse_data(name: str) -> dict[str, Any]:
    """The JSON-RPC message in a recorded SSE response (``data:`` line)."""
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("data: "):
            return json.loads(line[len("data: ") :])
    raise ValueError(f"no data line in {name}")


RECORDED_TOOLS: list[dict[str, Any]] = json.loads(
    (FIXTURES / "tools_list.result.json").read_text(encoding="utf-8")
)["result"]["tools"]
RECORDED_INITIALIZE: dict[str, Any] = _sse_data("initialize.response.http")["result"]
EMPTY_ID_TEXT: str = _sse_data("call_get_statements_empty_id.response.http")["result"]["content"][0]["text"]

# The upstream docstrings' examples and issue wmde/WikidataMCP#2 (see reference/external-apis.md §5).
Q42_STATEMENTS = (
    "Douglas Adams (Q42): instance of (P31): human (Q5)\n"
    "Douglas Adams (Q42): occupation (P106): novelist (Q6625963)"
)
SEARCH_ITEMS = (
    "Q23163: A Scientific Romance — 1997 novel by Ronald Wright\n"
    "Q627333: The Time Machine — 1895 dystopian science fiction novella by H. G. Wells"
)
SEARCH_PROPERTIES = (
    "P551: residence — the place where the person is or has been, resident\n"
    "P276: location — location of the object, structure or event"
)
Q15329_P6 = (
    "Santa Rosa de Calamuchita (Q15329): head of government (P6): Claudio Chavero (Q109872022)\n"
    "  Rank: normal\n"
    "  Qualifier:\n"
    "    - start time (P580): 10 December 2019\n"
    "    - end time (P582): 10 December 2023\n"
    "    - position held (P39): intendant (Q6491450)"
)
Q42_HIERARCHY = json.dumps({"Douglas Adams (Q42)": {"instanceof": ["human (Q5)"], "subclassof": []}})
SPARQL_CSV = ";human\n0;Q42\n1;Q820"


def _entity_text(arguments: dict[str, Any], known: dict[str, str]) -> str:
    entity_id = arguments.get("entity_id", "")
    if not entity_id:
        return EMPTY_ID_TEXT
    return known.get(entity_id, f"Entity {entity_id} not found")


def _statement_values(arguments: dict[str, Any]) -> str:
    if not arguments.get("entity_id"):
        return EMPTY_ID_TEXT
    if not arguments.get("property_id"):
        return "Property ID cannot be empty."
    if (arguments["entity_id"], arguments["property_id"]) == ("Q15329", "P6"):
        return Q15329_P6
    return f"No statement found for {arguments['entity_id']} with property {arguments['property_id']}"


CANNED = {
    "search_items": lambda arguments: SEARCH_ITEMS,
    "search_properties": lambda arguments: SEARCH_PROPERTIES,
    "get_statements": lambda arguments: _entity_text(arguments, {"Q42": Q42_STATEMENTS}),
    "get_instance_and_subclass_hierarchy": lambda arguments: _entity_text(arguments, {"Q42": Q42_HIERARCHY}),
    "get_statement_values": _statement_values,
    "execute_sparql": lambda arguments: (
        SPARQL_CSV if arguments.get("sparql", "").strip() else "SPARQL query cannot be empty."
    ),
}


def canned_answer(tool: str, arguments: dict[str, Any]) -> str:
    """What the recorded server says for one of its tools (by its recorded name)."""
    return CANNED[tool](arguments)


def _text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    content = [types.TextContent(type="text", text=text)]
    if is_error:  # FastMCP sends no structuredContent with an error
        return types.CallToolResult(content=content, is_error=True)
    return types.CallToolResult(content=content, structured_content={"result": text}, is_error=False)


class FakeWikidataMCP:
    """The server, its switches, and what it saw (``requests``: method, path, chosen headers)."""

    RECORDED_HEADERS = ("user-agent", "mcp-session-id", "authorization", "x-api-key", "x-request-id")

    def __init__(self, *, stateless: bool) -> None:
        self.stateless = stateless
        self.requests: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.reset()
        self._server = Server(
            RECORDED_INITIALIZE["serverInfo"]["name"],
            version=RECORDED_INITIALIZE["serverInfo"]["version"],
            instructions=RECORDED_INITIALIZE["instructions"],
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self._app = self._server.streamable_http_app(streamable_http_path="/mcp/", stateless_http=stateless)
        self._uvicorn: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # --- switches ---

    def reset(self) -> None:
        """Back to the recorded server: its six tools, available, every request answered."""
        self.tools: list[dict[str, Any]] = copy.deepcopy(RECORDED_TOOLS)
        self.implementation = {tool["name"]: tool["name"] for tool in RECORDED_TOOLS}
        self.unavailable = False
        self.fail_status: int | None = None
        self.delay = 0.0
        self.after_next_call: Callable[[], None] | None = None
        self.notify_tools_changed = False
        self.unknown_as_jsonrpc_error = False
        self.unknown_even_if_listed: set[str] = set()
        self.requests.clear()
        self.calls.clear()

    def rename_tool(self, old: str, new: str) -> None:
        """The upstream renames a tool; it still runs the same code."""
        self._tool(old)["name"] = new
        self.implementation[new] = self.implementation.pop(old)

    def set_description(self, name: str, description: str) -> None:
        self._tool(name)["description"] = description

    def remove_tool(self, name: str) -> None:
        self.tools.remove(self._tool(name))

    def set_input_schema(self, name: str, schema: dict[str, Any]) -> None:
        self._tool(name)["inputSchema"] = schema

    def add_tool(self, name: str, schema: dict[str, Any]) -> None:
        self.tools.append({"name": name, "description": f"{name} (new upstream)", "inputSchema": schema})

    def _tool(self, name: str) -> dict[str, Any]:
        return next(tool for tool in self.tools if tool["name"] == name)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp/"

    @property
    def session_ids(self) -> list[str | None]:
        return [request["headers"].get("mcp-session-id") for request in self.requests]

    # --- MCP handlers ---

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in self.tools])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        self.calls.append((params.name, arguments))
        listed = next((tool for tool in self.tools if tool["name"] == params.name), None)
        if listed is None or params.name in self.unknown_even_if_listed:
            if self.unknown_as_jsonrpc_error:  # the specification's example answer
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
            return _text_result(f"Unknown tool: {params.name}", is_error=True)
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(listed["inputSchema"]).iter_errors(arguments)
        )
        if error is not None:
            return _text_result(f"Input validation error: {error.message}", is_error=True)
        if self.delay:
            await anyio.sleep(self.delay)
        if self.unavailable:
            return _text_result(UNAVAILABLE)
        answer = _text_result(canned_answer(self.implementation[params.name], arguments))
        if self.after_next_call is not None:  # e.g. redeployed with a renamed tool after this call
            change, self.after_next_call = self.after_next_call, None
            change()
        if self.notify_tools_changed:
            # On this request's own stream: a stateless server has no other to send it on.
            await ctx.session.send_notification(
                types.ToolListChangedNotification(), related_request_id=ctx.request_id
            )
        return answer

    # --- HTTP ---

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
            self.requests.append(
                {
                    "method": scope["method"],
                    "path": scope["path"],
                    "headers": {name: headers[name] for name in self.RECORDED_HEADERS if name in headers},
                }
            )
            if self.fail_status is not None:
                await send({"type": "http.response.start", "status": self.fail_status, "headers": []})
                await send({"type": "http.response.body", "body": b"upstream says no"})
                return
        await self._app(scope, receive, send)

    def start(self) -> FakeWikidataMCP:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._uvicorn.run, kwargs={"sockets": [sock]}, name="fake-wikidata-mcp", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._uvicorn.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the fake MCP server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- pytest fixtures (import the *_fixture functions into a test module to use them) -------


@pytest.fixture(scope="session", name="mcp_servers")
def mcp_servers_fixture() -> Iterator[dict[str, FakeWikidataMCP]]:
    """Both generations of the server, started once: the current stateless one and an older stateful one."""
    servers = {
        "stateless": FakeWikidataMCP(stateless=True).start(),
        "stateful": FakeWikidataMCP(stateless=False).start(),
    }
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture(name="wikidata_mcp")
def wikidata_mcp_fixture(
    request, mcp_servers, default_registry, monkeypatch, settings
) -> Iterator[FakeWikidataMCP]:
    """The default manifest imported, and the wikidata connector pointed at a fresh fake server.

    The native wikidata.* tools the gateway falls back to when the MCP server fails point at a
    closed port, so a test of an MCP failure never reaches the real Wikidata.
    Stateless unless parametrized indirectly with ``"stateful"``.
    """
    server = mcp_servers[getattr(request, "param", "stateless")]
    server.reset()
    monkeypatch.setenv("WIKIDATA_MCP_URL", server.url)
    settings.WIKIDATA_API_URL = settings.WIKIDATA_VECTOR_URL = settings.WIKIDATA_SPARQL_URL = (
        "http://127.0.0.1:9"
    )
    settings.WIKIDATA_MAX_RETRIES = 0
    limiter = RateLimiter("connector:wikidata", interval=1.0)
    limiter.reset()
    yield server
    limiter.reset()
    server.reset()
