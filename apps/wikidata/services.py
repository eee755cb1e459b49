"""The Wikidata fact workflow: a question → ranked facts, each traceable to its statement.

``fact_query_submit`` plans the question with the registry's planner, stores a
``FactRun`` and enqueues it (Celery queue ``wikidata``) after commit. On the worker,
``fact_run_execute`` runs the steps, recording each (status, timing, error) on the run
as it goes and in an OpenTelemetry span:

1. **search** — the Wikidata vector database (items, or properties for scope
   ``properties``); keyword search (``wbsearchentities``) when it fails or finds nothing;
2. **statements** — ``wbgetentities`` for the top entities (redirects followed, missing
   ones reported);
3. **labels** — labels of every property and value entity the candidate statements show,
   in batches of ≤ 50;
4. **rank** — each statement as "subject — property — value" embedded and compared with
   the question (cosine); preferred statements before normal ones of the same property;
   deprecated ones left out unless asked for;
5. **details** — labels of the qualifiers and references of the top facts;
6. **sparql** (optional) — one WDQS query for every returned fact's statement node, value and
   references (``prov:wasDerivedFrom``); its text and rows are stored with each fact;
7. **persist** — ``Fact`` rows, idempotent on (run, statement GUID).

When search or statements fail for good (retries exhausted, deadline reached, or a
terminal error such as malformed JSON), the run is answered from local data instead:
stored facts ranked by pgvector similarity, and ends with the status ``degraded`` and the reason,
logged with the correlation id and announced by the ``facts.run.degraded`` event — with local
answers or with none, never ``succeeded`` (issue 26). A step that fails later (labels, details,
SPARQL) keeps what the run already has and is recorded on the step; when it failed because Wikidata
could not be reached (retries spent on 429/5xx, timeouts, refused connections) or the deadline cut it
short, the run reached Wikidata only partly and ends ``degraded`` too, its reason naming the steps
(docs/api.md "Run statuses").

This module is the workflow (submit, execute, finish, persist); it calls ``search`` (the
entity search the native tools share), ``labels`` (the Redis label cache), ``ranking``
(candidates, their texts and scores) and ``selectors`` (the API's answer for a run, and the
local data a degraded run answers from).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.utils import timezone

from apps.connectors.planner import plan_create
from apps.core.errors import ApplicationError, RateLimited, UpstreamError, error_type
from apps.core.logging import current_correlation_id, get_logger
from apps.core.runs import (
    DEADLINE,
    run_deadline,
    run_deadline_message,
    run_enqueue,
    run_execute,
    run_fence,
    run_finish,
)
from apps.core.services import event_emit, row_wait
from apps.core.tracing import get_tracer
from apps.wikidata import clients, selectors
from apps.wikidata import metrics as wikidata_metrics
from apps.wikidata.labels import labels_cached
from apps.wikidata.models import Fact, FactRun, FactRunPurpose, FactRunStatus
from apps.wikidata.ranking import Candidate, candidate_label_ids, candidates_rank, snak_text
from apps.wikidata.search import entities_search, keyword_phrases, name_phrases
from apps.wikidata.sparql import SparqlResult, statement_uri, statements_provenance_query
from apps.wikidata.statements import Snak, Statement, snak_ids, usable_statements

logger = get_logger(__name__)
tracer = get_tracer(__name__)

# Bounds on what one question costs: statements ranked per entity and in all.
MAX_STATEMENTS_PER_ENTITY = 400
MAX_CANDIDATES = 1000
SEARCH_K = 10
# Rows the provenance query may return per statement (its references × their snaks).
SPARQL_ROWS_PER_FACT = 200
KEYWORD_SEARCH_ATTEMPTS = 3


# --- Submitting --------------------------------------------------------------------------


def fact_query_submit(
    *,
    query: str,
    top_k: int = 5,
    scope: str | None = None,
    include_sparql: bool = True,
    include_deprecated: bool = False,
    language: str = "en",
    rerun_of: FactRun | None = None,
    enqueue: bool = True,
    purpose: str = FactRunPurpose.QUESTION,
) -> FactRun:
    """Plan the question (``ValidationFailed`` if the registry cannot) and queue its run for a worker;
    with ``enqueue=False`` the caller executes it itself (``fact_run_execute``), and only it — a run
    both queued and executed in place would run twice. ``purpose`` says whom the run is for (a
    grounding verification checking a claim passes ``verification``)."""
    plan = plan_create(intent="fact_query", query=query, scope=scope)
    run = FactRun.objects.create(
        question=query,
        scope=plan["scope"],
        top_k=top_k,
        include_sparql=include_sparql,
        include_deprecated=include_deprecated,
        language=language,
        plan=plan,
        correlation_id=current_correlation_id() or "",
        rerun_of=rerun_of,
        purpose=purpose,
    )
    if enqueue:
        run_enqueue(run=run)
    return run


def fact_run_rerun(*, run: FactRun) -> FactRun:
    """A new run of the same question and options (the admin's re-run action)."""
    return fact_query_submit(
        query=run.question,
        top_k=run.top_k,
        scope=run.scope,
        include_sparql=run.include_sparql,
        include_deprecated=run.include_deprecated,
        language=run.language,
        rerun_of=run,
    )


def fact_run_wait(*, run: FactRun, timeout: float) -> FactRun:
    """The run once finished, or as it stands when ``timeout`` seconds have passed."""
    return row_wait(row=run, pending=lambda row: row.pending, timeout=timeout)


# --- Executing (Celery worker) -------------------------------------------------------------


class _StepFailed(Exception):
    """Search or statements failed for good: the run degrades to local data."""

    def __init__(self, step: str, error: ApplicationError) -> None:
        super().__init__(f"{step}: {error.message}")
        self.step = step
        self.error = error


class _Steps:
    """Records each step on the run as it happens (pages show a run in progress) and traces it."""

    def __init__(self, run: FactRun, tools: dict[str, str]) -> None:
        self.run = run
        self.tools = tools

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        entry: dict[str, Any] = {"name": name, "status": "running", "startedAt": timezone.now().isoformat()}
        if name in self.tools:
            entry["tool"] = self.tools[name]
        self.run.steps.append(entry)
        started = time.perf_counter()
        with tracer.start_as_current_span(f"facts.step.{name}") as span:
            span.set_attribute("cortex.run_id", str(self.run.pk))
            try:
                yield entry
            except (ApplicationError, _StepFailed) as failure:
                error = failure.error if isinstance(failure, _StepFailed) else failure
                entry.update(status="failed", **_error_fields(error))
                span.set_attribute("cortex.error", error.message)
                raise
            except Exception as error:
                entry.update(status="failed", error=str(error), errorType="internal", retryable=False)
                raise
            else:
                entry["status"] = "ok"
            finally:
                entry["durationMs"] = round((time.perf_counter() - started) * 1000, 2)
                self._save()

    def _save(self) -> None:
        # Once per step, when it ends: the run's page shows the steps done so far.
        FactRun.objects.filter(pk=self.run.pk, executions=self.run.executions).update(steps=self.run.steps)


def _error_fields(error: ApplicationError) -> dict[str, Any]:
    if isinstance(error, RateLimited):
        return {"error": error.message, "errorType": "rate_limited", "retryable": True}
    return {
        "error": error.message,
        "errorType": error_type(error),
        "retryable": bool(getattr(error, "retryable", False)),
        "upstream": error.details.get("upstream") if isinstance(error.details, dict) else None,
    }


def _plan_tools(plan: dict[str, Any]) -> dict[str, str]:
    """Which registry tool each step stands for, from the plan (search, statements, sparql)."""
    names = ["search", "statements", "sparql"]
    steps = plan.get("steps") or []
    tools: dict[str, str] = {}
    for step in steps:
        tool = str(step.get("tool", ""))
        if "sparql" in tool:
            tools["sparql"] = tool
        elif "claims" in tool or "statement" in tool:
            tools["statements"] = tool
        elif step.get("order") == 1:
            tools["search"] = tool
    return {name: tools[name] for name in names if name in tools}


def fact_run_execute(*, run_id: str) -> FactRun:
    """Run a queued fact run under the shared run lifecycle (claim, heartbeat, fenced finish).

    A finished run, or one another worker is executing, is left as it is; a run whose worker was
    lost starts over (its facts are upserted on (run, statement GUID), so nothing is duplicated).
    """
    return run_execute(model=FactRun, run_id=run_id, execute=_execute, on_claim=_forget_earlier_execution)


def _forget_earlier_execution(run: FactRun) -> None:
    if run.executions > 1:  # a lost worker's steps and answers; a first execution has none
        run.steps, run.degraded, run.degraded_reason, run.knowledge = [], False, "", []
        run.save(update_fields=["steps", "degraded", "degraded_reason", "knowledge"])


def _execute(run: FactRun) -> FactRun:
    started = time.perf_counter()
    # Counted from submission on every execution: time queued, and a lost worker's, are part of it.
    deadline = run_deadline(run=run)
    steps = _Steps(run, _plan_tools(run.plan))
    with tracer.start_as_current_span("facts.run") as span:
        span.set_attribute("cortex.run_id", str(run.pk))
        span.set_attribute("cortex.correlation_id", run.correlation_id)
        span.set_attribute("cortex.scope", run.scope)
        try:
            candidates = _gather_and_rank(run, steps, deadline)
        except _StepFailed as failure:
            return _finish_degraded(run, steps, failure, started, deadline)
        except Exception as error:  # a bug, not an upstream: record it, never leave the run "running"
            logger.exception("facts.run_crashed", run_id=str(run.pk))
            return _finish(run, started, status=FactRunStatus.FAILED, error=str(error), error_type="internal")
        _enrich(run, steps, candidates, deadline)
        with steps.step("persist"):
            _persist(run, candidates)
        span.set_attribute("cortex.facts", len(candidates))
    return _finish(run, started, **_partly_reached(run, deadline))


def _partly_reached(run: FactRun, deadline: float) -> dict[str, Any]:
    """How a run whose search and statements answered ends: ``succeeded``, or ``degraded`` when an
    enrichment step could not reach Wikidata — the deadline stopped it (issue 23: a run past its
    deadline never just "succeeds") or its retries were spent on an outage — so the facts lack what
    that step adds (labels, provenance). A step Wikidata answered with an error that retrying would
    not cure (a 400, malformed data) is recorded on the step only: Wikidata was reached."""
    failed = [entry for entry in run.steps if entry.get("status") in ("failed", "partial")]
    if failed and time.monotonic() >= deadline:
        names = [entry["name"] for entry in failed]
        reason = f"{', '.join(names)} skipped: {run_deadline_message(run)}"
        error_type = DEADLINE
    elif unreachable := [entry for entry in failed if entry.get("retryable")]:
        reason = "; ".join(
            f"Wikidata {entry['name']} failed: {entry.get('error', '')}" for entry in unreachable
        )
        reason += " (the facts are Wikidata's, without what those steps add)"
        error_type = str(unreachable[0].get("errorType") or "")
    else:
        return {"status": FactRunStatus.SUCCEEDED}
    logger.warning("facts.run_partly_reached", run_id=str(run.pk), reason=reason)
    return {
        "status": FactRunStatus.DEGRADED,
        "degraded": True,
        "degraded_reason": reason,
        "error_type": error_type,
    }


def _gather_and_rank(run: FactRun, steps: _Steps, deadline: float) -> list[Candidate]:
    language = run.language
    with steps.step("search") as entry:
        try:
            hits = _search(run, deadline, entry)
        except (UpstreamError, RateLimited) as error:
            raise _StepFailed("search", error) from error
    if not hits:
        return []
    top_ids = [hit["id"] for hit in hits[: settings.FACTS_TOP_ENTITIES]]
    with steps.step("statements") as entry:
        try:
            entities = clients.entities_fetch(
                top_ids,
                props=("labels", "descriptions", "aliases", "claims"),
                language=language,
                deadline=deadline,
            )
        except (UpstreamError, RateLimited) as error:
            raise _StepFailed("statements", error) from error
        entry["detail"] = {
            "entities": [entities.resolve(i) for i in top_ids if entities.get(i) is not None],
            "missing": list(entities.missing),
            "redirects": [redirect.as_dict() for redirect in entities.redirects],
        }
    run.entities = [
        {**hit, "label": (entities.label(hit["id"], language) or hit.get("label") or "")} for hit in hits
    ]
    FactRun.objects.filter(pk=run.pk).update(entities=run.entities)
    statements: list[Statement] = []
    for entity_id in top_ids:
        entity = entities.get(entity_id)
        if entity is None:
            continue
        kept = usable_statements(entity.statements, include_deprecated=run.include_deprecated)
        statements.extend(kept[:MAX_STATEMENTS_PER_ENTITY])
    statements = statements[:MAX_CANDIDATES]
    labels = entities.labels(language)
    with steps.step("labels") as entry:
        wanted = candidate_label_ids(statements) - set(labels)
        labels.update(_labels_best_effort(wanted, language, deadline, entry))
    with steps.step("rank") as entry:
        candidates = candidates_rank(
            question=run.question, statements=statements, labels=labels, top_k=run.top_k
        )
        entry["detail"] = {"candidates": len(statements), "kept": len(candidates)}
    return candidates


def _search(run: FactRun, deadline: float, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The shared entity search (vector database, keyword search over up to three phrases of the
    question, a verification's claim by its names alone, when it fails or finds nothing), recorded on
    the step. ``[{id, score, source, label?}]``."""
    phrases = keyword_phrases(run.question)
    if run.purpose == FactRunPurpose.VERIFICATION:
        # A claim is put to Wikidata because it names something. wbsearchentities matches labels and
        # aliases from their start, so the claim's content words or the whole sentence never find what
        # its names did not, and each costs one of the Action API's requests (5 per second) while the
        # caller waits: its names alone, when it has any.
        phrases = name_phrases(run.question) or phrases
    found = entities_search(
        run.question,
        kind="property" if run.scope == "properties" else "item",
        language=run.language,
        k=SEARCH_K,
        deadline=deadline,
        phrases=phrases[:KEYWORD_SEARCH_ATTEMPTS],
        fallback_when_empty=True,
        # A verification's caller is waiting for the answer: no waiting for the vector database's
        # next slot (one per 2 s), its claim names an entity that keyword search finds as well.
        vector_wait=run.purpose != FactRunPurpose.VERIFICATION,
        run_id=str(run.pk),
    )
    if found.fallback_reason is not None:
        entry["fallback"] = found.fallback_reason
    if found.error is not None:
        raise found.error
    if found.via == "vector":
        entry["detail"] = {"via": "vector", "hits": len(found.vector_hits)}
        return [
            {
                "id": hit.id,
                "score": hit.similarity_score,
                "source": "vector",
                **({"label": hit.label} if hit.label else {}),
            }
            for hit in found.vector_hits
        ]
    count = len(found.keyword_hits)
    entry["detail"] = {"via": "keyword", **({"phrase": found.phrase} if count else {}), "hits": count}
    return [
        {
            "id": hit["id"],
            "score": round(1 - index / count, 4),
            "source": "keyword",
            "label": hit.get("label") or "",
        }
        for index, hit in enumerate(found.keyword_hits)
    ]


def _labels_best_effort(
    ids: set[str], language: str, deadline: float, entry: dict[str, Any]
) -> dict[str, str]:
    """Labels for ``ids``; on failure the ones got so far, the error recorded on the step entry (ids
    without a label are shown as ids)."""
    if not ids:
        return {}
    lookup = labels_cached(ids, language=language, deadline=deadline)
    entry["detail"] = {"requested": lookup.requested, "cached": lookup.cached}
    if lookup.error is not None:
        entry.update(status="partial", **_error_fields(lookup.error))
    return lookup.labels


def _enrich(run: FactRun, steps: _Steps, candidates: list[Candidate], deadline: float) -> None:
    """Labels for the top facts' qualifiers and references, and their SPARQL provenance: best effort,
    a failure recorded on its step and the facts kept."""
    if not candidates:
        return
    detail_ids: set[str] = set()
    for candidate in candidates:
        for snak in candidate.statement.qualifiers:
            detail_ids.update(snak_ids(snak))
        for reference in candidate.statement.references:
            for snak in reference.snaks:
                detail_ids.update(snak_ids(snak))
    known = {key for c in candidates for key in (c.statement.entity_id, c.statement.property_id)}
    wanted = detail_ids - known
    if wanted:
        with contextlib.suppress(UpstreamError, RateLimited), steps.step("details") as entry:
            labels = _labels_best_effort(wanted, run.language, deadline, entry)
            for candidate in candidates:
                candidate.details = {k: v for k, v in labels.items() if k in detail_ids}
    if run.include_sparql:
        # Every returned fact gets its SPARQL provenance, from one query (topK ≤ 20 statements).
        with contextlib.suppress(UpstreamError, RateLimited), steps.step("sparql") as entry:
            guids = [c.statement.guid for c in candidates]
            query = statements_provenance_query(guids, limit=SPARQL_ROWS_PER_FACT * len(guids))
            client = clients.sparql_client(deadline=deadline)
            result = clients.with_retries(lambda: client.select(query), what="sparql", deadline=deadline)
            entry["detail"] = {"rows": len(result), "facts": len(candidates)}
            for candidate in candidates:
                candidate.sparql = result


def _labelled_snak(snak: Snak, labels: dict[str, str]) -> dict[str, Any]:
    data = snak.as_dict()
    data["propertyLabel"] = labels.get(snak.property_id, "")
    data["text"] = snak_text(snak, labels)
    return data


def _sparql_rows_for(result: SparqlResult, claim_guid: str) -> dict[str, Any]:
    uri = statement_uri(claim_guid)
    data = result.as_dict()
    data["rows"] = [row for row in data["rows"] if (row.get("statement") or {}).get("value") == uri]
    return data


def _persist(run: FactRun, candidates: list[Candidate]) -> None:
    """The run's facts, written with their provenance."""
    endpoint = clients.action_api_client().api_url
    retrieved_at = timezone.now()
    facts = []
    for position, candidate in enumerate(candidates, start=1):
        statement = candidate.statement
        labels = {statement.property_id: candidate.property_label, **candidate.details}
        sparql = candidate.sparql
        facts.append(
            Fact(
                run=run,
                claim_guid=statement.guid,
                position=position,
                text=candidate.text,
                score=candidate.score,
                qid=statement.entity_id,
                qid_label=candidate.subject_label,
                pid=statement.property_id,
                pid_label=candidate.property_label,
                snaktype=statement.snaktype,
                datatype=statement.mainsnak.datatype or "",
                value=statement.value.as_dict() if statement.value is not None else None,
                value_text=candidate.value_text,
                value_label=candidate.value_label,
                rank=statement.rank,
                qualifiers=[_labelled_snak(snak, labels) for snak in statement.qualifiers],
                references=[
                    {**reference.as_dict(), "snaks": [_labelled_snak(s, labels) for s in reference.snaks]}
                    for reference in statement.references
                ],
                endpoint=endpoint,
                retrieved_at=retrieved_at,
                embedding=candidate.vector,
                sparql=sparql.query if sparql else "",
                sparql_endpoint=sparql.endpoint if sparql else "",
                sparql_results=_sparql_rows_for(sparql, statement.guid) if sparql else None,
            )
        )
    _facts_replace(run, facts)


_NOT_REWRITTEN = {"id", "run", "claim_guid", "created_at"}


def _facts_replace(run: FactRun, facts: list[Fact]) -> None:
    """The run's facts become ``facts``, while this execution still owns the run: one INSERT … ON
    CONFLICT (run, claim_guid) DO UPDATE, and facts an earlier, lost execution left are removed."""
    with run_fence(run=run):
        if run.executions > 1:  # only a re-execution can find facts it did not write
            run.facts.exclude(claim_guid__in=[fact.claim_guid for fact in facts]).delete()
        if facts:
            Fact.objects.bulk_create(
                facts,
                update_conflicts=True,
                unique_fields=["run", "claim_guid"],
                update_fields=[f.name for f in Fact._meta.concrete_fields if f.name not in _NOT_REWRITTEN],
            )


def _finish(run: FactRun, started: float, **fields: Any) -> FactRun:
    duration = time.perf_counter() - started
    if not run_finish(run=run, duration_seconds=duration, **fields):
        run.refresh_from_db()
        return run
    wikidata_metrics.fact_runs_total.labels(outcome=str(run.status)).inc()
    wikidata_metrics.fact_run_duration_seconds.observe(duration)
    event_emit(
        name=f"facts.run.{run.status}",
        payload={
            "runId": str(run.pk),
            "question": run.question,
            "status": run.status,
            "degraded": run.degraded,
            "reason": run.degraded_reason or run.error,
            "facts": run.facts.count(),
            "durationMs": run.duration_ms,
            "correlationId": run.correlation_id,
        },
    )
    return run


def _finish_degraded(
    run: FactRun, steps: _Steps, failure: _StepFailed, started: float, deadline: float
) -> FactRun:
    # Past the deadline the cause is the deadline, whatever the last request said (a read cut short
    # at the deadline reads as a timeout, a request not sent as DeadlineReached).
    past_deadline = time.monotonic() >= deadline
    error = run_deadline_message(run) if past_deadline else failure.error.message
    reason = f"Wikidata {failure.step} failed: {error}"
    logger.warning(
        "facts.run_degraded",
        run_id=str(run.pk),
        step=failure.step,
        reason=reason,
        correlation_id=run.correlation_id,
    )
    with steps.step("local") as entry:
        run.knowledge = selectors.local_knowledge(question=run.question, top_k=run.top_k)
        copies = selectors.local_facts(run=run)
        _facts_replace(run, copies)
        entry["detail"] = {"facts": len(copies), "knowledge": len(run.knowledge)}
    # Degraded with local answers or without: "succeeded" would read as "Wikidata answered" (issue 26),
    # "failed" as "the question went wrong"; the page and the API say what it answered from.
    return _finish(
        run,
        started,
        status=FactRunStatus.DEGRADED,
        degraded=True,
        degraded_reason=reason,
        error=error,
        error_type=DEADLINE if past_deadline else _error_fields(failure.error)["errorType"],
    )
