"""HTMX pages of the connector registry: the catalogue as the service map shows it, each connector's
and each tool's page, and on them the operator actions (Sync, "Try this tool") behind the admin's
permission (staff with ``connectors.change_connector``).

Sync and a confirmed call count against the user's page-submission limit; a dry run sends nothing and
is not counted. An HTMX request gets the action's fragment (always 200, so htmx swaps it in), a plain
form post the whole page with the status (422 for bad input).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST

from apps.connectors import operator_actions
from apps.connectors.health import connectors_health
from apps.connectors.models import Connector, DriftState, RemoteTool
from apps.connectors.selectors import catalogue_entries, tool_input_schema
from apps.core.pages import (
    HtmxHttpRequest,
    page_role_granted,
    page_submission_refusal,
    permission_page,
    render_page_or_fragment,
)
from apps.core.schemas import comma_separated

OPERATOR_PERMISSION = "connectors.change_connector"


@dataclass
class Chip:
    value: str
    selected: bool
    url: str


def _query(tags: list[str], scopes: list[str]) -> str:
    params = {key: ",".join(values) for key, values in (("tags", tags), ("scopes", scopes)) if values}
    return f"?{urlencode(params)}" if params else ""


def _toggled(values: list[str], value: str) -> list[str]:
    return sorted(set(values) ^ {value})


def catalogue(request: HttpRequest) -> HttpResponse:
    """Connectors and their tools; tag and scope chips filter tools (every chosen one must match).

    The full page, or for an HTMX request only the catalogue fragment the page includes.
    """
    tags, scopes = (
        sorted(set(comma_separated(request.GET.get("tags")))),
        sorted(set(comma_separated(request.GET.get("scopes")))),
    )
    entries, all_tags, all_scopes = catalogue_entries(tags=tags, scopes=scopes)
    states = connectors_health()
    for entry in entries:
        entry.health = states.get(entry.connector.slug)
    base = reverse("connectors:catalogue")
    context = {
        "entries": entries,
        "tags": tags,
        "scopes": scopes,
        "filtered": bool(tags or scopes),
        "tool_total": sum(len(entry.tools) for entry in entries),
        "tag_chips": [
            Chip(tag, tag in tags, base + _query(_toggled(tags, tag), scopes)) for tag in sorted(all_tags)
        ],
        "scope_chips": [
            Chip(scope, scope in scopes, base + _query(tags, _toggled(scopes, scope)))
            for scope in sorted(all_scopes)
        ],
        "clear_url": base,
        "drift": DriftState,
    }
    template = "connectors/partials/_catalogue.html" if request.htmx else "connectors/catalogue.html"
    response = render(request, template, context)
    patch_vary_headers(response, ["HX-Request"])
    return response


# --- A connector's page and Sync ---------------------------------------------------------------------


def _connector_or_404(slug: str) -> Connector:
    return get_object_or_404(Connector, slug=slug)


def _connector_context(request: HttpRequest, connector: Connector, **extra: Any) -> dict[str, Any]:
    return {
        "connector": connector,
        "tools": connector.tools.order_by("position", "name"),
        "health": connectors_health().get(connector.slug),
        "last_sync": connector.syncs.order_by("-started_at").first(),
        "can_operate": page_role_granted(request.user, (OPERATOR_PERMISSION,)),
        "drift": DriftState,
        **extra,
    }


def connector_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A connector, its tools and its last sync; Sync for operators."""
    connector = _connector_or_404(slug)
    return render(request, "connectors/connector_detail.html", _connector_context(request, connector))


@require_POST
@permission_page(OPERATOR_PERMISSION)
def connector_sync(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Sync the connector now and show its drift: added, removed, renamed, changed, awaiting approval."""
    connector = _connector_or_404(slug)
    error, status, retry_after = page_submission_refusal(request.user)
    outcome = None if error else operator_actions.connector_sync_run(connector=connector)
    if outcome is not None:
        connector.refresh_from_db()
    context = _connector_context(request, connector, sync_outcome=outcome, sync_refusal=error)
    response = render_page_or_fragment(
        request,
        "connectors/connector_detail.html",
        "connectors/partials/_sync.html",
        context,
        status=status if error else 200,
    )
    if retry_after:
        response["Retry-After"] = retry_after
    return response


# --- A tool's page and "Try this tool" -------------------------------------------------------------


def _tool_or_404(name: str) -> RemoteTool:
    return get_object_or_404(RemoteTool.objects.select_related("connector"), name=name)


def _tool_context(request: HttpRequest, tool: RemoteTool, **extra: Any) -> dict[str, Any]:
    can_operate = page_role_granted(request.user, (OPERATOR_PERMISSION,))
    return {
        "tool": tool,
        "connector": tool.connector,
        "aliases": [alias.name for alias in tool.aliases.order_by("name")],
        "input_schema_json": json.dumps(tool_input_schema(tool), indent=2, ensure_ascii=False),
        "can_operate": can_operate,
        "drift": DriftState,
        "form": operator_actions.trial_form(tool) if can_operate else None,
        **extra,
    }


def tool_detail(request: HttpRequest, name: str) -> HttpResponse:
    """A tool: description, tags, scopes, upstream name, input schema; "Try this tool" for operators."""
    tool = _tool_or_404(name)
    return render(request, "connectors/tool_detail.html", _tool_context(request, tool))


@require_POST
@permission_page(OPERATOR_PERMISSION)
def tool_try(request: HtmxHttpRequest, name: str) -> HttpResponse:
    """Without ``confirm``: check the form and show the dry run (nothing sent). With it: check the
    confirmed arguments again (never trusting the round trip) and make the call through the gateway."""
    tool = _tool_or_404(name)
    extra: dict[str, Any] = {}
    status = 200
    retry_after = None
    if operator_actions.CONFIRM_FIELD in request.POST:
        form = operator_actions.trial_form(tool)
        arguments, errors = operator_actions.confirmed_arguments(tool, request.POST.get("arguments_json", ""))
        if arguments is None:
            status, extra["confirm_errors"] = 422, errors
        else:
            refusal, status, retry_after = page_submission_refusal(request.user)
            if refusal:
                extra["refusal"] = refusal
            else:
                status = 200
                extra["outcome"] = operator_actions.trial_call(tool, arguments)
                extra["arguments_json"] = json.dumps(arguments, indent=2, ensure_ascii=False, sort_keys=True)
    else:
        form = operator_actions.trial_form(tool, request.POST)
        arguments = operator_actions.trial_arguments(tool, form)
        if arguments is None:
            status = 422
        else:
            extra["dry_run"] = operator_actions.trial_dry_run(tool, arguments)
    response = render_page_or_fragment(
        request,
        "connectors/tool_detail.html",
        "connectors/partials/_tool_trial.html",
        {**_tool_context(request, tool), "form": form, **extra},
        status=status,
    )
    if retry_after:
        response["Retry-After"] = retry_after
    return response
