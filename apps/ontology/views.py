"""The ontology's pages (issue 14): the exports (Turtle, zipped markdown notes), the analysts' pages
(``/ontology``: search and the classes by domain; ``/ontology/<LocalName>``: one class with its
neighbourhood graph) and the operators' review queue (``/ontology/proposals``).

The exports and the analysts' pages are public, like the ontology's read tools. The queue needs
``ontology.view_ontologyproposal`` (or ``change``); approving and rejecting need
``ontology.change_ontologyproposal`` and count against the user's page-submission limit (429 with
``Retry-After``). For HTMX they answer the proposal's row (always 200, with any refusal in it);
otherwise they go back to the queue (303), or show it with the reason (400/409/429). An unknown
class or proposal is the site's 404 page.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import ApplicationError, NotFound
from apps.core.pages import (
    HtmxHttpRequest,
    page_role_granted,
    page_submission_refusal,
    permission_page,
    render_page_or_fragment,
)
from apps.ontology import browse, charts
from apps.ontology.graph import ontology_graph
from apps.ontology.models import OntologyProposal, ProposalStatus
from apps.ontology.proposals import proposal_approve, proposal_reject
from apps.ontology.selectors import ontology_discover

VIEW_PERMISSION = "ontology.view_ontologyproposal"
CHANGE_PERMISSION = "ontology.change_ontologyproposal"
SEARCH_LIMIT = 20
QUEUE_LIMIT = 100
STATUSES = ("staged", "merged", "rejected", "all")


# --- Exports -----------------------------------------------------------------------------------


@require_GET
def ontology_export_ttl(request: HttpRequest) -> HttpResponse:
    """The asserted graph as Turtle; ``?inferred=true``: its OWL 2 RL closure."""
    inferred = request.GET.get("inferred", "").lower() in ("true", "1", "yes")
    response = HttpResponse(
        browse.export_turtle(inferred=inferred), content_type="text/turtle; charset=utf-8"
    )
    name = "ontology-inferred.ttl" if inferred else "ontology.ttl"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
def ontology_export_zip(request: HttpRequest) -> HttpResponse:
    """Every class's note as markdown, one folder per domain."""
    response = HttpResponse(browse.export_zip(), content_type="application/zip")
    response["Content-Disposition"] = 'attachment; filename="ontology-notes.zip"'
    return response


# --- Analysts' pages -----------------------------------------------------------------------------


@require_GET
def ontology_index(request: HtmxHttpRequest) -> HttpResponse:
    """Search (the ``discover`` tool's ranking) and every class in a tree by domain, with a filter."""
    query = request.GET.get("q", "").strip()[:200]
    # The tree's filter: typed, the page's script narrows the tree at once; sent (no script), this does.
    filter_text = request.GET.get("filter", "").strip()[:100]
    context: dict[str, Any] = {
        "query": query,
        "filter": filter_text,
        "tree": browse.class_tree(filter_text),
        "class_count": len(ontology_graph().classes),
        "domain_count": len(browse.classes_by_domain()),
        "filter_matches": browse.class_filter_matches(filter_text),
        "error": "",
    }
    if query:
        try:
            context["results"] = ontology_discover(query=query, limit=SEARCH_LIMIT)
        except ApplicationError as refusal:
            context["error"] = refusal.message
        else:
            graph = ontology_graph()
            for result in context["results"]:
                result["local_name"] = graph.classes[result["iri"]].local_name
    context["version"] = ontology_graph().version
    return render_page_or_fragment(
        request, "ontology/index.html", "ontology/partials/_search_results.html", context
    )


@require_GET
def ontology_class(request: HttpRequest, local_name: str) -> HttpResponse:
    """One class: its note's fields, hierarchy, relationships and neighbourhood graph."""
    view = browse.class_view(local_name)
    if view is None:
        raise Http404(f"No ontology class {local_name}.")
    context = {
        "view": view,
        "cls": view.cls,
        "facets": browse.facets(view.cls),
        "chart": charts.neighbourhood(view),
    }
    return render(request, "ontology/class_detail.html", context)


# --- Review queue ---------------------------------------------------------------------------------


def _operator(request: HttpRequest) -> AbstractBaseUser:
    if not isinstance(request.user, AbstractBaseUser):
        raise PermissionDenied
    return request.user


def _queue_context(request: HttpRequest, *, error: str = "") -> dict[str, Any]:
    # The seed's spelling (?status=Merged) and the stored one (?status=merged) filter alike.
    status = request.GET.get("status", ProposalStatus.STAGED).lower()
    status = status if status in STATUSES else ProposalStatus.STAGED
    proposals = OntologyProposal.objects.select_related("token", "reviewed_by")
    if status != "all":
        proposals = proposals.filter(status=status)
    return {
        "proposals": list(proposals[:QUEUE_LIMIT]),
        "status": status,
        "statuses": STATUSES,
        "limit": QUEUE_LIMIT,
        "error": error,
        "can_change": page_role_granted(request.user, (CHANGE_PERMISSION,)),
    }


@require_GET
@permission_page(VIEW_PERMISSION, CHANGE_PERMISSION)
def proposal_list(request: HtmxHttpRequest) -> HttpResponse:
    """Proposals (staged first by default), each with its check, score, note preview and diff."""
    return render(request, "ontology/proposals.html", _queue_context(request))


@require_POST
@permission_page(CHANGE_PERMISSION)
def proposal_approve_page(request: HtmxHttpRequest, proposal_id: UUID) -> HttpResponse:
    return _review(request, proposal_id, approve=True)


@require_POST
@permission_page(CHANGE_PERMISSION)
def proposal_reject_page(request: HtmxHttpRequest, proposal_id: UUID) -> HttpResponse:
    return _review(request, proposal_id, approve=False)


def _review(request: HtmxHttpRequest, proposal_id: UUID, *, approve: bool) -> HttpResponse:
    if not OntologyProposal.objects.filter(pk=proposal_id).exists():
        raise Http404(f"No proposal {proposal_id}.")
    error, status, retry_after = page_submission_refusal(_operator(request))
    notice = ""
    if not error:
        reason = request.POST.get("note", "").strip()
        try:
            if approve:
                merged = proposal_approve(proposal_id=proposal_id, reviewer=_operator(request))
                notice = f"Merged: the ontology is at version {merged.merged_version}."
            elif not reason:
                error = "Say why the proposal is rejected."
            else:
                proposal_reject(proposal_id=proposal_id, reviewer=_operator(request), note=reason[:2000])
                notice = "Rejected."
        except NotFound as missing:
            raise Http404(str(missing.message)) from missing
        except ApplicationError as failure:
            error, status = failure.message, failure.status_code
    if request.htmx:
        context = {
            "proposal": OntologyProposal.objects.select_related("token", "reviewed_by").get(pk=proposal_id),
            "notice": notice,
            "error": error,
            "can_change": True,
        }
        response = render(request, "ontology/partials/_proposal_row.html", context)
        patch_vary_headers(response, ["HX-Request"])
    elif error:
        response = render(
            request, "ontology/proposals.html", _queue_context(request, error=error), status=status
        )
    else:
        response = HttpResponseRedirect(reverse("ontology:proposal_list"), status=303)
    if retry_after:
        response["Retry-After"] = retry_after
    return response
