"""HTMX pages of the knowledge base: ``/knowledge`` (hybrid search with a domain filter, or the
entries of a domain when nothing is typed) and ``/knowledge/<entry_id>`` (an entry, its source,
when it was last verified and whether that makes it stale, and the verifications that cited it).

They live in grounding because an entry's page joins the knowledge base with the verification log:
knowledge sits below grounding and imports nothing from it (tests/knowledge/test_boundaries.py).

Any active staff may read them (docs/security.md); the citing verifications, which carry agents'
claims, only appear for those who may read verifications. The search view renders the page, or
for an HTMX request only its results.
"""

from __future__ import annotations

import re
from typing import Any

from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.core.errors import NotFound, ValidationFailed
from apps.core.pages import (
    HtmxHttpRequest,
    page_role_granted,
    permission_page,
    render_page_or_fragment,
    web_url,
)
from apps.grounding import selectors as grounding_selectors
from apps.knowledge import selectors
from apps.knowledge.forms import KnowledgeSearchForm
from apps.knowledge.models import ENTRY_ID_PATTERN, KnowledgeEntry

PAGE_SIZE = 25
SEARCH_LIMIT = 20
CITING_LIMIT = 50
VERIFICATION_ROLES = ("grounding.view_verification", "grounding.review_verification")


@require_GET
@permission_page()
def knowledge_index(request: HtmxHttpRequest) -> HttpResponse:
    """Search (the hybrid search agents use) or browse entries, filtered by domain."""
    form = KnowledgeSearchForm(request.GET)
    form.is_valid()
    filters = form.filters()
    domains = selectors.domain_names()
    error = ""
    hits: list[selectors.SearchHit] = []
    page = None
    if filters["domain"] and filters["domain"] not in domains:
        error = f"There is no domain {filters['domain']!r}; showing every domain."
        filters["domain"] = ""
    if filters["text"]:
        try:
            hits = selectors.knowledge_search(
                query=filters["text"], domain=filters["domain"] or None, limit=SEARCH_LIMIT
            )
        except (ValidationFailed, NotFound) as failure:
            error = failure.message
    else:
        entries = KnowledgeEntry.objects.in_domain(filters["domain"] or None).select_related("domain")
        page = Paginator(entries.defer("embedding").order_by("entry_id"), PAGE_SIZE).get_page(
            request.GET.get("page")
        )
        for entry in page.object_list:
            entry.staleness = selectors.entry_staleness(entry=entry)  # type: ignore[attr-defined]
    context = {
        "form": form,
        "filters": filters,
        "domains": domains,
        "hits": hits,
        # The hits above the similarity floor (or matching words), then the rest, folded away.
        "good_hits": [hit for hit in hits if hit.matches_well],
        "weak_hits": [hit for hit in hits if not hit.matches_well],
        "similarity_floor": selectors.SIMILARITY_FLOOR,
        "best_similarity": max((hit.similarity for hit in hits), default=0.0),
        "page": page,
        "error": error,
        "stale_after_days": selectors.STALE_AFTER_DAYS,
    }
    return render_page_or_fragment(
        request, "knowledge/index.html", "knowledge/partials/_knowledge_results.html", context
    )


@require_GET
@permission_page()
def entry_detail(request: HtmxHttpRequest, entry_id: str) -> HttpResponse:
    """One entry: content, source, last verified and staleness, related entries, citing verifications."""
    entry = None
    if re.match(ENTRY_ID_PATTERN, entry_id):
        try:
            entry = selectors.entry_get(entry_id=entry_id)
        except NotFound:
            entry = None
    if entry is None:
        return render(request, "knowledge/entry_missing.html", {"entry_id": entry_id}, status=404)
    context: dict[str, Any] = {
        "entry": entry,
        "source_url": web_url(entry.url),
        "staleness": selectors.entry_staleness(entry=entry),
        "stale_after_days": selectors.STALE_AFTER_DAYS,
        "can_read_verifications": page_role_granted(request.user, VERIFICATION_ROLES),
    }
    if context["can_read_verifications"]:
        citing, total = grounding_selectors.verifications_citing(entry_id=entry.entry_id, limit=CITING_LIMIT)
        context.update(
            citing=[_citation(verification, entry.entry_id) for verification in citing],
            citing_total=total,
            threshold=grounding_selectors.review_threshold(),
        )
    return render(request, "knowledge/entry_detail.html", context)


def _citation(verification: Any, entry_id: str) -> dict[str, Any]:
    """A citing verification and the relevance it gave this entry."""
    relevance = None
    for source in verification.sources or []:
        if isinstance(source, dict) and source.get("entry_id") == entry_id:
            relevance = source.get("relevance")
            break
    return {"verification": verification, "relevance": relevance}
