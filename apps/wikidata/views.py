"""HTMX pages of Wikidata facts: ask a question, follow its run, and see where each fact came from.

Signed-in staff only (docs/security.md): reading runs and provenance needs ``wikidata.view_factrun``
(or the asking permission), asking ``wikidata.add_factrun``; each question asked counts against the
user's page-submission limit (429 with ``Retry-After`` once it is spent).

Each view renders its page, or for an HTMX request only the fragment the page includes. Asking
never answers a 500: a bad form or a question the registry cannot plan is a message on the form
(full pages carry 400; HTMX fragments are 200, because htmx does not swap error responses). A
run's results fragment polls itself while the run is queued or running.
"""

from __future__ import annotations

import json
from typing import Any, Literal
from urllib.parse import quote
from uuid import UUID

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from apps.core.errors import ApplicationError, InvalidParameter, NotFound, RateLimited, ValidationFailed
from apps.core.filters import filter_choice
from apps.core.pages import page_role_granted, permission_page, render_page_or_fragment, web_url
from apps.core.services import page_submission_check
from apps.wikidata import provenance, selectors, services
from apps.wikidata.forms import FactQueryForm, FactSearchForm
from apps.wikidata.models import FactRun, FactRunPurpose, FactRunStatus

QUERY_SERVICE_URL = "https://query.wikidata.org/#"
# The page roles (docs/security.md): asking starts a run that spends the Wikidata budget.
ASK_PERMISSION = "wikidata.add_factrun"
VIEW_PERMISSION = "wikidata.view_factrun"
REFERENCE_URL_PROPERTY = "P854"


# --- Asking, recent runs, stored facts -----------------------------------------------------


@require_http_methods(["GET", "POST"])
@permission_page(VIEW_PERMISSION, ASK_PERMISSION)
def fact_home(request: HttpRequest) -> HttpResponse:
    """``GET``: the question form, recent runs (``?status=`` filters them) and a search over stored
    facts (HTMX: the search results). ``POST``: queue the question's run and go to its page, or show
    why not."""
    search_form = FactSearchForm(request.GET or None)
    if search_form.is_bound:
        search_form.is_valid()
    if request.method != "POST":
        context = _home_context(request, FactQueryForm(), search_form)
        return render_page_or_fragment(
            request,
            "wikidata/facts.html",
            "wikidata/partials/_fact_results.html",
            context,
            status=400 if context["status_error"] else 200,
        )

    if not page_role_granted(request.user, (ASK_PERMISSION,)):
        raise PermissionDenied
    form = FactQueryForm(request.POST)
    error = ""
    status = 400
    limited: RateLimited | None = None
    try:
        page_submission_check(user=request.user)
    except RateLimited as refusal:
        limited = refusal
        error, status = refusal.message, refusal.status_code
    if limited is None and form.is_valid():
        payload = form.cleaned_data["payload"]
        try:
            run = services.fact_query_submit(**payload.submit_arguments())
        except ApplicationError as failure:  # e.g. the registry has no tool for a step
            error = failure.message
            status = 400 if isinstance(failure, ValidationFailed) else failure.status_code
        else:
            url = reverse("wikidata:run_detail", args=[run.pk])
            if request.htmx:
                return HttpResponseClientRedirect(url)
            return HttpResponseRedirect(url, status=303)
    context = _home_context(request, form, search_form, error=error)
    response = render_page_or_fragment(
        request, "wikidata/facts.html", "wikidata/partials/_query_form.html", context, status=status
    )
    for header, value in (limited.headers() if limited is not None else {}).items():
        response[header] = value
    return response


def _home_context(
    request: HttpRequest, form: FactQueryForm, search_form: FactSearchForm, error: str = ""
) -> dict[str, Any]:
    text = search_form.text()
    status, status_error = "", ""
    try:
        status = filter_choice(request.GET, "status", FactRunStatus.values) or ""
    except InvalidParameter as refused:  # a hand-typed ?status=: say what it takes, list no runs
        status_error = refused.message
    return {
        "form": form,
        "can_ask": page_role_granted(request.user, (ASK_PERMISSION,)),
        "error": error,
        "search_form": search_form,
        "search_text": text,
        "facts": selectors.facts_search(text=text),
        "runs": [] if status_error else list(selectors.fact_runs_recent(status=status or None)),
        "status": status,
        "statuses": FactRunStatus.choices,
        "status_error": status_error,
    }


# --- One run -------------------------------------------------------------------------------


@require_GET
@permission_page(VIEW_PERMISSION, ASK_PERMISSION)
def run_detail(request: HttpRequest, run_id: UUID) -> HttpResponse:
    """A run: the question, its plan, each executed step and its results; polls itself while pending."""
    try:
        run = selectors.fact_run_get(run_id=run_id)
    except NotFound:
        return render(request, "wikidata/run_missing.html", {"run_id": run_id}, status=404)
    return render_page_or_fragment(
        request, "wikidata/run_detail.html", "wikidata/partials/_run_results.html", _run_context(run)
    )


def _run_context(run: FactRun) -> dict[str, Any]:
    plan_steps = (run.plan or {}).get("steps") or []
    return {
        "run": run,
        "plan_steps": plan_steps,
        "steps": [_step(step) for step in run.steps or [] if isinstance(step, dict)],
        "facts": run.facts.order_by("position") if not run.pending else [],
        "knowledge": _knowledge_answers(run) if not run.pending else [],
        "prov_url": reverse("wikidata:run_prov_turtle", kwargs={"run_id": run.pk}),
        "prov_jsonld_url": reverse("wikidata:run_prov_jsonld", kwargs={"run_id": run.pk}),
        # Only a run made for a verification has any (a question's run costs no query for them).
        "verification_ids": (
            list(run.verifications.order_by("pk").values_list("pk", flat=True))
            if run.purpose == FactRunPurpose.VERIFICATION
            else []
        ),
    }


def _knowledge_answers(run: FactRun) -> list[dict[str, Any]]:
    """The knowledge entries a degraded run answered with, as the page shows them (links only http(s))."""
    return [
        {
            "entry_id": str(item.get("entryId", "")),
            "topic": item.get("topic", ""),
            "content": item.get("content", ""),
            "domain": item.get("domain", ""),
            "source": item.get("source", ""),
            "url": web_url(item.get("url")),
            "similarity": item.get("similarity"),
        }
        for item in run.knowledge or []
        if isinstance(item, dict)
    ]


def _detail_value(value: Any) -> Any:
    return value if isinstance(value, str | int | float) else json.dumps(value, ensure_ascii=False)


def _step(step: dict[str, Any]) -> dict[str, Any]:
    """An executed step as the page shows it: ``detail`` as key/value pairs (nested values as compact
    JSON), ``retryable`` only when known."""
    shown = dict(step)
    detail = step.get("detail")
    if isinstance(detail, dict):
        shown["detail_items"] = [(str(key), _detail_value(value)) for key, value in sorted(detail.items())]
    elif detail:
        shown["detail_items"] = [("detail", json.dumps(detail, ensure_ascii=False))]
    else:
        shown["detail_items"] = []
    shown["retryable_known"] = step.get("retryable") is not None
    return shown


# --- One fact ------------------------------------------------------------------------------


@require_GET
@permission_page(VIEW_PERMISSION, ASK_PERMISSION)
def fact_detail(request: HttpRequest, fact_id: int) -> HttpResponse:
    """Where a fact came from: the statement, its qualifiers and references, the SPARQL that
    enriched it, the run that found it, and the stored fact a degraded run copied it from."""
    try:
        fact = selectors.fact_get(fact_id=fact_id)
    except NotFound:
        return render(request, "wikidata/fact_missing.html", {"fact_id": fact_id}, status=404)
    context = {
        "fact": fact,
        "value_type": (fact.value or {}).get("type", "") if isinstance(fact.value, dict) else "",
        "qualifiers": [_snak(snak) for snak in fact.qualifiers or []],
        "references": [
            {"hash": reference.get("hash", ""), "snaks": [_snak(s) for s in reference.get("snaks") or []]}
            for reference in fact.references or []
        ],
        "query_service_url": QUERY_SERVICE_URL + quote(fact.sparql, safe="") if fact.sparql else "",
        "sparql": _sparql_table(fact.sparql_results),
        "prov_url": reverse("wikidata:run_prov_turtle", kwargs={"run_id": fact.run_id}),
    }
    return render(request, "wikidata/fact_detail.html", context)


def _snak(snak: dict[str, Any]) -> dict[str, Any]:
    """A stored snak as the page shows it; a reference URL (P854, or any url-typed value) is a
    link only when it is http(s)."""
    value = snak.get("value")
    raw = value.get("value") if isinstance(value, dict) and value.get("type") == "string" else None
    is_url = snak.get("property") == REFERENCE_URL_PROPERTY or snak.get("datatype") == "url"
    return {
        "property": snak.get("property", ""),
        "label": snak.get("propertyLabel") or "",
        "text": snak.get("text") or (raw if isinstance(raw, str) else "") or snak.get("snaktype", ""),
        "url": web_url(raw) if is_url else "",
    }


def _sparql_table(results: Any) -> dict[str, Any] | None:
    """The stored SPARQL rows for this statement as a table: one column per variable."""
    if not isinstance(results, dict):
        return None
    variables = [str(v) for v in results.get("vars") or []]
    rows = []
    for row in results.get("rows") or []:
        cells = []
        for variable in variables:
            term = row.get(variable) if isinstance(row, dict) else None
            value = str(term.get("value", "")) if isinstance(term, dict) else ""
            is_uri = isinstance(term, dict) and term.get("type") == "uri"
            cells.append({"value": value, "url": web_url(value) if is_uri else ""})
        rows.append(cells)
    return {
        "vars": variables,
        "rows": rows,
        "retrieved_at": results.get("retrievedAt") or "",
        "endpoint": results.get("endpoint") or "",
    }


PROV_CONTENT_TYPES = {"turtle": "text/turtle; charset=utf-8", "json-ld": "application/ld+json"}


@require_GET
@permission_page(VIEW_PERMISSION, ASK_PERMISSION)
def run_prov(request: HttpRequest, run_id: UUID, fmt: Literal["turtle", "json-ld"]) -> HttpResponse:
    """A run's PROV-O export, readable like the pages (the same as /v1/facts/runs/{id}/prov.*)."""
    try:
        run = selectors.fact_run_get(run_id=run_id)
    except NotFound:
        return render(request, "wikidata/run_missing.html", {"run_id": run_id}, status=404)
    return HttpResponse(provenance.fact_run_prov(run=run, fmt=fmt), content_type=PROV_CONTENT_TYPES[fmt])
