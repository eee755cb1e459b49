"""Agent endpoints of the connector registry: the signed service map, the tool catalogue,
tool calls and planning. Thin: parse, call one selector or service, render."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from ninja import Query, Router, Schema

from apps.connectors import selectors
from apps.connectors.gateway import tool_call
from apps.connectors.planner import plan_create
from apps.connectors.schemas import PlanIn, PlanOut, ToolCallIn, ToolCallOut, ToolOut
from apps.core.auth import read_token, upstream_token
from apps.core.schemas import comma_separated

router = Router(tags=["connectors"])


@router.get(
    "/connectors/service-map",
    auth=None,
    summary="The signed service map",
    response={200: dict, 304: None},
    description="Every connector and its published tools, signed with HMAC-SHA256 over RFC 8785 JSON. "
    "Send the ETag back in If-None-Match to get 304 while the registry is unchanged.",
)
def service_map(request: HttpRequest) -> HttpResponse:
    document = selectors.service_map_cached()
    if document.etag in _etags(request.headers.get("If-None-Match", "")):
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = HttpResponse(document.body, content_type="application/json")
    response["ETag"] = document.etag
    response["Cache-Control"] = "no-cache"  # revalidate each time: the registry can change any moment
    return response


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


class ToolFilter(Schema):
    tags: str | None = None
    scopes: str | None = None


@router.get("/tools", auth=None, response=list[ToolOut], summary="Tools, filtered by tags and scopes")
def list_tools(request: HttpRequest, filters: Query[ToolFilter]) -> list[dict]:
    """Published tools carrying *all* the comma-separated ``tags`` and ``scopes`` given."""
    tools = selectors.tools_filtered(
        tags=comma_separated(filters.tags), scopes=comma_separated(filters.scopes)
    )
    return [
        {
            "name": tool.name,
            "connector": tool.connector.slug,
            "description": tool.description or None,
            "tags": tool.tags,
            "scopes": tool.scopes,
            "inputSchema": selectors.tool_input_schema(tool),
        }
        for tool in tools
    ]


@router.post(
    "/tools/call", auth=upstream_token, response=ToolCallOut, summary="Call a tool by canonical name"
)
def call_tool(request: HttpRequest, payload: ToolCallIn) -> dict:
    """Dispatch to the tool's connector (aliases accepted); the result comes back under the canonical name.

    Upstream failures are 502 with ``details.retryable``; bad arguments are 422 naming each one.
    """
    return tool_call(name=payload.name, arguments=payload.arguments, token=request.auth)


@router.post("/agents/plan", auth=read_token, response=PlanOut, summary="Plan tool steps for an intent")
def plan(request: HttpRequest, payload: PlanIn) -> dict:
    """Ordered steps chosen from the registry by tags and scopes (never by hard-coded names)."""
    return plan_create(intent=payload.intent, query=payload.query, scope=payload.scope)
