"""One lifecycle for every workflow run: claim, heartbeat, finish, and the sweep that recovers runs
whose worker died.

Celery acknowledges a run's task late (``acks_late``) and requeues it when a pool process dies
(``reject_on_worker_lost``), but when the whole worker is killed, the broker hands the message
out again only after ``visibility_timeout`` — an hour by default, and lowering it makes slow runs
execute twice. So recovery does not rely on the broker: a worker claims a run and beats while it
executes (``heartbeat_at`` every ``CORTEX_RUN_HEARTBEAT_SECONDS``), and the periodic sweep
(Celery beat, every ``CORTEX_RUN_SWEEP_SECONDS``) re-enqueues a running run whose heartbeat is
older than ``CORTEX_RUN_STALE_SECONDS``, and fails it with the reason once it has been started
``CORTEX_RUN_MAX_EXECUTIONS`` times.

Deadlines: a run kind with a deadline (``TrackedRun.deadline_setting``, seconds from submission)
keeps it on every execution — the caller has waited since submitting, whichever worker runs it — so
an execution gets what is left (``run_deadline``), and its clients start no request after it. The
sweep ends, as ``failed`` with ``error_type`` ``deadline``, a lost run whose deadline has passed
(rather than running it again), a queued run no worker started before it, and a run a live worker
is still executing ``CORTEX_RUN_STALE_SECONDS`` after it (that worker is stuck; its result is fenced
out).

Only queued and running runs are claimed, beaten for and swept; every other state is finished —
``succeeded``, ``degraded`` (answered from stored data: the upstream could not be reached), ``failed``
and a kind's own (arXiv's ``rate_limited``) — and never executed again.

Duplicate deliveries are harmless: a claim succeeds only for a queued run or a running one whose
heartbeat went stale, and a finish is fenced by the execution number it claimed, so a worker that
comes back after its run was handed to another cannot overwrite that one's result.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.apps import apps
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.core.logging import get_logger
from apps.core.models import RUN_PENDING_STATUSES, RunStatus, TrackedRun
from apps.core.services import event_emit

logger = get_logger(__name__)

RunT = TypeVar("RunT", bound=TrackedRun)

WORKER_LOST = "worker_lost"


def run_enqueue(*, run: TrackedRun) -> None:
    """Hand ``run`` to its task once the transaction that created it commits (its ``enqueued_at``
    is its creation time; the sweep re-sends it if no worker claims it within the redelivery time)."""
    _send_after_commit(run)


def run_claim(*, model: type[RunT], run_id: str) -> RunT | None:
    """The run, marked running for this execution; None when it is not this worker's to execute
    (finished, or running with a live heartbeat — a duplicate delivery)."""
    with transaction.atomic():
        run = model._default_manager.select_for_update().get(pk=run_id)
        if run.status == RunStatus.RUNNING and not _heartbeat_stale(run):
            logger.info("run.claim_skipped", run_id=run_id, reason="running elsewhere")
            return None
        if run.status not in RUN_PENDING_STATUSES:  # finished: succeeded, degraded, failed, …
            return None
        now = timezone.now()
        run.status, run.started_at, run.heartbeat_at = RunStatus.RUNNING, now, now
        run.executions += 1
        run.error, run.error_type = "", ""
        run.save(update_fields=["status", "started_at", "heartbeat_at", "executions", "error", "error_type"])
    return run


def run_execute(
    *, model: type[RunT], run_id: str, execute: Callable[[RunT], RunT], on_claim: Callable[[RunT], None]
) -> RunT:
    """Execute a run under the lifecycle: claim it (a finished run, or one another worker beats
    for, is returned as it is), ``on_claim`` (reset what an earlier execution left, announce the
    start), then ``execute`` while a thread beats; an execution superseded meanwhile writes nothing
    and returns the run as its new owner left it."""
    run = run_claim(model=model, run_id=run_id)
    if run is None:
        return model._default_manager.get(pk=run_id)
    on_claim(run)
    with run_heartbeat(run=run):
        try:
            return execute(run)
        except RunSuperseded:  # this worker stalled past its heartbeat; another one owns the run now
            return model._default_manager.get(pk=run_id)


@contextlib.contextmanager
def run_heartbeat(*, run: TrackedRun) -> Iterator[None]:
    """Beat for ``run`` from a thread while the block executes (the work itself may block on I/O)."""
    stop = threading.Event()
    beater = threading.Thread(
        target=_beat, args=(type(run), run.pk, run.executions, stop), name=f"heartbeat-{run.pk}", daemon=True
    )
    beater.start()
    try:
        yield
    finally:
        stop.set()
        beater.join(timeout=5)


def _beat(model: type[TrackedRun], run_id: Any, execution: int, stop: threading.Event) -> None:
    try:
        while not stop.wait(settings.CORTEX_RUN_HEARTBEAT_SECONDS):
            try:
                model._default_manager.filter(
                    pk=run_id, executions=execution, status=RunStatus.RUNNING
                ).update(heartbeat_at=timezone.now())
            except Exception:  # a database hiccup: the next beat tries again; the sweep tolerates one miss
                logger.warning("run.heartbeat_failed", run_id=str(run_id), exc_info=True)
                close_old_connections()
    finally:
        connection.close()  # this thread's own connection


def run_deadline_seconds(run: TrackedRun) -> float | None:
    """The run kind's deadline in seconds from submission (its ``deadline_setting``), or None."""
    return float(getattr(settings, run.deadline_setting)) if run.deadline_setting else None


def run_deadline_at(run: TrackedRun) -> datetime | None:
    """When the run's deadline passes: its submission plus the deadline, on every execution (time
    queued and a lost worker's time count too — the caller has been waiting all along)."""
    seconds = run_deadline_seconds(run)
    return None if seconds is None else run.created_at + timedelta(seconds=seconds)


def run_deadline(*, run: TrackedRun) -> float:
    """The run's deadline as a ``time.monotonic()`` instant, for its clients and retries; in the past
    when it has passed (an execution then starts no request and ends at once)."""
    deadline_at = run_deadline_at(run)
    if deadline_at is None:
        raise ValueError(f"{run._meta.label} has no deadline_setting")
    return time.monotonic() + (deadline_at - timezone.now()).total_seconds()


def run_deadline_message(run: TrackedRun) -> str:
    """Why a run ended at its deadline, naming the setting (``error`` of the run)."""
    return (
        f"the run's deadline passed ({run.deadline_setting}={run_deadline_seconds(run):g} s from submission)"
    )


class RunSuperseded(Exception):
    """This execution of the run lost its claim: the sweep handed the run to another worker."""


@contextlib.contextmanager
def run_fence(*, run: TrackedRun) -> Iterator[None]:
    """A transaction in which this execution still owns the run (its row locked); raises
    ``RunSuperseded`` otherwise, so a worker that stalled past its heartbeat writes nothing."""
    with transaction.atomic():
        current = type(run)._default_manager.select_for_update().only("executions", "status").get(pk=run.pk)
        if current.executions != run.executions or current.status != RunStatus.RUNNING:
            logger.warning(
                "run.superseded",
                run_id=str(run.pk),
                execution=run.executions,
                current_execution=current.executions,
                current_status=current.status,
            )
            raise RunSuperseded(str(run.pk))
        yield


def run_finish(*, run: TrackedRun, duration_seconds: float, **fields: Any) -> bool:
    """Save the run's outcome; False (nothing written) when this execution was superseded — the
    sweep handed the run to another worker, whose result stands. One conditional UPDATE: the
    execution number in its WHERE clause is the fence."""
    for name, value in fields.items():
        setattr(run, name, value)
    run.finished_at = timezone.now()
    run.heartbeat_at = None
    run.duration_ms = round(duration_seconds * 1000, 1)
    values = {
        field.attname: getattr(run, field.attname)
        for field in run._meta.concrete_fields
        if not field.primary_key
    }
    written = (
        type(run)
        ._default_manager.filter(pk=run.pk, executions=run.executions, status=RunStatus.RUNNING)
        .update(**values)
    )
    if not written:
        logger.warning("run.superseded", run_id=str(run.pk), execution=run.executions)
    return bool(written)


DEADLINE = "deadline"

_ERROR_CODES = {
    WORKER_LOST: "worker_lost",
    "internal": "internal_error",
    "rate_limited": "rate_limited",
    DEADLINE: "deadline_exceeded",
}


def run_failure(*, run: TrackedRun, **details: Any) -> dict[str, Any] | None:
    """How a finished run failed, in the error shape's inner form (``code``, ``message``, ``details``),
    for the one failed-run contract of every API: the run's answer (200, ``status`` says how it
    ended) carries it as ``error``. None for a pending, succeeded or degraded run: a degraded run
    answered (from stored data, perhaps with nothing) and its answer says why in its own words."""
    if run.status in (*RUN_PENDING_STATUSES, RunStatus.SUCCEEDED, RunStatus.DEGRADED):
        return None
    return {
        "code": _ERROR_CODES.get(run.error_type, "upstream_error"),
        "message": run.error,
        "details": {"runId": str(run.pk), "type": run.error_type, "executions": run.executions, **details},
    }


def _heartbeat_stale(run: TrackedRun) -> bool:
    last = run.heartbeat_at or run.started_at
    return last is None or last < timezone.now() - timedelta(seconds=settings.CORTEX_RUN_STALE_SECONDS)


# --- The sweep (Celery beat) -----------------------------------------------------------------


@dataclass
class SweepReport:
    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    redelivered: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)  # at their deadline

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "requeued": self.requeued,
            "failed": self.failed,
            "redelivered": self.redelivered,
            "ended": self.ended,
        }


def tracked_run_models() -> list[type[TrackedRun]]:
    return [model for model in apps.get_models() if issubclass(model, TrackedRun)]


def runs_sweep() -> SweepReport:
    """Recover every run kind's runs whose worker was lost, and re-send queued runs whose message
    the broker lost (older than ``CORTEX_RUN_REDELIVER_SECONDS`` in the queue)."""
    report = SweepReport()
    for model in tracked_run_models():
        _sweep_model(model, report)
    if report.requeued or report.failed or report.redelivered or report.ended:
        logger.warning("runs.swept", **report.as_dict())
    return report


def _sweep_model(model: type[TrackedRun], report: SweepReport) -> None:
    now = timezone.now()
    stale_before = now - timedelta(seconds=settings.CORTEX_RUN_STALE_SECONDS)
    redeliver_before = now - timedelta(seconds=settings.CORTEX_RUN_REDELIVER_SECONDS)
    if model.deadline_setting:
        _end_past_deadline(model, report, now)
    with transaction.atomic():
        lost = model._default_manager.select_for_update(skip_locked=True).filter(
            Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True, started_at__lt=stale_before),
            status=RunStatus.RUNNING,
        )
        for run in lost:
            last = run.heartbeat_at or run.started_at
            silent = round((now - last).total_seconds()) if last else None
            if run.executions >= settings.CORTEX_RUN_MAX_EXECUTIONS:
                _fail_lost(run, silent, now)
                report.failed.append(str(run.pk))
            else:
                _requeue_lost(run, silent, now)
                report.requeued.append(str(run.pk))
        forgotten = model._default_manager.select_for_update(skip_locked=True).filter(
            Q(enqueued_at__lt=redeliver_before)
            | Q(enqueued_at__isnull=True, created_at__lt=redeliver_before),
            status=RunStatus.QUEUED,
        )
        for run in forgotten:
            run.enqueued_at = now
            run.save(update_fields=["enqueued_at"])
            report.redelivered.append(str(run.pk))
            _send_after_commit(run)


def _end_past_deadline(model: type[TrackedRun], report: SweepReport, now: datetime) -> None:
    """End the runs past their deadline that no live worker will end: lost (stale heartbeat) ones —
    running them again would answer after the deadline — queued ones, and running ones still beating
    ``CORTEX_RUN_STALE_SECONDS`` after it (a live worker ends its run at the deadline itself)."""
    seconds = float(getattr(settings, model.deadline_setting))
    submitted_before = now - timedelta(seconds=seconds)
    stale = timedelta(seconds=settings.CORTEX_RUN_STALE_SECONDS)
    with transaction.atomic():
        past = model._default_manager.select_for_update(skip_locked=True).filter(
            Q(status=RunStatus.QUEUED)
            | Q(status=RunStatus.RUNNING, created_at__lt=submitted_before - stale)
            | Q(status=RunStatus.RUNNING, heartbeat_at__lt=now - stale)
            | Q(status=RunStatus.RUNNING, heartbeat_at__isnull=True, started_at__lt=now - stale),
            created_at__lt=submitted_before,
        )
        for run in past:
            last = run.heartbeat_at or run.started_at
            if run.status == RunStatus.QUEUED:
                why = "no worker started it in time; not run."
            elif last is None or last < now - stale:
                silent = round((now - last).total_seconds()) if last else None
                why = f"its worker was lost (no heartbeat for {silent} s); not run again."
            else:
                why = "its worker was still running it; not run again."
            _end_at_deadline(run, why, now)
            report.ended.append(str(run.pk))


def _end_at_deadline(run: TrackedRun, why: str, now: datetime) -> None:
    deadline_at = run_deadline_at(run)
    assert deadline_at is not None  # only kinds with a deadline are swept for it
    late = round((now - deadline_at).total_seconds())
    run.status, run.error_type, run.finished_at, run.heartbeat_at = RunStatus.FAILED, DEADLINE, now, None
    run.error = (
        f"Ended at its deadline ({run.deadline_setting}={run_deadline_seconds(run):g} s from submission), "
        f"{late} s ago: {why}"
    )
    run.save(update_fields=["status", "error", "error_type", "finished_at", "heartbeat_at"])
    _announce("runs.ended", run)


def _fail_lost(run: TrackedRun, silent: int | None, now: datetime) -> None:
    run.status, run.error_type, run.finished_at, run.heartbeat_at = RunStatus.FAILED, WORKER_LOST, now, None
    run.error = (
        f"Its worker was lost {run.executions} time(s) (last: no heartbeat for {silent} s); "
        f"not retried past CORTEX_RUN_MAX_EXECUTIONS={settings.CORTEX_RUN_MAX_EXECUTIONS}."
    )
    run.save(update_fields=["status", "error", "error_type", "finished_at", "heartbeat_at"])
    _announce("runs.failed", run)


def _requeue_lost(run: TrackedRun, silent: int | None, now: datetime) -> None:
    run.status, run.error_type, run.enqueued_at = RunStatus.QUEUED, WORKER_LOST, now
    run.error = f"Re-enqueued: its worker was lost (no heartbeat for {silent} s)."
    run.save(update_fields=["status", "enqueued_at", "error", "error_type"])
    _announce("runs.requeued", run)
    _send_after_commit(run)


def _announce(name: str, run: TrackedRun) -> None:
    event_emit(
        name=name,
        payload={
            "kind": run._meta.label,
            "runId": str(run.pk),
            "executions": run.executions,
            "reason": run.error,
            "correlationId": run.correlation_id,
        },
    )


def _send_after_commit(run: TrackedRun) -> None:
    task, run_id = import_string(run.execute_task), str(run.pk)
    transaction.on_commit(lambda: task.delay(run_id))
