"""Live health of connectors and upstreams: up, degraded or down, with the last error and since when.

Computed from what already happens, never from a flag someone sets:

* an **upstream** (a Wikidata service, arXiv, an MCP connector's endpoint ``mcp:<slug>``) from its
  ``UpstreamRequest`` rows (every request its gate sent; our own limiter's refusals are not the
  upstream's fault and do not count);
* a **connector** from its ``ToolCall`` rows (calls the caller got wrong — invalid arguments, a
  denied token, our limiter's refusal — do not count) plus the probes of its endpoint, and from the
  upstreams it answers through (``CONNECTOR_UPSTREAMS``): a connector all of whose upstreams are
  down is down, whatever its own endpoint says.

Quiet targets would have nothing to judge by, so ``health_probe`` (Celery beat, every
``CORTEX_HEALTH_PROBE_SECONDS``) sends one cheap request to each target idle for that long,
through the same gates and shared limiters as real traffic: a probe spends the upstream's budget
like a call (the dashboard's budget panel counts it) and never waits for a slot. A probe of an
upstream leaves its ``UpstreamRequest`` row; its error text and a connector probe's outcome are
kept in Redis (``PROBE_KEY``), so no table changes.

The rule, over the observations of the last ``CORTEX_HEALTH_WINDOW_SECONDS``:

* **down**: the newest observation failed and either nothing in the window succeeded or the last
  ``CORTEX_HEALTH_DOWN_AFTER`` observations all failed;
* **degraded**: not down, and the newest observation failed or at least
  ``CORTEX_HEALTH_DEGRADED_RATIO`` of the window's observations failed;
* **up**: anything else observed; **unknown**: nothing observed in the window.

"Since" is when the current state began: for a failing target the first failure after its last
success (looked up beyond the window), for a healthy one its first success after its last failure.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import redis
from django.conf import settings
from django.db.models import Max, Min, Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from apps.connectors.models import Connector, ToolCall, ToolCallStatus, Transport, connectors_switched_off
from apps.core.errors import ApplicationError, RateLimited
from apps.core.logging import get_logger
from apps.core.models import UpstreamOutcome, UpstreamRequest
from apps.core.redis import get_redis

logger = get_logger(__name__)


class State(StrEnum):
    UP = "up"
    DEGRADED = "degraded"
    DOWN = "down"
    UNKNOWN = "unknown"


SEVERITY = {State.UNKNOWN: 0, State.UP: 0, State.DEGRADED: 1, State.DOWN: 2}

# The calls that say something about the upstream: the caller's own mistakes and our limiter's
# refusals (it protects the upstream's budget) say nothing about whether the upstream answers.
CALL_OK = (ToolCallStatus.OK,)
CALL_FAILED = (ToolCallStatus.UPSTREAM_ERROR, ToolCallStatus.FAILED)
REQUEST_OK = (UpstreamOutcome.OK,)
REQUEST_FAILED = (UpstreamOutcome.FAILED, UpstreamOutcome.THROTTLED)

PROBE_KEY = "cortex:health:probe:"  # + "connector:<slug>" or "upstream:<name>": newest first
PROBES_KEPT = 20
WORKER_HEARTBEAT_KEY = "cortex:health:worker-heartbeat"
# How far back "since" is looked for: the last success before a long outage, read by time (indexed).
HISTORY = timedelta(hours=24)


def _wikidata_upstreams() -> tuple[str, ...]:
    from apps.wikidata import action_api, sparql, vectordb

    return (action_api.UPSTREAM, vectordb.UPSTREAM, sparql.UPSTREAM)


def _arxiv_upstreams() -> tuple[str, ...]:
    from apps.arxiv.services import LIMITER_NAME

    return (LIMITER_NAME,)


# The upstreams a connector answers through besides its own endpoint: the native adapters' services
# (wikidata's tools fall back to them; arXiv's adapter is one). Functions: the apps import connectors.
CONNECTOR_UPSTREAMS: dict[str, Callable[[], tuple[str, ...]]] = {
    "wikidata": _wikidata_upstreams,
    "arxiv": _arxiv_upstreams,
}


@dataclass(frozen=True)
class Observation:
    """One outcome: a call, an upstream request or a probe."""

    at: datetime
    ok: bool
    error: str = ""


@dataclass(frozen=True)
class Health:
    """A target's state over the window, its last error and since when the state holds."""

    kind: str  # "connector" or "upstream"
    target: str
    state: State
    observed: int = 0
    failed: int = 0
    last_error: str = ""
    last_error_at: datetime | None = None
    since: datetime | None = None
    last_ok_at: datetime | None = None
    last_probe_at: datetime | None = None
    upstreams: tuple[Health, ...] = field(default=())

    @property
    def failure_ratio(self) -> float:
        return self.failed / self.observed if self.observed else 0.0

    @property
    def css_class(self) -> str:
        return f"health-{self.state.value}"

    @property
    def label(self) -> str:
        return {
            State.UP: "up",
            State.DEGRADED: "degraded",
            State.DOWN: "down",
            State.UNKNOWN: "no recent calls",
        }[self.state]

    def as_dict(self) -> dict[str, Any]:
        def iso(value: datetime | None) -> str | None:
            return value.isoformat() if value is not None else None

        data: dict[str, Any] = {
            "state": self.state.value,
            "observed": self.observed,
            "failed": self.failed,
            "lastError": self.last_error or None,
            "lastErrorAt": iso(self.last_error_at),
            "since": iso(self.since),
            "lastOkAt": iso(self.last_ok_at),
        }
        if self.upstreams:
            data["upstreams"] = {upstream.target: upstream.state.value for upstream in self.upstreams}
        return data


def _window() -> timedelta:
    return timedelta(seconds=settings.CORTEX_HEALTH_WINDOW_SECONDS)


def state_of(observations: list[Observation]) -> State:
    """The rule of the module docstring over one target's observations in the window, oldest first."""
    if not observations:
        return State.UNKNOWN
    failed = sum(1 for o in observations if not o.ok)
    newest_failed = not observations[-1].ok
    tail = observations[-settings.CORTEX_HEALTH_DOWN_AFTER :]
    if newest_failed and (failed == len(observations) or all(not o.ok for o in tail)):
        return State.DOWN
    if newest_failed or failed / len(observations) >= settings.CORTEX_HEALTH_DEGRADED_RATIO:
        return State.DEGRADED
    return State.UP


def assess(
    *,
    kind: str,
    target: str,
    observations: list[Observation],
    last_ok_before: datetime | None = None,
    last_failure_before: datetime | None = None,
    streak_start: datetime | None = None,
) -> Health:
    """Health from one target's observations in the window (any order).

    ``last_ok_before`` / ``last_failure_before``: the newest success / failure before the window
    (``None``: none); ``streak_start``: the first failure after the last success when that success
    is older than the window (the caller looks it up), else it is found in the window.
    """
    ordered = sorted(observations, key=lambda o: o.at)
    state = state_of(ordered)
    failures = [o for o in ordered if not o.ok]
    successes = [o for o in ordered if o.ok]
    last_failure = failures[-1] if failures else None
    last_ok_at = successes[-1].at if successes else last_ok_before
    since: datetime | None = None
    if state in (State.DOWN, State.DEGRADED):
        streak = [o.at for o in failures if last_ok_at is None or o.at > last_ok_at]
        began_before = (
            not successes
            and last_failure_before is not None
            and (last_ok_before is None or last_failure_before > last_ok_before)
        )
        # Began before the window: the caller looks it up. Degraded with a success since the last
        # failure: degraded since the window's first failure.
        since = streak_start if began_before else (streak[0] if streak else failures[0].at)
    elif state == State.UP and last_failure is not None:
        since = next((o.at for o in successes if o.at > last_failure.at), None)
    return Health(
        kind=kind,
        target=target,
        state=state,
        observed=len(ordered),
        failed=len(failures),
        last_error=last_failure.error if last_failure else "",
        last_error_at=last_failure.at if last_failure else None,
        since=since,
        last_ok_at=last_ok_at,
    )


# --- Probe records (Redis) ------------------------------------------------------------------------


def probe_record(target: str, observation: Observation) -> None:
    """Keep a probe's outcome (newest first, the last ``PROBES_KEPT``, for twice the window)."""
    key = PROBE_KEY + target
    value = json.dumps({"at": observation.at.isoformat(), "ok": observation.ok, "error": observation.error})
    pipe = get_redis().pipeline()
    pipe.lpush(key, value)
    pipe.ltrim(key, 0, PROBES_KEPT - 1)
    pipe.expire(key, int(_window().total_seconds() * 2) + 60)
    pipe.execute()


def probes_read(targets: Iterable[str]) -> dict[str, list[Observation]]:
    """Each target's recorded probes, newest first (one round trip). Without Redis, none: the health
    is then judged from the rows alone, so the pages that show it still answer (after Redis's
    socket timeout) instead of failing with it."""
    names = list(targets)
    pipe = get_redis().pipeline()
    for name in names:
        pipe.lrange(PROBE_KEY + name, 0, PROBES_KEPT - 1)
    try:
        answers = pipe.execute()
    except redis.RedisError as error:
        logger.warning("health.probes_unreadable", error=str(error))
        return {name: [] for name in names}
    found: dict[str, list[Observation]] = {}
    for name, raw in zip(names, answers, strict=True):
        found[name] = [
            Observation(datetime.fromisoformat(item["at"]), bool(item["ok"]), item.get("error", ""))
            for item in (json.loads(entry) for entry in raw)
        ]
    return found


def probes_forget() -> None:
    """Forget every probe record (operators, tests)."""
    redis = get_redis()
    keys = list(redis.scan_iter(PROBE_KEY + "*"))
    if keys:
        redis.delete(*keys)


# --- Upstreams ------------------------------------------------------------------------------------


def _request_error(outcome: str, http_status: int | None) -> str:
    label = UpstreamOutcome(outcome).label
    return f"HTTP {http_status}: {label}" if http_status else label


def upstream_names() -> list[str]:
    """Every upstream CortexWeb sends to (the dashboard's list: arXiv, Wikidata, each MCP connector)."""
    from apps.dashboard.selectors import known_upstreams

    return sorted(known_upstreams())


def upstreams_health(*, names: Iterable[str] | None = None, now: datetime | None = None) -> list[Health]:
    """Each upstream's health, by name; those named plus any seen in the window."""
    now = now or timezone.now()
    since = now - _window()
    rows = (
        UpstreamRequest.objects.filter(created_at__gt=since, created_at__lte=now)
        .exclude(outcome=UpstreamOutcome.REFUSED)
        .values_list("upstream", "outcome", "http_status", "created_at")
    )
    observed: dict[str, list[Observation]] = {
        name: [] for name in (names if names is not None else upstream_names())
    }
    for upstream, outcome, http_status, at in rows:
        ok = outcome in REQUEST_OK
        observed.setdefault(upstream, []).append(
            Observation(at, ok, "" if ok else _request_error(outcome, http_status))
        )
    probes = probes_read(f"upstream:{name}" for name in observed)
    before = _before_window(
        UpstreamRequest.objects.filter(upstream__in=list(observed)), "upstream", ok=REQUEST_OK,
        failed=REQUEST_FAILED, status_field="outcome", since=since,
    )  # fmt: skip
    result = []
    for name, observations in sorted(observed.items()):
        health = _assessed("upstream", name, observations, before.get(name, {}))
        health = _probe_detail(health, probes[f"upstream:{name}"], since)
        if health.state in (State.DOWN, State.DEGRADED) and health.since is None:
            rows_of = UpstreamRequest.objects.filter(upstream=name)
            health = replace(
                health, since=_streak_start(rows_of, "outcome", REQUEST_FAILED, health.last_ok_at)
            )
        result.append(health)
    return result


def _before_window(
    queryset: Any,
    key: str,
    *,
    ok: tuple[str, ...],
    failed: tuple[str, ...],
    status_field: str,
    since: datetime,
) -> dict[str, dict[str, datetime | None]]:
    """Per target, the newest success and failure in the ``HISTORY`` before the window (one query)."""
    return {
        row[key]: {"ok": row["last_ok"], "failed": row["last_failed"]}
        for row in queryset.filter(created_at__gt=since - HISTORY, created_at__lte=since)
        .values(key)
        .annotate(
            last_ok=Max("created_at", filter=_in(status_field, ok)),
            last_failed=Max("created_at", filter=_in(status_field, failed)),
        )
        .order_by()
    }


def _in(status_field: str, values: tuple[str, ...]) -> Q:
    return Q(**{f"{status_field}__in": list(values)})


def _assessed(
    kind: str,
    target: str,
    observations: list[Observation],
    before: dict[str, datetime | None],
) -> Health:
    return assess(
        kind=kind,
        target=target,
        observations=observations,
        last_ok_before=before.get("ok"),
        last_failure_before=before.get("failed"),
    )


def _streak_start(
    queryset: Any, status_field: str, failed: tuple[str, ...], last_ok_at: datetime | None
) -> Any:
    """The first failure after the last success, within ``HISTORY``: an outage older than that is
    said to have lasted since then (the rows are read by time, never the whole table)."""
    failures = queryset.filter(_in(status_field, failed), created_at__gt=timezone.now() - HISTORY)
    if last_ok_at is not None:
        failures = failures.filter(created_at__gt=last_ok_at)
    return failures.aggregate(first=Min("created_at"))["first"]


def _probe_detail(health: Health, probes: list[Observation], since: datetime) -> Health:
    """A probe's error text is more telling than the row's HTTP status: shown when it is the newest."""
    if not probes:
        return health
    newest = probes[0]
    failed = [p for p in probes if not p.ok and p.at > since]
    if failed and (health.last_error_at is None or failed[0].at >= health.last_error_at):
        health = replace(health, last_error=failed[0].error, last_error_at=failed[0].at)
    return replace(health, last_probe_at=newest.at)


# --- Connectors -----------------------------------------------------------------------------------


def connectors_health(
    *, now: datetime | None = None, upstreams: list[Health] | None = None
) -> dict[str, Health]:
    """Each registered connector's health (slug → health), its upstreams' health inside.

    A connector's own state comes from its tool calls and endpoint probes; then its upstreams: all
    of them down makes it down, any of them failing makes an up (or quiet) connector degraded.
    """
    now = now or timezone.now()
    since = now - _window()
    slugs = list(Connector.objects.order_by("position", "slug").values_list("slug", flat=True))
    observed: dict[str, list[Observation]] = {slug: [] for slug in slugs}
    rows = ToolCall.objects.filter(
        connector_slug__in=slugs, created_at__gt=since, created_at__lte=now, status__in=CALL_OK + CALL_FAILED
    ).values_list("connector_slug", "status", "error", "created_at")
    for slug, status, error, at in rows:
        ok = status in CALL_OK
        observed[slug].append(Observation(at, ok, "" if ok else error))
    probes = probes_read(f"connector:{slug}" for slug in slugs)
    for slug in slugs:
        observed[slug].extend(p for p in probes[f"connector:{slug}"] if since < p.at <= now)
    before = _before_window(
        ToolCall.objects.filter(connector_slug__in=slugs),
        "connector_slug",
        ok=CALL_OK,
        failed=CALL_FAILED,
        status_field="status",
        since=since,
    )
    if upstreams is None:
        upstreams = upstreams_health(now=now)
    by_upstream = {health.target: health for health in upstreams}
    result = {}
    for slug in slugs:
        own = _assessed("connector", slug, observed[slug], before.get(slug, {}))
        if own.state in (State.DOWN, State.DEGRADED) and own.since is None:
            own = replace(own, since=_streak_start(ToolCall.objects.filter(connector_slug=slug), "status",
                                                   CALL_FAILED, own.last_ok_at))  # fmt: skip
        own_probes = probes[f"connector:{slug}"]
        if own_probes:
            own = replace(own, last_probe_at=own_probes[0].at)
        depends = tuple(by_upstream[name] for name in _connector_upstreams(slug) if name in by_upstream)
        result[slug] = _combined(own, depends)
    return result


def _connector_upstreams(slug: str) -> tuple[str, ...]:
    found = CONNECTOR_UPSTREAMS.get(slug)
    return found() if found is not None else ()


def _combined(own: Health, upstreams: tuple[Health, ...]) -> Health:
    """The connector's own health, made worse by its upstreams' (their last error when it is newer)."""
    state = own.state
    failing = [u for u in upstreams if u.state in (State.DOWN, State.DEGRADED)]
    if upstreams and all(u.state == State.DOWN for u in upstreams):
        state = State.DOWN
    elif failing and SEVERITY[state] < SEVERITY[State.DEGRADED]:
        state = State.DEGRADED
    combined = replace(own, state=state, upstreams=upstreams)
    newest = max(failing, key=lambda u: u.last_error_at or datetime.min.replace(tzinfo=UTC), default=None)
    if (
        newest is not None
        and newest.last_error_at
        and (own.last_error_at is None or newest.last_error_at > own.last_error_at)
    ):
        combined = replace(combined, last_error=f"{newest.target}: {newest.last_error}",
                           last_error_at=newest.last_error_at)  # fmt: skip
    if state != own.state or (state in (State.DOWN, State.DEGRADED) and combined.since is None):
        starts = [u.since for u in failing if u.since is not None]
        if own.state in (State.DOWN, State.DEGRADED) and own.since is not None:
            starts.append(own.since)
        combined = replace(combined, since=min(starts) if starts else own.since)
    return combined


# --- Probes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeOutcome:
    target: str
    outcome: str  # "ok", "failed", "skipped: busy" (no free slot), "skipped: active" (not idle)
    error: str = ""


def _idle(upstream: str, now: datetime) -> bool:
    interval = timedelta(seconds=settings.CORTEX_HEALTH_PROBE_SECONDS)
    return not UpstreamRequest.objects.filter(upstream=upstream, created_at__gt=now - interval).exists()


def _probe_deadline() -> float:
    return time.monotonic() + settings.CORTEX_HEALTH_PROBE_TIMEOUT_SECONDS


def _probe_wikidata_api() -> None:
    from apps.wikidata import clients

    clients.action_api_client(deadline=_probe_deadline()).request(
        {"action": "wbgetentities", "ids": "Q42", "props": "info"}
    )


def _probe_wikidata_vectors() -> None:
    from apps.wikidata import clients

    clients.vector_db_client(deadline=_probe_deadline()).search_items("Q42", k=1)


def _probe_wikidata_sparql() -> None:
    from apps.wikidata import clients

    clients.sparql_client(deadline=_probe_deadline()).select(
        "SELECT ?o WHERE { <http://www.wikidata.org/entity/Q42> "
        "<http://www.wikidata.org/prop/direct/P31> ?o } LIMIT 1"
    )


def _upstream_probes() -> dict[str, Callable[[], None]]:
    """One cheap request per native upstream, through its client's gate (limiter, record, lock).
    arXiv is not probed: its terms allow one request every 3 s and its traffic is search runs."""
    from apps.wikidata import action_api, sparql, vectordb

    return {
        action_api.UPSTREAM: _probe_wikidata_api,
        vectordb.UPSTREAM: _probe_wikidata_vectors,
        sparql.UPSTREAM: _probe_wikidata_sparql,
    }


def _probe_connector(connector: Connector) -> None:
    """``tools/list`` of an MCP connector, under its limiter without waiting, recorded as its request."""
    from apps.connectors import gateway, mcp_client
    from apps.core.services import upstream_request_recorded

    limiter = gateway._connector_limiter(connector)
    upstream, budget = gateway.connector_upstream(connector)
    with upstream_request_recorded(upstream=upstream, budget_per_hour=budget):
        if limiter is not None:
            limiter.check()
        mcp_client.list_tools(connector)


def _probe(target: str, probe: Callable[[], None]) -> ProbeOutcome:
    try:
        probe()
    except RateLimited:
        return ProbeOutcome(target, "skipped: busy")
    except ApplicationError as error:
        probe_record(target, Observation(timezone.now(), False, error.message))
        return ProbeOutcome(target, "failed", error.message)
    except Exception as error:  # noqa: BLE001 - a probe reports every failure as the target's, never crashes
        message = f"{type(error).__name__}: {error}"
        probe_record(target, Observation(timezone.now(), False, message))
        return ProbeOutcome(target, "failed", message)
    probe_record(target, Observation(timezone.now(), True))
    return ProbeOutcome(target, "ok")


def health_probe(*, now: datetime | None = None) -> list[ProbeOutcome]:
    """Probe each enabled MCP connector and native upstream that was idle for a probe interval.

    Also stamps the worker heartbeat (``WORKER_HEARTBEAT_KEY``): this runs on a worker every
    interval, so a stale stamp means no worker (or no beat) is alive.
    """
    from apps.connectors import gateway

    now = now or timezone.now()
    get_redis().set(WORKER_HEARTBEAT_KEY, str(time.time()))
    outcomes = []
    switched_off = set(connectors_switched_off())
    connectors = Connector.objects.filter(transport=Transport.MCP, enabled=True).exclude(
        slug__in=switched_off
    )
    for connector in connectors.order_by("position", "slug"):
        upstream, _ = gateway.connector_upstream(connector)
        target = f"connector:{connector.slug}"
        if not _idle(upstream, now):
            outcomes.append(ProbeOutcome(target, "skipped: active"))
            continue
        outcomes.append(_probe(target, functools.partial(_probe_connector, connector)))
    for upstream, probe in _upstream_probes().items():
        target = f"upstream:{upstream}"
        if not _idle(upstream, now):
            outcomes.append(ProbeOutcome(target, "skipped: active"))
            continue
        outcomes.append(_probe(target, probe))
    logger.info("health.probed", outcomes=[(o.target, o.outcome) for o in outcomes])
    return outcomes


def worker_heartbeat_age(now: float | None = None) -> float:
    """Seconds since a worker last ran the probe task (infinity: never)."""
    raw = get_redis().get(WORKER_HEARTBEAT_KEY)
    if raw is None:
        return float("inf")
    return max(0.0, (now if now is not None else time.time()) - float(raw))


# --- Summary and metrics --------------------------------------------------------------------------


@dataclass(frozen=True)
class HealthReport:
    connectors: dict[str, Health]
    upstreams: list[Health]

    def failing(self) -> Iterator[Health]:
        for health in [*self.connectors.values(), *self.upstreams]:
            if health.state in (State.DOWN, State.DEGRADED):
                yield health

    def down(self) -> list[Health]:
        return [health for health in self.failing() if health.state == State.DOWN]


def health_report(*, now: datetime | None = None) -> HealthReport:
    upstreams = upstreams_health(now=now)
    return HealthReport(connectors=connectors_health(now=now, upstreams=upstreams), upstreams=upstreams)


def readiness_detail() -> dict[str, Any]:
    """``/readyz``'s ``upstreams`` detail: each connector's and upstream's state. Informative only —
    readiness is about this service, and an upstream being down does not make it unready."""
    report = health_report()
    return {
        "connectors": {slug: health.as_dict() for slug, health in report.connectors.items()},
        "upstreams": {health.target: health.as_dict() for health in report.upstreams},
    }


def health_metrics() -> Iterator[GaugeMetricFamily]:
    """Scrape-time gauges: ``cortex_health_state`` (1 for the current state of each target, 0 for the
    others) and ``cortex_health_failure_ratio`` over the window (``deploy/prometheus/alerts.yml``)."""
    report = health_report()
    state = GaugeMetricFamily(
        "cortex_health_state",
        "Health of each connector and upstream: 1 for its current state (up, degraded, down, unknown).",
        labels=["kind", "target", "state"],
    )
    ratio = GaugeMetricFamily(
        "cortex_health_failure_ratio",
        "Share of a connector's or upstream's calls and probes that failed in the health window.",
        labels=["kind", "target"],
    )
    for health in [*report.connectors.values(), *report.upstreams]:
        for candidate in State:
            state.add_metric(
                [health.kind, health.target, candidate.value], 1.0 if health.state == candidate else 0.0
            )
        ratio.add_metric([health.kind, health.target], health.failure_ratio)
    yield state
    yield ratio
