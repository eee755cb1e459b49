"""HTMX pages of the connector registry: the catalogue as the service map shows it."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers

from apps.connectors.health import connectors_health
from apps.connectors.models import DriftState
from apps.connectors.selectors import catalogue_entries
from apps.core.schemas import comma_separated


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
