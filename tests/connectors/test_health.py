"""Live health (apps/connectors/health.py): the rule, what counts, since when, the probes and where
it is shown (the connectors page, the dashboard's panel and banner, /readyz)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.connectors import health
from apps.connectors.health import Observation, State
from apps.connectors.models import Connector, ToolCall, ToolCallStatus
from apps.core.models import UpstreamRequest
from apps.core.ratelimit import RateLimiter
from apps.core.redis import get_redis
from apps.dashboard import alerts
from apps.grounding.models import Verdict, Verification
from apps.wikidata import action_api, clients
from tests.conftest import role_client
from tests.wikidata.replay_server import ReplayWikidata, Reply

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def ok(minutes: float) -> Observation:
    return Observation(at(minutes), True)


def bad(minutes: float, error: str = "HTTP 503") -> Observation:
    return Observation(at(minutes), False, error)


# --- The rule -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("observations", "state"),
    [
        ([], State.UNKNOWN),
        ([ok(1), ok(2)], State.UP),
        ([bad(1)], State.DOWN),  # one probe that failed and nothing else: down
        ([ok(1), bad(2), bad(3), bad(4)], State.DOWN),  # three failures in a row
        ([ok(1), bad(2), bad(3)], State.DEGRADED),  # two in a row after a success
        ([ok(1), ok(2), ok(3), ok(4), bad(5)], State.DEGRADED),  # the newest failed
        ([bad(1), ok(2), ok(3), ok(4), ok(5)], State.DEGRADED),  # 20 % of the window failed
        ([bad(1), ok(2), ok(3), ok(4), ok(5), ok(6)], State.UP),  # 17 %, and the newest answered
    ],
)
def test_the_state_follows_the_rule(observations, state) -> None:
    assert health.state_of(observations) == state


def test_down_since_the_first_failure_after_the_last_success_with_the_newest_error() -> None:
    found = health.assess(
        kind="upstream",
        target="u",
        observations=[
            bad(5, "HTTP 503: first"),
            ok(1),
            bad(2, "old"),
            ok(4),
            bad(6),
            bad(7, "HTTP 502: newest"),
        ],
    )
    assert (found.state, found.since, found.last_error, found.last_error_at, found.last_ok_at) == (
        State.DOWN, at(5), "HTTP 502: newest", at(7), at(4),
    )  # fmt: skip
    assert (found.observed, found.failed) == (6, 4)


def test_a_streak_that_began_before_the_window_is_left_to_the_caller() -> None:
    # Failures only in the window, and the newest failure before it is newer than the newest success.
    found = health.assess(
        kind="upstream", target="u", observations=[bad(20)], last_ok_before=at(1), last_failure_before=at(3),
        streak_start=at(2),
    )  # fmt: skip
    assert (found.state, found.since, found.last_ok_at) == (State.DOWN, at(2), at(1))
    fresh = health.assess(kind="upstream", target="u", observations=[bad(20)], last_ok_before=at(1))
    assert fresh.since == at(20)


def test_up_since_the_recovery() -> None:
    found = health.assess(
        kind="upstream", target="u", observations=[bad(1), ok(2), ok(3), ok(4), ok(5), ok(6)]
    )
    assert (found.state, found.since) == (State.UP, at(2))


# --- From the rows --------------------------------------------------------------------------------


def _request(upstream: str, outcome: str, minutes_ago: float, status: int | None = None) -> None:
    row = UpstreamRequest.objects.create(
        upstream=upstream, outcome=outcome, http_status=status, duration_ms=1.0
    )
    UpstreamRequest.objects.filter(pk=row.pk).update(
        created_at=timezone.now() - timedelta(minutes=minutes_ago)
    )


def _call(slug: str, status: str, minutes_ago: float, error: str = "") -> None:
    row = ToolCall.objects.create(
        tool_name="t.x", requested_name="t.x", upstream_name="x", connector_slug=slug, status=status,
        duration_ms=1.0, error=error,
    )  # fmt: skip
    ToolCall.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))


@pytest.mark.django_db
def test_an_upstream_is_judged_by_its_requests_and_our_refusals_do_not_count() -> None:
    health.probes_forget()
    _request("u-flaky", "ok", 120)  # the last success, two hours ago
    _request("u-flaky", "failed", 90, 503)  # the outage began here, before the window
    _request("u-flaky", "failed", 10, 503)
    _request("u-flaky", "throttled", 5, 429)
    _request("u-flaky", "refused", 1)  # our limiter: says nothing about the upstream
    _request("u-quiet", "refused", 1)
    found = {h.target: h for h in health.upstreams_health(names=["u-flaky", "u-quiet", "u-none"])}
    flaky = found["u-flaky"]
    assert (flaky.state, flaky.observed, flaky.failed) == (State.DOWN, 2, 2)
    assert flaky.last_error == "HTTP 429: Throttled by the upstream (HTTP 429)"
    assert round((timezone.now() - flaky.since).total_seconds() / 60) == 90
    assert round((timezone.now() - flaky.last_ok_at).total_seconds() / 60) == 120
    assert found["u-quiet"].state == State.UNKNOWN
    assert found["u-none"].state == State.UNKNOWN


@pytest.mark.django_db
def test_a_connector_is_judged_by_its_calls_and_made_worse_by_its_upstreams(default_registry) -> None:
    health.probes_forget()
    _call("wikidata", ToolCallStatus.OK, 8)
    _call("wikidata", ToolCallStatus.INVALID_ARGUMENTS, 6, "bad qid")  # the caller's mistake
    _call("wikidata", ToolCallStatus.DENIED, 6)
    _call("wikidata", ToolCallStatus.RATE_LIMITED, 6)
    _call("wikidata", ToolCallStatus.OK, 4)
    _call("arxiv", ToolCallStatus.UPSTREAM_ERROR, 7, "arXiv answered HTTP 503")
    _call("arxiv", ToolCallStatus.UPSTREAM_ERROR, 3, "arXiv answered HTTP 500")
    _request(action_api.UPSTREAM, "failed", 2, 503)  # one of wikidata's three upstreams is down
    report = health.health_report()
    wikidata, arxiv, perplexity = (report.connectors[s] for s in ("wikidata", "arxiv", "perplexity"))
    assert (wikidata.state, wikidata.observed, wikidata.failed) == (State.DEGRADED, 2, 0)
    assert wikidata.last_error == "wikidata-action-api: HTTP 503: Failed (other upstream error)"
    assert [(u.target, u.state) for u in wikidata.upstreams] == [
        (action_api.UPSTREAM, State.DOWN), ("wikidata-vectordb", State.UNKNOWN),
        ("wikidata-query-service", State.UNKNOWN),
    ]  # fmt: skip
    assert (arxiv.state, arxiv.failed, arxiv.last_error) == (State.DOWN, 2, "arXiv answered HTTP 500")
    assert round((timezone.now() - arxiv.since).total_seconds() / 60) == 7
    assert perplexity.state == State.UNKNOWN
    assert [h.target for h in report.down()] == ["arxiv", action_api.UPSTREAM]


# --- Probes ---------------------------------------------------------------------------------------


@pytest.fixture
def replay(settings):
    server = ReplayWikidata().start()
    server.configure(settings)
    settings.WIKIDATA_MAX_RETRIES = 0
    for upstream in health._upstream_probes():
        clients.upstream_limiter(upstream).reset()
    health.probes_forget()
    yield server
    server.stop()
    health.probes_forget()


@pytest.mark.django_db
def test_a_probe_asks_each_idle_upstream_once_and_stamps_the_heartbeat(replay, settings, monkeypatch) -> None:
    monkeypatch.setenv("WIKIDATA_MCP_URL", "http://127.0.0.1:9/mcp")  # a closed port: the MCP server is down
    Connector.objects.create(
        slug="wikidata", name="Wikidata", version="1", transport="mcp", endpoint="https://wd-mcp.wmcloud.org/mcp/",
        endpoint_env="WIKIDATA_MCP_URL",
    )  # fmt: skip
    RateLimiter("connector:wikidata", interval=1.0).reset()
    replay.script("/sparql", Reply(status=503, body={"detail": "Service Unavailable"}))
    _request("wikidata-vectordb", "ok", 0.5)  # busy with real traffic: not idle, not probed
    get_redis().delete(health.WORKER_HEARTBEAT_KEY)

    outcomes = health.health_probe()

    assert [(o.target, o.outcome) for o in outcomes] == [
        ("connector:wikidata", "failed"),
        ("upstream:wikidata-action-api", "ok"),
        ("upstream:wikidata-vectordb", "skipped: active"),
        ("upstream:wikidata-query-service", "failed"),
    ]
    assert outcomes[3].error == "the Wikidata Query Service is busy or failing (HTTP 503); retry later"
    assert [(r.path, r.params.get("action")) for r in replay.requests] == [
        ("/w/api.php", "wbgetentities"),
        ("/sparql", None),
    ]
    # Each probe spent its upstream's budget like a call and left its request row.
    assert sorted(UpstreamRequest.objects.values_list("upstream", "outcome")) == [
        ("mcp:wikidata", "failed"), ("wikidata-action-api", "ok"), ("wikidata-query-service", "failed"),
        ("wikidata-vectordb", "ok"),
    ]  # fmt: skip
    assert health.worker_heartbeat_age() < 5
    found = {h.target: h for h in health.upstreams_health(names=["wikidata-query-service"])}
    assert found["wikidata-query-service"].last_error == (
        "the Wikidata Query Service is busy or failing (HTTP 503); retry later"
    )


@pytest.mark.django_db
def test_a_probe_never_waits_for_a_busy_limiter(replay, default_registry, monkeypatch) -> None:
    monkeypatch.setenv("WIKIDATA_MCP_URL", "http://127.0.0.1:9/mcp")
    limiter = RateLimiter("connector:wikidata", interval=60.0)
    limiter.reset()
    limiter.check()  # the one slot of the minute is taken
    outcomes = {o.target: o.outcome for o in health.health_probe()}
    assert outcomes["connector:wikidata"] == "skipped: busy"
    assert health.probes_read(["connector:wikidata"]) == {"connector:wikidata": []}
    limiter.reset()


@pytest.mark.django_db
def test_an_error_answer_of_a_wikidata_service_is_recorded_as_a_failed_request(replay) -> None:
    """Before, the gate closed before the answer was judged, so a 503 was recorded as a request that went
    well: the budget panel counted no failure and the health would have read "up"."""
    replay.script("/w/api.php", Reply(status=503, body={"detail": "Service Unavailable"}))
    with pytest.raises(Exception, match="HTTP 503"):
        clients.action_api_client().request({"action": "wbgetentities", "ids": "Q42", "props": "info"})
    assert list(UpstreamRequest.objects.values_list("upstream", "outcome", "http_status")) == [
        (action_api.UPSTREAM, "failed", 503)
    ]


# --- Where it is shown ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_connectors_page_shows_each_connectors_health(default_registry) -> None:
    health.probes_forget()
    _call("arxiv", ToolCallStatus.UPSTREAM_ERROR, 3, "arXiv answered <b>HTTP 503</b>")
    page = Client().get("/connectors").content.decode()
    arxiv = page[page.index('id="connector-arxiv"') :]
    arxiv = arxiv[: arxiv.index("</article>")]
    assert '<span class="badge health-badge health-down" data-health="down">down</span>' in arxiv
    assert "(1 of 1 failed)" in arxiv
    assert '<span class="error-text">arXiv answered &lt;b&gt;HTTP 503&lt;/b&gt;</span>' in arxiv  # escaped
    assert 'data-health="unknown">no recent calls</span>' in page  # perplexity: nothing to judge by


@pytest.mark.django_db
def test_readyz_stays_ready_with_an_upstream_down_and_names_it_in_detail(
    default_registry, monkeypatch
) -> None:
    from apps.core import selectors

    monkeypatch.setattr(selectors, "_check_celery", lambda: {"worker": "w"})  # this test is not about workers
    health.probes_forget()
    _call("arxiv", ToolCallStatus.UPSTREAM_ERROR, 3, "arXiv answered HTTP 503")
    response = Client().get("/readyz")
    body = response.json()
    assert response.status_code == 200
    assert (body["status"], body["failed"]) == ("ready", [])
    arxiv = body["detail"]["upstreams"]["connectors"]["arxiv"]
    assert {k: arxiv[k] for k in ("state", "observed", "failed", "lastError")} == {
        "state": "down", "observed": 1, "failed": 1, "lastError": "arXiv answered HTTP 503",
    }  # fmt: skip
    assert arxiv["upstreams"] == {"arxiv": "unknown"}


@pytest.mark.django_db
def test_the_staff_banner_lists_the_alert_conditions_that_hold(default_registry, settings) -> None:
    health.probes_forget()
    get_redis().set(health.WORKER_HEARTBEAT_KEY, "0")  # a worker last seen in 1970
    waiting = Verification.objects.create(
        claim="c", verdict=Verdict.UNVERIFIED, confidence=0.4, latency_ms=1.0
    )
    Verification.objects.filter(pk=waiting.pk).update(created_at=timezone.now() - timedelta(hours=30))
    for _ in range(11):
        _request("arxiv", "refused", 2)
    for minutes in (1, 2, 3, 4, 5):
        _request("wikidata-vectordb", "failed", minutes, 502)
    page = role_client().get("/").content.decode()
    banner = page[page.index('<div class="alert-banner"') :]
    banner = banner[: banner.index("</div>")]
    assert [line.split("</strong>")[0] for line in banner.split('<strong>')[1:]] == [
        "CortexUpstreamDown", "CortexUpstreamErrorRate", "CortexReviewQueueStale",
        "CortexWorkerSilent", "CortexRateLimitRefusals",
    ]  # fmt: skip
    assert (
        "Connector wikidata is down: wikidata-vectordb: HTTP 502: Failed (other upstream error)" not in banner
    )
    assert "Upstream wikidata-vectordb is down: HTTP 502: Failed (other upstream error)" in banner
    assert "wikidata-vectordb failed 5 of 5 requests in the last 10 minutes." in banner
    assert "The oldest of 1 verifications waiting for review has waited 30 h 0 min." in banner
    assert "The rate limiter refused 11 requests to arxiv in 15 minutes." in banner
    # Nothing holds: no banner. Anonymous visitors never see one.
    assert "alert-banner" not in Client().get("/").content.decode()
    get_redis().set(health.WORKER_HEARTBEAT_KEY, str(timezone.now().timestamp()))
    UpstreamRequest.objects.all().delete()
    Verification.objects.all().delete()
    assert alerts.alerts_firing() == []
    assert "alert-banner" not in role_client(username="other").get("/").content.decode()


@pytest.mark.django_db
def test_without_redis_the_health_is_judged_from_the_rows_alone(default_registry, monkeypatch) -> None:
    """The probe records live in Redis; the connectors page must not fail with it (a frozen Redis is
    tests/core/test_dependency_faults.py's)."""
    import redis

    _call("arxiv", ToolCallStatus.UPSTREAM_ERROR, 3, "arXiv answered HTTP 503")
    nowhere = redis.Redis(host="127.0.0.1", port=9, socket_connect_timeout=0.5, socket_timeout=0.5)
    monkeypatch.setattr(health, "get_redis", lambda: nowhere)
    assert health.probes_read(["connector:arxiv"]) == {"connector:arxiv": []}
    response = Client().get("/connectors")
    assert response.status_code == 200
    assert 'data-health="down">down</span>' in response.content.decode()
