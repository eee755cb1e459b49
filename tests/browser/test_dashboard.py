"""The home dashboard in Chromium at 1280 px: with a seeded history every panel draws its chart
(SVG rectangles, nothing fetched from a CDN), the tables are there, HTMX refreshes a panel in
place, no console errors, no serious or critical axe violations; a screenshot for a person."""

from __future__ import annotations

import pytest

from apps.dashboard import selectors
from tests.browser.helpers import HEIGHT, SERIOUS, WIDTH, axe_violations, log_in, screenshot_dir
from tests.dashboard.conftest import NOW, history  # noqa: F401 - the seeded history fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_dashboard_draws_every_chart(history, live_server, page, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setattr(selectors, "_now", lambda now: NOW)  # the history's "now"
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url} {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

    page.goto(f"{live_server.url}/")
    assert "grounds AI agents" in page.inner_text("main")
    assert axe_violations(page, impacts=SERIOUS) == []

    log_in(live_server, page, username="dash-admin", next_path="/")
    for slug, drawn in (
        ("connectors", 6),  # wiki-mcp: in sync, schema changed, missing; arxiv: not synced (+ 2 tracks)
        ("upstreams", 4),  # two bars and their tracks
        ("tool-calls", 3 + 2 * 2),  # three busy hours' columns; two tools' p50 and tracks
        ("fact-runs", 4),
        ("verdicts", 3),
        ("errors", 10),  # five error types and their tracks
    ):
        panel = page.locator(f"#panel-{slug}")
        assert panel.locator("svg[role=img]").count() >= 1, slug
        assert panel.locator("svg rect").count() >= drawn, slug
        assert panel.locator("table").count() >= 1, slug
    # arxiv and wikidata-action-api had requests; mcp:wiki-mcp, the query service and the vector
    # database are listed quiet, with their budgets.
    assert page.locator("#panel-upstreams table tbody tr").count() == 5
    assert page.locator("#panel-errors table tbody tr").count() == 5

    # HTMX swaps a fresh panel in place: the 60 s refresh's request, sent here at once.
    page.evaluate("document.querySelector('#panel-verdicts').setAttribute('data-old', '1')")
    page.evaluate("htmx.ajax('GET', '/dashboard/verdicts', {target: '#panel-verdicts', swap: 'outerHTML'})")
    page.wait_for_function("!document.querySelector('#panel-verdicts').hasAttribute('data-old')")
    assert page.locator("#panel-verdicts svg rect").count() >= 3

    assert axe_violations(page, impacts=SERIOUS) == []
    page.screenshot(path=str(screenshot_dir() / "dashboard.png"), full_page=True)
    assert [url for url in requests if not url.startswith(live_server.url)] == []
    assert errors == [], errors
