"""Reads of fact runs and stored facts: the API's answer for a run, and the local data a degraded
run answers from."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db.models import Q, QuerySet
from pgvector.django import CosineDistance

from apps.core.errors import NotFound
from apps.core.runs import run_failure
from apps.embeddings.fields import hnsw_filtered_scan
from apps.embeddings.services import embed_text
from apps.wikidata.models import Fact, FactRun, FactRunStatus
from apps.wikidata.sparql import statement_uri

RECENT_RUNS = 20


def fact_run_get(*, run_id: UUID | str) -> FactRun:
    # Counted in the same query: the page and the API say what a degraded run answered from.
    run = FactRun.objects.with_answer_counts().filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No fact run has the id {run_id}.", details={"runId": str(run_id)})
    return run


def fact_get(*, fact_id: int) -> Fact:
    fact = Fact.objects.select_related("run", "derived_from").filter(pk=fact_id).first()
    if fact is None:
        raise NotFound(f"No fact has the id {fact_id}.", details={"factId": fact_id})
    return fact


def fact_runs_recent(*, status: str | None = None, limit: int = RECENT_RUNS) -> QuerySet[FactRun]:
    """The newest runs (of one status, when given) with what each returned counted in the same query
    (``FactRun.answer_count``, ``answered_from``)."""
    # Explicit: Django leaves Meta.ordering out of a query that groups (the counts).
    runs = FactRun.objects.with_answer_counts().order_by("-created_at")
    if status:
        runs = runs.filter(status=status)
    return runs[:limit]


def facts_search(*, text: str = "", limit: int = 50) -> QuerySet[Fact]:
    """Stored facts whose text, entity, property or statement GUID contains ``text`` (newest first)."""
    facts = Fact.objects.select_related("run").order_by("-created_at")
    text = text.strip()
    if text:
        facts = facts.filter(
            Q(text__icontains=text) | Q(qid__iexact=text) | Q(pid__iexact=text) | Q(claim_guid__iexact=text)
        )
    return facts[:limit]


def fact_run_outcome(*, run: FactRun, base_url: str = "") -> dict[str, Any]:
    """The API's answer for a run: its facts, best first, once finished; only its state while pending.

    ``base_url`` (scheme and host) makes ``provenanceUrl`` absolute.
    """
    out: dict[str, Any] = {
        "runId": str(run.pk),
        "status": run.status,
        "query": run.question,
        "purpose": run.purpose,
        "plan": run.plan,
        "degraded": run.degraded,
    }
    if run.degraded:
        out["degradedReason"] = run.degraded_reason
    if run.pending:
        out["poll"] = f"/v1/facts/runs/{run.pk}"
        return out
    failure = run_failure(run=run)
    if failure is not None:
        out["error"] = failure
    out["results"] = [fact_result(fact=fact, base_url=base_url) for fact in run.facts.order_by("position")]
    out["results"] += [
        {
            "text": item["content"],
            "score": item["similarity"],
            "metadata": {"knowledge": {k: item[k] for k in ("entryId", "domain", "topic", "source", "url")}},
            "provenanceUrl": item["url"],
        }
        for item in run.knowledge
    ]
    if run.status == FactRunStatus.DEGRADED:
        out["answeredFrom"] = run.answered_from  # "4 knowledge entries", "nothing", …
    out["steps"] = run.steps
    out["durationMs"] = run.duration_ms
    return out


def fact_result(*, fact: Fact, base_url: str = "") -> dict[str, Any]:
    wikidata: dict[str, Any] = {
        "qid": fact.qid,
        "label": fact.qid_label,
        "claimGuid": fact.claim_guid,
        "propertyId": fact.pid,
        "propertyLabel": fact.pid_label,
        "value": fact.value,
        "valueText": fact.value_text,
        "rank": fact.rank,
        "statementUri": statement_uri(fact.claim_guid),
        "endpoint": fact.endpoint,
        "retrievedAt": fact.retrieved_at.isoformat(),
    }
    if fact.sparql:
        wikidata["sparql"] = fact.sparql
        wikidata["sparqlEndpoint"] = fact.sparql_endpoint
    if fact.derived_from_id is not None:
        wikidata["storedFactId"] = fact.derived_from_id
    return {
        "text": fact.text,
        "score": round(fact.score, 4),
        "metadata": {"wikidata": wikidata},
        "provenanceUrl": f"{base_url}/facts/{fact.pk}",
    }


# --- What a degraded run answers from ----------------------------------------------------

# Below this cosine similarity a knowledge entry is not an answer to the question.
KNOWLEDGE_MIN_SIMILARITY = 0.45


def local_knowledge(*, question: str, top_k: int) -> list[dict[str, Any]]:
    """Curated knowledge entries close to the question (the other local data a degraded run has)."""
    from apps.knowledge.selectors import knowledge_search

    hits = knowledge_search(query=question, limit=top_k)
    return [
        {
            "entryId": hit.entry.entry_id,
            "domain": hit.entry.domain.name,
            "topic": hit.entry.topic,
            "content": hit.entry.content,
            "source": hit.entry.source,
            "url": hit.entry.url,
            "similarity": round(hit.similarity, 4),
        }
        for hit in hits
        if hit.similarity >= KNOWLEDGE_MIN_SIMILARITY
    ]


def local_facts(*, run: FactRun) -> list[Fact]:
    """The stored Wikidata facts (of other runs) most similar to ``run``'s question, at most ``top_k``,
    one per statement, as unsaved copies for ``run`` that point at the originals."""
    question = embed_text(text=run.question)
    with hnsw_filtered_scan():
        nearest = list(
            Fact.objects.from_wikidata()
            .filter(embedding__isnull=False, derived_from__isnull=True)
            .exclude(run=run)
            .annotate(distance=CosineDistance("embedding", question))
            .order_by("distance")[: run.top_k * 4]
        )
    chosen: dict[str, Fact] = {}
    for fact in nearest:
        chosen.setdefault(fact.claim_guid, fact)
        if len(chosen) == run.top_k:
            break
    copies = []
    for position, original in enumerate(chosen.values(), start=1):
        copy = Fact(**{f.attname: getattr(original, f.attname) for f in Fact._meta.concrete_fields})
        copy.pk, copy.run, copy.derived_from = None, run, original
        copy.position = position
        copy.score = 1 - float(original.distance)  # type: ignore[attr-defined]  # annotated above
        copies.append(copy)
    return copies
