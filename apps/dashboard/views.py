"""The home page (``/``): what CortexWeb is, for everyone; the dashboard below it for staff, each
chart a panel that HTMX refreshes from ``/dashboard/<panel>`` (the same fragment the page includes).

Anonymous visitors and signed-in users without a staff role see the description only; the panels
count agents' traffic and operators' queues (docs/security.md: staff).
"""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.core.pages import HtmxHttpRequest, page_role_granted, permission_page, render_page_or_fragment
from apps.dashboard.alerts import alerts_firing
from apps.dashboard.panels import PANELS

REFRESH_SECONDS = 60


@require_GET
def home(request: HtmxHttpRequest) -> HttpResponse:
    panels, firing = [], []
    if page_role_granted(request.user, ()):
        panels = [{"panel": panel, **panel.build(None)} for panel in PANELS.values()]
        # The connectors panel read the health report: the banner judges the same one.
        firing = alerts_firing(report=next(item["health"] for item in panels if "health" in item))
    context = {"panels": panels, "alerts": firing, "refresh_seconds": REFRESH_SECONDS}
    return render(request, "dashboard/home.html", context)


@require_GET
@permission_page()
def dashboard_panel(request: HtmxHttpRequest, panel: str) -> HttpResponse:
    """One panel: its fragment for HTMX (the refresh), else a page with only that panel."""
    found = PANELS.get(panel)
    if found is None:
        raise Http404(f"No dashboard panel '{panel}'.")
    context = {"panel": found, **found.build(None), "refresh_seconds": REFRESH_SECONDS}
    return render_page_or_fragment(
        request, "dashboard/panel.html", "dashboard/partials/_panel.html", {"item": context}
    )
