"""The live events page (``/events``): the latest stored events, refreshed by HTMX polling.

Staff only (``pages.permission_page``): payloads carry search text, run parameters and errors.
Anonymous visitors are sent to the admin login (an HTMX poll whose session ended gets
``HX-Redirect``, so the whole page goes to the login instead of the login form landing inside the
list); a signed-in user who is not staff gets 403.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.core.models import Event
from apps.core.pages import permission_page
from apps.core.selectors import EVENT_LIMIT, events_recent

SUMMARY_CHARS = 160
MAX_FILTER_CHARS = 100


@dataclass
class EventRow:
    id: int
    name: str
    created_at: datetime
    correlation_id: str
    summary: str
    payload: str


def _summary(payload: Any) -> str:
    """``key=value`` pairs in the payload's stored order (jsonb: shorter keys first), nested
    values as compact JSON, cut to ``SUMMARY_CHARS``."""
    if not isinstance(payload, dict):
        text = json.dumps(payload, ensure_ascii=False)
    else:
        parts = []
        for key, value in payload.items():
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            parts.append(f"{key}={shown}")
        text = " ".join(parts)
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _rows(events: QuerySet[Event]) -> list[EventRow]:
    return [
        EventRow(
            id=event.pk,
            name=event.name,
            created_at=event.created_at,
            correlation_id=event.correlation_id,
            summary=_summary(event.payload),
            payload=json.dumps(event.payload, indent=2, ensure_ascii=False, sort_keys=True),
        )
        for event in events
    ]


def _prefixes() -> list[str]:
    """``arxiv.``, ``tool.`` …: the first segment of every stored event name, for quick filters."""
    names = Event.objects.order_by().values_list("name", flat=True).distinct()
    return sorted({name.split(".", 1)[0] + "." for name in names if "." in name})


@require_GET
@never_cache
@permission_page()
def events(request: HttpRequest) -> HttpResponse:
    """The latest events; the page polls its list fragment every 2 s with the same filters."""
    prefix = request.GET.get("prefix", "").strip()[:MAX_FILTER_CHARS]
    correlation_id = request.GET.get("correlation", "").strip()[:MAX_FILTER_CHARS]
    params = {key: value for key, value in (("prefix", prefix), ("correlation", correlation_id)) if value}
    base = reverse("core_pages:events")
    context = {
        "rows": _rows(events_recent(prefix=prefix, correlation_id=correlation_id)),
        "prefix": prefix,
        "correlation_id": correlation_id,
        "poll_url": f"{base}?{urlencode(params)}" if params else base,
        "prefixes": _prefixes(),
        "limit": EVENT_LIMIT,
    }
    template = "core/partials/_events.html" if request.htmx else "core/events.html"
    response = render(request, template, context)
    patch_vary_headers(response, ["HX-Request"])
    return response
