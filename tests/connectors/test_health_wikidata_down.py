"""Issue #26's acceptance for live health and alerts: Wikidata taken down (its replays answering 503),
one run of the beat's probe task on the real worker turns the connector ``down`` on the dashboard,
the connectors page and /readyz (which stays ready), and the CortexUpstreamDown rule fires on the
series recorded from /metrics."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from apps.connectors import health
from apps.core.redis import get_redis
from apps.dashboard.tasks import health_probe_task
from apps.wikidata import action_api, clients, sparql, vectordb
from tests.conftest import role_client
from tests.connectors.mcp_server import mcp_servers_fixture, wikidata_mcp_fixture  # noqa: F401
from tests.core.test_alert_rules import Recording, check, firing, rules
from tests.wikidata.replay_server import ReplayWikidata, Reply

pytestmark = pytest.mark.django_db(transaction=True)

WIKIDATA_UPSTREAMS = (action_api.UPSTREAM, vectordb.UPSTREAM, sparql.UPSTREAM)
UNAVAILABLE = Reply(status=503, body={"detail": "Service Unavailable"})


@pytest.fixture
def wikidata_down(wikidata_mcp, settings):
    """The Wikidata MCP server and the three Wikidata services all answer 503."""
    replay = ReplayWikidata().start()
    replay.configure(settings)
    settings.WIKIDATA_MAX_RETRIES = 0
    for path in ("/w/api.php", "/item/query/", "/sparql"):
        replay.script(path, *[UNAVAILABLE] * 10)
    wikidata_mcp.fail_status = 503
    for upstream in WIKIDATA_UPSTREAMS:
        clients.upstream_limiter(upstream).reset()
    health.probes_forget()
    get_redis().delete(health.WORKER_HEARTBEAT_KEY)
    yield replay
    replay.stop()
    health.probes_forget()


def _probe_once_on_the_worker() -> None:
    """Send the beat's task to the real worker and wait until it has stamped the heartbeat and
    recorded its last probe (the task keeps no result)."""
    health_probe_task.delay()
    deadline = time.monotonic() + 60
    redis = get_redis()
    while time.monotonic() < deadline:
        probed = health.probes_read([f"upstream:{name}" for name in WIKIDATA_UPSTREAMS])
        if redis.get(health.WORKER_HEARTBEAT_KEY) and all(probed.values()):
            return
        time.sleep(0.1)
    raise AssertionError("the probe task did not run within 60 s")


def test_wikidata_down_is_down_on_the_dashboard_after_one_probe_and_the_alert_fires(
    celery_worker, wikidata_down, tmp_path
) -> None:
    staff = role_client()
    recording = Recording()
    recording.scrape()  # before the probe: nothing is known about Wikidata
    before = staff.get("/").content.decode()
    assert 'id="health-connector-wikidata"' in before
    assert 'class="health-unknown" id="health-connector-wikidata"' in before

    _probe_once_on_the_worker()

    # Every probe failed, each with its own error.
    assert [request.path for request in wikidata_down.requests] == ["/w/api.php", "/item/query/", "/sparql"]
    assert health.probes_read(["connector:wikidata"])["connector:wikidata"][0].error == (
        "MCP server 'wikidata' answered HTTP 503."
    )

    page = staff.get("/").content.decode()
    assert 'class="health-down" id="health-connector-wikidata"' in page
    assert '<span class="badge health-badge health-down" data-health="down">down</span>' in page
    for upstream in WIKIDATA_UPSTREAMS:
        assert f'class="health-down" id="health-upstream-{upstream}"' in page
    assert 'class="health-unknown" id="health-connector-arxiv"' in page  # arXiv is not probed, not judged
    # The staff banner names the same condition as the rule.
    assert (
        '<li data-alert="CortexUpstreamDown"><strong>CortexUpstreamDown</strong>: '
        "Connector wikidata is down: " in page
    )

    catalogue = Client().get("/connectors").content.decode()
    assert '<span class="badge health-badge health-down" data-health="down">down</span>' in catalogue

    ready = Client().get("/readyz")
    assert ready.status_code == 200  # readiness is about CortexWeb; Wikidata is detail
    body = ready.json()
    assert body["status"] == "ready"
    wikidata = body["detail"]["upstreams"]["connectors"]["wikidata"]
    assert wikidata["state"] == "down"
    # The newest failure among the connector's own and its upstreams' (the SPARQL probe ran last).
    assert wikidata["lastError"] == (
        "wikidata-query-service: the Wikidata Query Service is busy or failing (HTTP 503); retry later"
    )
    assert wikidata["upstreams"] == dict.fromkeys(WIKIDATA_UPSTREAMS, "down")
    assert body["detail"]["upstreams"]["upstreams"][action_api.UPSTREAM]["lastError"].startswith(
        "the Wikidata Action API"
    )

    for _ in range(3):  # three more scrapes, a minute apart in the recording
        text = recording.scrape()
    assert 'cortex_health_state{kind="connector",state="down",target="wikidata"} 1.0' in text
    wikidata_down_labels = {"kind": "connector", "target": "wikidata"}
    assert wikidata_down_labels in firing(rules()["CortexUpstreamDown"], recording)
    assert firing(rules()["CortexUpstreamDown"], recording, at=120) == []  # down for 1 min: pending
    expected = sorted(
        [wikidata_down_labels, *({"kind": "upstream", "target": name} for name in WIKIDATA_UPSTREAMS),
         {"kind": "upstream", "target": "mcp:wikidata"}],
        key=lambda labels: sorted(labels.items()),
    )  # fmt: skip
    check(tmp_path, recording, "CortexUpstreamDown", expected)
