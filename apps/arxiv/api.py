"""``/v1/arxiv/``: search and lookup, run on the Celery ``arxiv`` queue; the endpoint waits a
bounded time (``ARXIV_WAIT_SECONDS``) and otherwise answers 202 with the run to poll."""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.http import HttpRequest
from ninja import Router, Status

from apps.arxiv import selectors, services
from apps.arxiv.models import RunStatus, SearchRun
from apps.arxiv.schemas import LookupIn, RunOut, SearchIn
from apps.core.auth import read_token, upstream_token

router = Router(tags=["arxiv"])


def _answer(run: SearchRun) -> Status:
    run = services.search_run_wait(run=run, timeout=settings.ARXIV_WAIT_SECONDS)
    return _status(run)


def _status(run: SearchRun) -> Status:
    outcome = services.search_run_outcome(run=run)
    return Status(202 if run.status in (RunStatus.QUEUED, RunStatus.RUNNING) else 200, outcome)


@router.post(
    "/search",
    auth=upstream_token,
    response={200: RunOut, 202: RunOut},
    exclude_none=True,
    summary="Search arXiv",
)
def search(request: HttpRequest, payload: SearchIn) -> Status:
    return _answer(services.search_submit(payload=payload))


@router.post(
    "/lookup",
    auth=upstream_token,
    response={200: RunOut, 202: RunOut},
    exclude_none=True,
    summary="Papers by id",
)
def lookup(request: HttpRequest, payload: LookupIn) -> Status:
    return _answer(services.lookup_submit(ids=payload.ids))


@router.get("/runs/{run_id}", auth=read_token, response={200: RunOut, 202: RunOut}, exclude_none=True)
def run_detail(request: HttpRequest, run_id: UUID) -> Status:
    """A run's page once it succeeded; 202 while it is queued or running; its error once it failed."""
    return _status(selectors.search_run_get(run_id=run_id))
