"""HTMX pages of stored arXiv papers: the list with filters, a live arXiv search, runs, one paper.

Stored papers are public arXiv metadata and open to anyone; the live search and the runs (agents'
queries) are for signed-in staff with a page role (docs/security.md): searching needs
``arxiv.add_searchrun``, reading runs ``arxiv.view_searchrun`` (or the search permission), and a
paper's page lists the runs that found it only to them. Each live search counts against the user's
page-submission limit.

Each view renders its page, or for an HTMX request only the fragment the page includes.
The live search never answers a 500: every outcome (results, still running, rate limited,
upstream failure, feature switched off, bad input) is a message on the page. Full pages
carry the matching status code; HTMX fragments are always 200, because htmx does not swap
error responses and the message is the point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from apps.arxiv import selectors, services
from apps.arxiv.forms import LiveSearchForm, PaperFilterForm
from apps.arxiv.models import Paper, RunStatus, SearchRun
from apps.core.errors import ApplicationError, FeatureDisabled, InvalidParameter, NotFound, RateLimited
from apps.core.filters import filter_choice
from apps.core.pages import page_role_granted, permission_page, render_page_or_fragment, web_url
from apps.core.services import page_submission_check

PAGE_SIZE = 20
# The page roles (docs/security.md): a live search spends the arXiv budget; runs show agents' queries.
SEARCH_PERMISSION = "arxiv.add_searchrun"
VIEW_RUNS_PERMISSION = "arxiv.view_searchrun"
# A page should not hang for the API's full wait; a slower run is shown as "still running".
LIVE_WAIT_CAP_SECONDS = 8.0


# --- Stored papers ----------------------------------------------------------------------


@require_GET
def paper_list(request: HttpRequest) -> HttpResponse:
    """Stored papers: full-text search, category and published-date filters, 20 a page; for run
    readers and searchers also the recent runs (``?status=`` filters them)."""
    form = PaperFilterForm(request.GET or None)
    if form.is_bound:
        form.is_valid()
    filters = form.filters()
    page = Paginator(selectors.paper_search(**filters), PAGE_SIZE).get_page(request.GET.get("page"))
    categories = selectors.paper_categories()
    if filters["category"] and filters["category"] not in categories:
        categories = sorted([*categories, filters["category"]])
    can_view_runs = page_role_granted(request.user, (VIEW_RUNS_PERMISSION, SEARCH_PERMISSION))
    runs = _recent_runs(request) if can_view_runs else {}
    context = {
        **runs,
        "can_view_runs": can_view_runs,
        "form": form,
        "page": page,
        "filters": filters,
        "filtered": any(filters.values()),
        "categories": categories,
        "live_form": LiveSearchForm(),
        "can_search": page_role_granted(request.user, (SEARCH_PERMISSION,)),
        "arxiv_enabled": settings.FEATURE_ARXIV,
        "result": None
        if settings.FEATURE_ARXIV
        else LiveResult(state="disabled", message=_disabled_message()),
    }
    return render_page_or_fragment(
        request,
        "arxiv/paper_list.html",
        "arxiv/partials/_paper_results.html",
        context,
        status=400 if runs.get("status_error") else 200,
    )


def _recent_runs(request: HttpRequest) -> dict[str, Any]:
    """The recent runs as the page lists them, of the ``?status=`` asked for; a status that is not one
    lists none and says what it takes."""
    try:
        status = filter_choice(request.GET, "status", RunStatus.values) or ""
    except InvalidParameter as refused:
        return {"runs": [], "status": "", "statuses": RunStatus.choices, "status_error": refused.message}
    runs = selectors.search_runs_recent(status=status or None)
    return {"runs": runs, "status": status, "statuses": RunStatus.choices, "status_error": ""}


@require_GET
def paper_detail(request: HttpRequest, arxiv_id: str) -> HttpResponse:
    """One stored paper: metadata, versions, links, and the runs that found it."""
    try:
        paper = selectors.paper_get(arxiv_id=arxiv_id)
    except NotFound:
        return render(request, "arxiv/paper_missing.html", {"arxiv_id": arxiv_id}, status=404)
    can_view_runs = page_role_granted(request.user, (VIEW_RUNS_PERMISSION, SEARCH_PERMISSION))
    context = {
        "paper": paper,
        "links": _paper_links(paper),
        "can_view_runs": can_view_runs,
        "found_by": selectors.paper_runs(paper=paper) if can_view_runs else [],
        "is_staff": request.user.is_active and request.user.is_staff,
    }
    return render(request, "arxiv/paper_detail.html", context)


def _paper_links(paper: Paper) -> list[tuple[str, str]]:
    links = [("Abstract on arXiv", web_url(paper.url)), ("PDF", web_url(paper.pdf_url))]
    if paper.doi:
        links.append((f"DOI {paper.doi}", f"https://doi.org/{paper.doi}"))
    return [(label, url) for label, url in links if url]


# --- Live arXiv search -----------------------------------------------------------------------


@dataclass
class LiveResult:
    """What a live search (or a run's page) has to show."""

    state: str  # idle | invalid | results | running | rate_limited | failed | disabled | error
    status: int = 200
    run_id: str = ""
    message: str = ""
    retry_after: int | None = None
    cached: bool = False
    degraded: bool = False  # arXiv was down: the items are stored papers, ``message`` says why
    total: int | None = None
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def run_url(self) -> str:
        return reverse("arxiv:run_detail", args=[self.run_id]) if self.run_id else ""


def _items(outcome: dict[str, Any]) -> list[dict[str, Any]]:
    items = []
    for item in outcome.get("items") or []:
        items.append(
            {
                "id": item["id"],
                "title": item["title"],
                "authors": item.get("authors") or [],
                "published": datetime.fromisoformat(item["published"]) if item.get("published") else None,
                "primary_category": item.get("primaryCategory", ""),
                "url": web_url(item.get("url", "")),
                "pdf_url": web_url(item.get("pdfUrl", "")),
            }
        )
    return items


def _outcome(run: SearchRun) -> LiveResult:
    """The run's state as the page shows it."""
    failure = services.search_run_error(run=run)
    if isinstance(failure, RateLimited):
        return _rate_limited(failure, run_id=str(run.pk))
    if failure is not None:
        return LiveResult(state="failed", status=502, run_id=str(run.pk), message=failure.message)
    outcome = services.search_run_outcome(run=run)
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING):
        return LiveResult(state="running", status=202, run_id=str(run.pk))
    return LiveResult(
        state="results",
        run_id=str(run.pk),
        cached=bool(outcome.get("cached")),
        degraded=bool(outcome.get("degraded")),
        message=str(outcome.get("reason") or ""),
        total=outcome.get("totalResults"),
        items=_items(outcome),
    )


def _rate_limited(error: RateLimited, run_id: str = "") -> LiveResult:
    return LiveResult(
        state="rate_limited",
        status=429,
        run_id=run_id or str(error.details.get("runId", "")),
        message=error.message,
        retry_after=max(1, math.ceil(error.retry_after)),
    )


def _live_search(form: LiveSearchForm) -> LiveResult:
    if not form.is_valid():
        return LiveResult(state="invalid", status=422)
    try:
        run = services.search_submit(payload=form.cleaned_data["payload"])
        run = services.search_run_wait(
            run=run, timeout=min(settings.ARXIV_WAIT_SECONDS, LIVE_WAIT_CAP_SECONDS)
        )
    except FeatureDisabled as error:
        return LiveResult(state="disabled", status=503, message=error.message)
    except RateLimited as error:
        return _rate_limited(error)
    except ApplicationError as error:  # e.g. a query arXiv's syntax cannot express
        return LiveResult(state="error", status=error.status_code, message=error.message)
    return _outcome(run)


@require_http_methods(["GET", "POST"])
@permission_page(SEARCH_PERMISSION)
def live_search(request: HttpRequest) -> HttpResponse:
    """Search arXiv now (POST): results, "still running" with the run to follow, or why not."""
    if request.method == "POST":
        form = LiveSearchForm(request.POST)
        try:
            page_submission_check(user=request.user)
        except RateLimited as error:
            result = _rate_limited(error)
        else:
            result = _live_search(form)
    else:
        form = LiveSearchForm()
        result = LiveResult(state="idle")
    if not settings.FEATURE_ARXIV and result.state == "idle":
        result = LiveResult(state="disabled", message=_disabled_message())
    context = {"live_form": form, "result": result, "arxiv_enabled": settings.FEATURE_ARXIV}
    response = render_page_or_fragment(
        request, "arxiv/live_search.html", "arxiv/partials/_live_search.html", context, status=result.status
    )
    if result.state == "results":
        response["HX-Trigger"] = "papers-changed"  # the stored list on /papers refreshes itself
    if result.retry_after is not None:
        response["Retry-After"] = str(result.retry_after)
    return response


def _disabled_message() -> str:
    try:
        services.arxiv_feature_check()
    except FeatureDisabled as error:
        return error.message
    return ""


@require_GET
@permission_page(VIEW_RUNS_PERMISSION, SEARCH_PERMISSION)
def run_detail(request: HttpRequest, run_id: UUID) -> HttpResponse:
    """One search run as the page shows it; polls itself while the run is queued or running."""
    try:
        run = selectors.search_run_get(run_id=run_id)
    except NotFound:
        return render(request, "arxiv/run_missing.html", {"run_id": run_id}, status=404)
    context = {"run": run, "result": _outcome(run), "query": _run_query(run)}
    return render_page_or_fragment(
        request, "arxiv/run_detail.html", "arxiv/partials/_live_results.html", context
    )


def _run_query(run: SearchRun) -> str:
    parameters = run.parameters or {}
    if "query" in parameters:
        return str(parameters["query"])
    return ", ".join(str(arxiv_id) for arxiv_id in parameters.get("ids", []))
