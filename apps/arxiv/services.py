"""arXiv search runs: submitted by the API (or the ``arxiv.search`` tool), executed on the Celery
``arxiv`` queue under arXiv's terms, stored with the papers they found.

Every request to arXiv, from whichever process, passes the shared Redis limiter
(one slot every ``ARXIV_MIN_INTERVAL_SECONDS``, handed out in arrival order) and
then holds the single-connection lock. Retryable failures (429, 503, timeouts,
connection errors) are retried at most ``ARXIV_MAX_RETRIES`` times with
exponential backoff and full jitter, never sooner than ``Retry-After``. A run
whose turn would come after its deadline is refused as ``rate_limited`` with the
exact ``retryAfter``. Identical requests within ``ARXIV_CACHE_SECONDS`` are
answered from the stored page without calling arXiv.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from apps.arxiv import metrics as arxiv_metrics
from apps.arxiv import selectors
from apps.arxiv.clients import ArxivClient
from apps.arxiv.models import Paper, PaperVersion, RunKind, RunStatus, SearchRun, SearchRunPaper
from apps.arxiv.parsing import ArxivEntry, ArxivPage
from apps.arxiv.query import build_id_params, build_search_params, normalize_id_list
from apps.arxiv.schemas import SearchIn
from apps.core.errors import FeatureDisabled, RateLimited, UpstreamError, error_type
from apps.core.http import deadline_check
from apps.core.logging import current_correlation_id, get_logger
from apps.core.ratelimit import ConnectionLock, MinimumSpacing, RateLimiter
from apps.core.retries import RetryPolicy, call_with_retries
from apps.core.runs import (
    RunSuperseded,
    run_deadline,
    run_enqueue,
    run_execute,
    run_failure,
    run_fence,
    run_finish,
)
from apps.core.services import event_emit, row_wait, upstream_request_recorded
from apps.core.signing import canonical_json

logger = get_logger(__name__)

LIMITER_NAME = "arxiv"


def arxiv_feature_check() -> None:
    """``FeatureDisabled`` (503) naming the flag when arXiv is switched off."""
    if not settings.FEATURE_ARXIV:
        raise FeatureDisabled(
            branded("arXiv search is switched off (FEATURE_ARXIV is false); use local knowledge instead."),
            details={"flag": "FEATURE_ARXIV"},
        )


def arxiv_limiter() -> RateLimiter:
    return RateLimiter(LIMITER_NAME, interval=settings.ARXIV_MIN_INTERVAL_SECONDS)


def arxiv_spacing() -> MinimumSpacing:
    return MinimumSpacing(LIMITER_NAME, interval=settings.ARXIV_MIN_INTERVAL_SECONDS)


def arxiv_connection_lock() -> ConnectionLock:
    # Held for one request at most; the TTL frees it if the holder dies mid-request.
    return ConnectionLock(LIMITER_NAME, ttl=settings.ARXIV_TIMEOUT_SECONDS + 5)


# --- Submitting -------------------------------------------------------------------------


def _cache_key(kind: str, arxiv_params: list[list[str]]) -> str:
    return hashlib.sha256(canonical_json([kind, arxiv_params])).hexdigest()


def search_run_submit(
    *, kind: str, parameters: dict[str, Any], arxiv_params: list[tuple[str, str]]
) -> SearchRun:
    """A run for these parameters: answered from a recent identical run, or queued for a worker."""
    arxiv_feature_check()
    params = [[key, value] for key, value in arxiv_params]
    cache_key = _cache_key(kind, params)
    now = timezone.now()
    cached = (
        SearchRun.objects.filter(
            cache_key=cache_key,
            status=RunStatus.SUCCEEDED,
            cached_from__isnull=True,
            finished_at__gte=now - timedelta(seconds=settings.ARXIV_CACHE_SECONDS),
        )
        .order_by("-finished_at")
        .first()
    )
    common = {
        "kind": kind,
        "cache_key": cache_key,
        "parameters": parameters,
        "arxiv_params": params,
        "correlation_id": current_correlation_id() or "",
    }
    if cached is not None:
        run = SearchRun.objects.create(
            **common,
            status=RunStatus.SUCCEEDED,
            cached_from=cached,
            started_at=now,
            finished_at=now,
            duration_ms=0.0,
        )
        arxiv_metrics.tool_calls_total.labels(outcome="cached").inc()
        event_emit(name="arxiv.tool.completed", payload=_event_payload(run, cached=True))
        return run
    run = SearchRun.objects.create(**common)
    run_enqueue(run=run)
    return run


def search_submit(*, payload: SearchIn) -> SearchRun:
    """A search run for the API's (and the tool's) validated input."""
    arxiv_feature_check()
    params = build_search_params(
        query=payload.query,
        categories=payload.categories,
        date_from=payload.dateFrom,
        date_to=payload.dateTo,
        start=payload.start,
        max_results=payload.maxResults,
        sort_by=payload.sortBy,
        sort_order=payload.sortOrder,
    )
    return search_run_submit(
        kind=RunKind.SEARCH, parameters=payload.model_dump(mode="json"), arxiv_params=params
    )


def lookup_submit(*, ids: list[str]) -> SearchRun:
    """A run fetching these papers by id (latest version unless one is named)."""
    arxiv_feature_check()
    normalised = normalize_id_list(ids)
    return search_run_submit(
        kind=RunKind.LOOKUP, parameters={"ids": normalised}, arxiv_params=build_id_params(normalised)
    )


def search_run_wait(*, run: SearchRun, timeout: float) -> SearchRun:
    """The run once finished, or as it stands when ``timeout`` seconds have passed."""
    return row_wait(
        row=run,
        pending=lambda row: row.status in (RunStatus.QUEUED, RunStatus.RUNNING),
        timeout=timeout,
        interval=0.05,
    )


def search_run_outcome(*, run: SearchRun) -> dict[str, Any]:
    """The API's answer for a run: its page once succeeded; ``{"runId", "status", "poll"}`` while
    queued or running; its ``error`` (code, message, details) once it failed or was rate limited."""
    if run.status == RunStatus.SUCCEEDED:
        source = run.cached_from or run
        return {
            "runId": str(run.pk),
            "status": run.status,
            "cached": run.cached_from_id is not None,
            "source": "arxiv",
            "brand": settings.CORTEX_BRAND,
            **(source.result or {}),
        }
    if run.pending:
        return {"runId": str(run.pk), "status": run.status, "poll": f"/v1/arxiv/runs/{run.pk}"}
    if _degraded(run):
        # arXiv was down: the answer is the stored papers' page, with why.
        brand = settings.CORTEX_BRAND
        return {
            "runId": str(run.pk),
            "status": run.status,
            "source": "stored",
            "brand": brand,
            **(run.result or {}),
        }
    details: dict[str, Any] = {"upstream": "arxiv", "retryable": run.retryable}
    if run.status == RunStatus.RATE_LIMITED:
        details |= {"retryAfter": run.retry_after or 0.0, "retryable": True}
    failure = run_failure(run=run, **details)
    if failure is not None:
        failure["message"] = branded(failure["message"])
    return {"runId": str(run.pk), "status": run.status, "source": "arxiv", "error": failure}


def search_run_error(*, run: SearchRun) -> RateLimited | UpstreamError | None:
    """A finished run's failure as the error a synchronous caller raises (a gateway tool call, the
    live search page): 429 with ``Retry-After`` or 502; None unless the run failed, or when it
    failed but answers from the stored papers (arXiv down: :func:`search_run_outcome`)."""
    failure = run_failure(run=run, upstream="arxiv", retryable=run.retryable)
    if failure is None or _degraded(run):
        return None
    if run.status == RunStatus.RATE_LIMITED:
        return RateLimited(branded(run.error), retry_after=run.retry_after or 0.0, details=failure["details"])
    return UpstreamError(branded(run.error), details=failure["details"])


def branded(message: str) -> str:
    """An arXiv error message as the seed shows them: ``[brAInwav] …`` (``CORTEX_BRAND``)."""
    prefix = f"[{settings.CORTEX_BRAND}] "
    return message if not message or message.startswith(prefix) else prefix + message


def arxiv_tool_description(what: str) -> str:
    """An arXiv tool's description as seed 002 words it: ``brAInwav arXiv integration: …``, the brand
    from ``CORTEX_BRAND`` (for the MCP tool list and the service map, which describe the tools)."""
    return f"{settings.CORTEX_BRAND} arXiv integration: {what}"


def _degraded(run: SearchRun) -> bool:
    return run.status == RunStatus.DEGRADED


# --- Executing (Celery worker) -----------------------------------------------------------


class _Progress:
    """What one execution spent waiting, written to the run at the end."""

    def __init__(self) -> None:
        self.rate_limit_waits = 0
        self.waited_seconds = 0.0


def search_run_execute(*, run_id: str) -> SearchRun:
    """Call arXiv for a queued run under the shared run lifecycle (claim, heartbeat, fenced finish).

    A finished run, or one another worker is executing, is left as it is; a run whose worker was
    lost is executed again (papers are upserted by arXiv id and linked once per run).
    """
    return run_execute(model=SearchRun, run_id=run_id, execute=_execute, on_claim=_announce_start)


def _announce_start(run: SearchRun) -> None:
    if run.executions == 1:  # a re-execution is announced by the sweep's runs.requeued instead
        event_emit(name="arxiv.tool.started", payload=_event_payload(run))


def _execute(run: SearchRun) -> SearchRun:
    started = time.perf_counter()
    # Counted from submission on every execution: time queued, and a lost worker's, are part of it.
    deadline = run_deadline(run=run)
    progress = _Progress()
    client = ArxivClient(
        api_url=settings.ARXIV_API_URL,
        timeout=settings.ARXIV_TIMEOUT_SECONDS,
        deadline=deadline,
        gate=lambda: _gate(deadline, progress),
        before_send=lambda: _claim_send(progress),
    )
    params = [tuple(pair) for pair in run.arxiv_params]
    try:
        page = _search_with_retries(run, client, params, deadline, progress)
    except RateLimited as error:
        return _finish_rate_limited(run, error, started, progress)
    except UpstreamError as error:
        return _finish_failed(run, error, started, progress)
    return _finish_succeeded(run, page, started, progress)


@contextlib.contextmanager
def _gate(deadline: float, progress: _Progress) -> Iterator[None]:
    # Past the deadline nothing is sent, and no slot is taken (a limiter grants a free one to anyone).
    deadline_check(deadline, upstream=LIMITER_NAME, name="arXiv")
    limiter = arxiv_limiter()
    with upstream_request_recorded(upstream=LIMITER_NAME, budget_per_hour=limiter.per_hour) as tally:
        waited = tally.waited_seconds = limiter.acquire(deadline=deadline)
        if waited > 0:
            progress.rate_limit_waits += 1
            progress.waited_seconds += waited
            arxiv_metrics.rate_limit_hits_total.inc()
        with arxiv_connection_lock().hold(deadline=deadline):
            yield


def _claim_send(progress: _Progress) -> None:
    progress.waited_seconds += arxiv_spacing().claim()


def _search_with_retries(
    run: SearchRun, client: ArxivClient, params: list[tuple[str, str]], deadline: float, progress: _Progress
) -> ArxivPage:
    def attempt() -> ArxivPage:
        run.attempts += 1
        return client.search(params)

    def past_deadline(error: UpstreamError, delay: float) -> RateLimited:
        # A read cut short at the deadline is a timeout, not arXiv asking us to wait.
        why = (
            f"arXiv asked us to wait {delay:.1f} s, past this run's deadline"
            if error.retry_after
            else f"{error.message}, and this run's deadline leaves no time to retry"
        )
        return RateLimited(
            f"{why}; retry later.",
            retry_after=delay,
            details={"limiter": LIMITER_NAME},
        )

    def waited(delay: float) -> None:
        progress.waited_seconds += delay

    policy = RetryPolicy(
        max_retries=settings.ARXIV_MAX_RETRIES,
        backoff_base=settings.ARXIV_BACKOFF_BASE_SECONDS,
        backoff_cap=settings.ARXIV_BACKOFF_MAX_SECONDS,
    )
    return call_with_retries(
        attempt,
        policy=policy,
        what="arxiv search",
        deadline=deadline,
        past_deadline=past_deadline,
        on_wait=waited,
        run_id=str(run.pk),
    )


def _finish(run: SearchRun, started: float, progress: _Progress, **fields: Any) -> None:
    """The run's outcome, written while this execution still owns the run (``RunSuperseded``
    otherwise, and nothing is written)."""
    duration = time.perf_counter() - started
    if not run_finish(
        run=run,
        duration_seconds=duration,
        rate_limit_waits=progress.rate_limit_waits,
        waited_seconds=round(progress.waited_seconds, 3),
        **fields,
    ):
        raise RunSuperseded(str(run.pk))
    arxiv_metrics.tool_duration_seconds.observe(duration)


def _finish_succeeded(run: SearchRun, page: ArxivPage, started: float, progress: _Progress) -> SearchRun:
    with run_fence(run=run):
        papers = [paper_upsert(entry=entry) for entry in page.items]
        SearchRunPaper.objects.bulk_create(
            [SearchRunPaper(run=run, paper=paper, rank=rank) for rank, paper in enumerate(papers, start=1)],
            ignore_conflicts=True,  # the same paper twice in one page keeps its first rank
        )
        _finish(run, started, progress, status=RunStatus.SUCCEEDED, result=page.as_dict(), error="")
    arxiv_metrics.tool_calls_total.labels(outcome="succeeded").inc()
    event_emit(name="arxiv.tool.completed", payload=_event_payload(run, results=len(page.items)))
    return run


def _finish_rate_limited(
    run: SearchRun, error: RateLimited, started: float, progress: _Progress
) -> SearchRun:
    _finish(
        run,
        started,
        progress,
        status=RunStatus.RATE_LIMITED,
        error=error.message,
        error_type="rate_limited",
        retry_after=round(error.retry_after, 3),
    )
    arxiv_metrics.tool_calls_total.labels(outcome="rate_limited").inc()
    arxiv_metrics.rate_limit_hits_total.inc()
    event_emit(name="arxiv.rate_limited", payload=_event_payload(run, retryAfter=run.retry_after))
    return run


def _finish_failed(run: SearchRun, error: UpstreamError, started: float, progress: _Progress) -> SearchRun:
    """A run arXiv did not answer: ``degraded`` when it is a search arXiv was down for (it answers from
    the stored papers, perhaps with none), ``failed`` with the error otherwise."""
    failure_type = error_type(error)
    stored = _stored_answer(run, error)
    status = RunStatus.DEGRADED if stored is not None else RunStatus.FAILED
    _finish(
        run,
        started,
        progress,
        status=status,
        error=error.message,
        error_type=failure_type,
        retryable=error.retryable,
        result=stored,
    )
    arxiv_metrics.tool_calls_total.labels(outcome=str(status)).inc()
    arxiv_metrics.errors_total.labels(type=failure_type).inc()
    event_emit(
        name=f"arxiv.tool.{status}",
        payload=_event_payload(run, error=branded(error.message), errorType=failure_type),
    )
    logger.warning(
        "arxiv.run_failed", run_id=str(run.pk), error=branded(error.message), attempts=run.attempts,
        degraded=_degraded(run),
    )  # fmt: skip
    return run


def _arxiv_down(error: UpstreamError) -> bool:
    """arXiv unreachable or failing on its side once the retries are spent (timeouts, connection
    errors, 429, 5xx) — not a request arXiv refused (4xx, an error feed) or our configuration."""
    status = error.details.get("status") if isinstance(error.details, dict) else None
    return error.retryable or (isinstance(status, int) and status >= 500)


def _stored_answer(run: SearchRun, error: UpstreamError) -> dict[str, Any] | None:
    """Seed 002 story 1 scenario 2: a search while arXiv is down answers from the stored papers,
    ``degraded`` with the reason (kept on the run, so polling it reads alike). A lookup by id, or a
    failure that is not an outage, stays the run's error."""
    if run.kind != RunKind.SEARCH or not _arxiv_down(error):
        return None
    page = selectors.stored_search_page(parameters=run.parameters)
    found = (
        f"answered from {page['totalResults']} matching stored papers"
        if page["totalResults"]
        else "no stored paper matches this search"
    )
    return {**page, "degraded": True, "reason": branded(f"arXiv is unavailable ({error.message}); {found}.")}


def _event_payload(run: SearchRun, **extra: Any) -> dict[str, Any]:
    return {
        "runId": str(run.pk),
        "kind": run.kind,
        "parameters": run.parameters,
        "status": run.status,
        "attempts": run.attempts,
        "durationMs": run.duration_ms,
        "brand": settings.CORTEX_BRAND,
        **extra,
    }


# --- Papers ------------------------------------------------------------------------------


def _datetime(value: str) -> datetime:
    return datetime.fromisoformat(value)


def paper_upsert(*, entry: ArxivEntry) -> Paper:
    """Create or refresh a paper from a parsed entry; an older version never overwrites a newer one."""
    version = entry.get("version")
    fields = {
        "title": entry["title"],
        "summary": entry["summary"],
        "authors": entry["authors"],
        "author_details": entry["authorDetails"],
        "published": _datetime(entry["published"]),
        "updated": _datetime(entry["updated"]),
        "url": entry["url"],
        "pdf_url": entry.get("pdfUrl", ""),
        "categories": entry["categories"],
        "primary_category": entry.get("primaryCategory", ""),
        "doi": entry.get("doi", ""),
        "journal_ref": entry.get("journalRef", ""),
        "comment": entry.get("comment", ""),
        "latest_version": version,
    }
    paper = Paper.objects.select_for_update().filter(arxiv_id=entry["id"]).first()
    if paper is None:
        paper = Paper.objects.create(arxiv_id=entry["id"], **fields)
    elif version is None or paper.latest_version is None or version >= paper.latest_version:
        for name, value in fields.items():
            setattr(paper, name, value)
        paper.save()
    if version is not None:
        PaperVersion.objects.get_or_create(
            paper=paper, version=version, defaults={"updated": _datetime(entry["updated"])}
        )
    return paper
