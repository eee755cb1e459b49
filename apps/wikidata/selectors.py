"""Reads of fact runs and stored facts."""

from __future__ import annotations

from uuid import UUID

from django.db.models import Q, QuerySet

from apps.core.errors import NotFound
from apps.wikidata.models import Fact, FactRun

RECENT_RUNS = 20


def fact_run_get(*, run_id: UUID | str) -> FactRun:
    run = FactRun.objects.filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No fact run has the id {run_id}.", details={"runId": str(run_id)})
    return run


def fact_get(*, fact_id: int) -> Fact:
    fact = Fact.objects.select_related("run", "derived_from").filter(pk=fact_id).first()
    if fact is None:
        raise NotFound(f"No fact has the id {fact_id}.", details={"factId": fact_id})
    return fact


def fact_runs_recent(*, limit: int = RECENT_RUNS) -> QuerySet[FactRun]:
    return FactRun.objects.all()[:limit]


def facts_search(*, text: str = "", limit: int = 50) -> QuerySet[Fact]:
    """Stored facts whose text, entity, property or statement GUID contains ``text`` (newest first)."""
    facts = Fact.objects.select_related("run").order_by("-created_at")
    text = text.strip()
    if text:
        facts = facts.filter(
            Q(text__icontains=text) | Q(qid__iexact=text) | Q(pid__iexact=text) | Q(claim_guid__iexact=text)
        )
    return facts[:limit]
