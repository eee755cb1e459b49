"""``/v1/facts/``: factual questions answered from Wikidata with statement-level provenance.

``POST /query`` plans the question and runs it on the Celery ``wikidata`` queue; it waits up to
``waitSeconds`` and otherwise answers 202 with the run to poll at ``GET /runs/{id}``. A run's
provenance is exportable as PROV-O (``GET /runs/{id}/prov.ttl`` and ``/prov.jsonld``).
"""

from __future__ import annotations

from uuid import UUID

from django.http import HttpRequest, HttpResponse
from ninja import Router, Status

from apps.core.auth import read_token, upstream_token
from apps.wikidata import provenance, selectors, services
from apps.wikidata.models import FactRun
from apps.wikidata.schemas import FactQueryIn, FactRunOut

router = Router(tags=["facts"])


def _status(request: HttpRequest, run: FactRun) -> Status:
    base_url = f"{request.scheme}://{request.get_host()}"
    outcome = selectors.fact_run_outcome(run=run, base_url=base_url)
    return Status(202 if run.pending else 200, outcome)


@router.post(
    "/query",
    auth=upstream_token,
    response={200: FactRunOut, 202: FactRunOut},
    exclude_none=True,
    summary="Ask a factual question",
)
def query(request: HttpRequest, payload: FactQueryIn) -> Status:
    run = services.fact_query_submit(**payload.submit_arguments())
    return _status(request, services.fact_run_wait(run=run, timeout=payload.waitSeconds))


@router.get("/runs/{run_id}", auth=read_token, response={200: FactRunOut, 202: FactRunOut}, exclude_none=True)
def run_detail(request: HttpRequest, run_id: UUID) -> Status:
    """A run's facts once it finished; 202 while it is queued or running."""
    return _status(request, selectors.fact_run_get(run_id=run_id))


@router.get("/runs/{run_id}/prov.ttl", auth=read_token, summary="A run's provenance as PROV-O Turtle")
def run_prov_turtle(request: HttpRequest, run_id: UUID) -> HttpResponse:
    run = selectors.fact_run_get(run_id=run_id)
    return HttpResponse(
        provenance.fact_run_prov(run=run, fmt="turtle"), content_type="text/turtle; charset=utf-8"
    )


@router.get("/runs/{run_id}/prov.jsonld", auth=read_token, summary="A run's provenance as PROV-O JSON-LD")
def run_prov_jsonld(request: HttpRequest, run_id: UUID) -> HttpResponse:
    run = selectors.fact_run_get(run_id=run_id)
    return HttpResponse(provenance.fact_run_prov(run=run, fmt="json-ld"), content_type="application/ld+json")
