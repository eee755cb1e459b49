"""HTMX pages of the grounding review queue: the queue with filters and inline reviews, and one
verification's evidence.

Staff only: reviewers (``grounding.review_verification``) see the queue and review; analysts with
``grounding.view_verification`` may read a verification's page. Anonymous visitors go to the admin
login; a signed-in user without the permission gets 403.

Each view renders its page, or for an HTMX request only the fragment the page includes. A review
that the service refuses is shown on the row it came from: HTMX fragments are 200 (htmx does not
swap error responses), full pages carry 400.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import ValidationFailed
from apps.core.pages import permission_page, render_page_or_fragment, web_url
from apps.grounding import selectors, services
from apps.grounding.forms import ReviewFilterForm, ReviewForm
from apps.grounding.models import Verdict, Verification
from apps.knowledge import selectors as knowledge_selectors
from apps.knowledge.models import KnowledgeEntry

PAGE_SIZE = 25
REVIEW_PERMISSION = "grounding.review_verification"
VIEW_PERMISSION = "grounding.view_verification"
VERDICT_BADGES = {Verdict.SUPPORTED: "badge-ok", Verdict.CONTRADICTED: "badge-error"}


def _safe_next(request: HttpRequest, candidate: str, default: str) -> str:
    """Where to go back after a review: a local URL only."""
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return default


# --- The queue ----------------------------------------------------------------------------------


def _row(
    verification: Verification, *, next_url: str, threshold: float, error: str = "", form: Any = None
) -> dict[str, Any]:
    """A queue row: the verification and what its cells need."""
    return {
        "verification": verification,
        "verdict_badge": VERDICT_BADGES.get(verification.verdict, "badge-warn"),
        "best_entry_id": _best_entry_id(verification),
        "threshold": threshold,
        "verdicts": Verdict.choices,
        "next_url": next_url,
        "error": error,
        "form": form,
    }


@require_GET
@permission_page(REVIEW_PERMISSION)
def verification_queue(request: HttpRequest) -> HttpResponse:
    """The review queue: filters (default: pending), 25 a page, each row reviewable in place."""
    form = ReviewFilterForm(request.GET)
    form.is_valid()
    filters = form.filters()
    page = Paginator(selectors.verifications_filtered(filters), PAGE_SIZE).get_page(request.GET.get("page"))
    next_url = request.get_full_path()
    threshold = selectors.review_threshold()
    domains = knowledge_selectors.domain_names()
    if filters["domain"] and filters["domain"] not in domains:
        domains = sorted([*domains, filters["domain"]])
    context = {
        "form": form,
        "filters": filters,
        "page": page,
        "rows": [_row(verification, next_url=next_url, threshold=threshold) for verification in page],
        "verdict_counts": _verdict_counts(request, filters),
        "threshold": threshold,
        "domains": domains,
        "verdicts": Verdict.choices,
        "queue_url": reverse("grounding:verification_queue"),
    }
    return render_page_or_fragment(
        request, "grounding/verifications.html", "grounding/partials/_verification_results.html", context
    )


def _verdict_counts(request: HttpRequest, filters: dict[str, Any]) -> list[dict[str, Any]]:
    """Each verdict's count under the other filters, with a link that filters by it."""
    counts = selectors.verdict_counts(filters)
    out = []
    for value, label in Verdict.choices:
        query = request.GET.copy()
        query["verdict"] = value
        query.pop("page", None)
        out.append(
            {
                "value": value,
                "label": label,
                "count": counts[value],
                "badge": VERDICT_BADGES.get(value, "badge-warn"),
                "url": f"?{query.urlencode()}",
                "current": filters["verdict"] == value,
            }
        )
    return out


# --- One verification ------------------------------------------------------------------------------


def _missing(request: HttpRequest, verification_id: int) -> HttpResponse:
    return render(
        request, "grounding/verification_missing.html", {"verification_id": verification_id}, status=404
    )


@require_GET
@permission_page(VIEW_PERMISSION, REVIEW_PERMISSION)
def verification_detail(request: HttpRequest, verification_id: int) -> HttpResponse:
    """The claim beside its evidence: each source's excerpt and full entry, the contradiction signals,
    the correction, related entries, the review, and the message it came from."""
    verification = selectors.verification_find(verification_id)
    if verification is None:
        return _missing(request, verification_id)
    return render(request, "grounding/verification_detail.html", _detail_context(request, verification))


def _detail_context(
    request: HttpRequest,
    verification: Verification,
    *,
    form: ReviewForm | None = None,
    error: str = "",
) -> dict[str, Any]:
    sources = [s for s in verification.sources or [] if isinstance(s, dict)]
    wanted = {str(s.get("entry_id", "")) for s in sources} | set(verification.related_entries)
    if verification.corrected_entry:
        wanted.add(verification.corrected_entry)
    entries = {
        entry.entry_id: entry
        for entry in KnowledgeEntry.objects.select_related("domain", "knowledge_source").filter(
            entry_id__in=wanted
        )
    }
    evidence = []
    for source in sources:
        entry = entries.get(str(source.get("entry_id", "")))
        evidence.append(
            {
                "entry_id": source.get("entry_id", ""),
                "excerpt": source.get("content_excerpt", ""),
                "relevance": source.get("relevance"),
                "source": source.get("source", ""),
                "url": web_url(source.get("url")),
                "entry": entry,
                "entry_url": web_url(entry.url) if entry else "",
                "qid": str(source.get("qid") or ""),
                "claim_guid": str(source.get("claimGuid") or ""),
                "fact_id": source.get("factId") if isinstance(source.get("factId"), int) else None,
            }
        )
    detail_url = reverse("grounding:verification_detail", args=[verification.pk])
    return {
        "verification": verification,
        "verdict_badge": VERDICT_BADGES.get(verification.verdict, "badge-warn"),
        "evidence": evidence,
        "signals": [s for s in verification.signals or [] if isinstance(s, dict)],
        "related": [(entry_id, entries.get(entry_id)) for entry_id in verification.related_entries],
        "corrected_entry": entries.get(verification.corrected_entry),
        "can_review": request.user.has_perm(REVIEW_PERMISSION),
        "threshold": selectors.review_threshold(),
        "form": form or ReviewForm(initial={"correction": verification.correction}),
        "error": error,
        "next_url": detail_url,
    }


# --- One grounded message ---------------------------------------------------------------------------


@require_GET
@permission_page(VIEW_PERMISSION, REVIEW_PERMISSION)
def message_detail(request: HttpRequest, message_id: UUID) -> HttpResponse:
    """A grounded message: its text, summary, each claim's verification and the knowledge injected."""
    message = selectors.message_find(message_id)
    if message is None:
        return render(request, "grounding/message_missing.html", {"message_id": message_id}, status=404)
    verifications = list(message.verifications.all())
    best_ids = {_best_entry_id(verification) for verification in verifications} - {""}
    entries = {
        (entry.topic, entry.source): entry.entry_id
        for entry in KnowledgeEntry.objects.filter(entry_id__in=best_ids).only("entry_id", "topic", "source")
    }
    injected = [
        {**item, "entry_id": entries.get((item.get("topic"), item.get("source")), "")}
        for item in message.injected_knowledge or []
        if isinstance(item, dict)
    ]
    threshold = selectors.review_threshold()
    context = {
        "message": message,
        "rows": [
            {
                "verification": verification,
                "verdict_badge": VERDICT_BADGES.get(verification.verdict, "badge-warn"),
                "best_entry_id": _best_entry_id(verification),
            }
            for verification in verifications
        ],
        "injected": injected,
        "threshold": threshold,
    }
    return render(request, "grounding/message_detail.html", context)


def _best_entry_id(verification: Verification) -> str:
    sources = verification.sources if isinstance(verification.sources, list) else []
    best = sources[0] if sources and isinstance(sources[0], dict) else {}
    return str(best.get("entry_id", ""))


# --- Reviewing --------------------------------------------------------------------------------------


@require_POST
@permission_page(REVIEW_PERMISSION)
def verification_review(request: HttpRequest, verification_id: int) -> HttpResponse:
    """Approve, reject or correct one verification through ``services.verification_review``.

    HTMX: the updated row (or the row with the reason the review was refused). Otherwise: back to
    where the form was (303), or the verification's page with the reason (400)."""
    verification = selectors.verification_find(verification_id)
    if verification is None:
        return _missing(request, verification_id)
    queue_url = reverse("grounding:verification_queue")
    next_url = _safe_next(request, request.POST.get("next", ""), queue_url)
    form = ReviewForm(request.POST)
    error = ""
    if form.is_valid():
        data = form.cleaned_data
        try:
            verification = services.verification_review(
                verification=verification,
                reviewer=request.user,
                action=data["action"],
                verdict=data["verdict"],
                note=data["note"],
                correction=data["correction"],
                entry_id=data["entry_id"],
            )
        except ValidationFailed as failure:
            error = failure.message
    else:
        error = form.first_error()
    verification = (
        selectors.verification_find(verification_id) or verification
    )  # as stored, with its relations
    if request.htmx:
        context = _row(
            verification,
            next_url=next_url,
            threshold=selectors.review_threshold(),
            error=error,
            form=form if error else None,
        )
        response = render(request, "grounding/partials/_verification_row.html", context)
        patch_vary_headers(response, ["HX-Request"])
        return response
    if error:
        context = _detail_context(request, verification, form=form, error=error)
        return render(request, "grounding/verification_detail.html", context, status=400)
    return HttpResponseRedirect(next_url, status=303)
