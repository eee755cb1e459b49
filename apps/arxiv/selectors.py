"""Reads of stored arXiv runs and papers."""

from __future__ import annotations

from uuid import UUID

from apps.arxiv.models import SearchRun
from apps.core.errors import NotFound


def search_run_get(*, run_id: UUID | str) -> SearchRun:
    run = SearchRun.objects.select_related("cached_from").filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No arXiv run has the id {run_id}.", details={"runId": str(run_id)})
    return run
