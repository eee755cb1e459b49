"""The home page as anonymous, as a signed-in non-staff user and as staff; the panels' HTMX
fragments; escaping; the favicon."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.connectors.models import ToolCall
from apps.dashboard import selectors
from apps.dashboard.panels import PANELS
from tests.conftest import make_user, role_client
from tests.dashboard.conftest import NOW

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_get_the_description_and_a_sign_in_link(history) -> None:
    response = Client().get("/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "grounds AI agents in knowledge they can verify" in page
    assert 'href="/facts"' in page and 'href="/v1/docs"' in page
    assert 'href="/admin/login/?next=/"' in page
    assert "dash-panel" not in page and "wiki-mcp" not in page


def test_signed_in_users_who_are_not_staff_see_no_dashboard(history) -> None:
    client = Client()
    client.force_login(make_user("visitor", is_staff=False))
    page = client.get("/").content.decode()
    assert "The dashboard is for staff" in page and "dash-panel" not in page


def test_staff_see_every_panel_with_its_chart_and_table(
    history, django_assert_max_num_queries, monkeypatch
) -> None:
    monkeypatch.setattr(selectors, "_now", lambda now: NOW)  # the history's "now"
    client = role_client()
    # The session and user (2), then the panels' selectors: connectors 3 (health, the tools awaiting
    # approval, the latest drifted syncs), upstream budget 2 (the
    # hour's requests, the MCP connectors), tool calls 5 (the roll-up's watermark, its slots, its
    # latency window, the calls after it per hour and per tool), fact runs 1, verdicts 2, errors 5
    # (the watermark, tool calls rolled up and not, fact runs, arXiv runs); live health 6 (the
    # connectors, their window's calls and the newest before it; the MCP connectors, the upstreams'
    # window's requests and the newest before it); the staff banner 2 (the upstreams' requests of the
    # last 15 minutes, the review queue): it judges the health the panel read.
    with django_assert_max_num_queries(28):
        response = client.get("/")
    page = response.content.decode()
    for slug in PANELS:
        assert f'id="panel-{slug}"' in page
        assert f'hx-get="/dashboard/{slug}"' in page
    assert page.count('role="img"') == 7  # tool calls draws two: calls per hour and latency per tool
    assert page.count("<table") == 8  # and two tables: its hours and its tools; connectors two: health, drift
    assert 'id="health-connector-wiki-mcp"' in page and 'id="health-upstream-arxiv"' in page
    assert "arxiv 3 / 1,200" in page
    assert "no MCP server &lt;b&gt;here&lt;/b&gt;" in page  # escaped


def test_a_panel_answers_its_fragment_to_htmx_and_a_page_otherwise(history) -> None:
    client = role_client()
    fragment = client.get("/dashboard/connectors", headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    body = fragment.content.decode()
    assert body.lstrip().startswith("<section") and "<html" not in body
    assert "Tools per connector by drift state: wiki-mcp 2 drifted; arxiv 1 tools." in body
    page = client.get("/dashboard/connectors")
    assert "<html" in page.content.decode() and 'id="panel-connectors"' in page.content.decode()
    assert client.get("/dashboard/nope").status_code == 404


def test_panels_need_staff(history) -> None:
    anonymous = Client().get("/dashboard/tool-calls", headers={"HX-Request": "true"})
    assert anonymous.status_code == 204 and anonymous["HX-Redirect"].startswith("/admin/login/")
    client = Client()
    client.force_login(make_user("visitor", is_staff=False))
    assert client.get("/dashboard/tool-calls").status_code == 403


def test_tool_names_are_escaped_in_charts_and_tables(db) -> None:
    ToolCall.objects.create(
        tool_name='x"><script>alert(1)</script>', requested_name="x", upstream_name="x",
        connector_slug="c", status="ok", duration_ms=5.0,
    )  # fmt: skip
    body = role_client().get("/dashboard/tool-calls", headers={"HX-Request": "true"}).content.decode()
    assert "<script>alert(1)" not in body
    assert "x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_the_favicon_answers() -> None:
    response = Client().get("/favicon.ico")
    assert response.status_code == 302 and response["Location"] == "/static/favicon.ico"
