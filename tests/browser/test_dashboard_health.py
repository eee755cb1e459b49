"""The dashboard with one upstream down, in Chromium at 1280 px and 390 px: the connector's row and
the upstream's are red, the staff banner names the alert, no horizontal page scroll, no console
error, no serious axe violation. Its 1280 px screenshot is docs/images/dashboard-upstream-down.png."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.connectors import health
from apps.core.models import UpstreamRequest
from apps.core.redis import get_redis
from tests.browser.helpers import HEIGHT, SERIOUS, WIDTH, axe_violations, log_in, screenshot_dir
from tests.dashboard.conftest import history  # noqa: F401 - the seeded history fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_upstream_down_turns_its_rows_red_and_raises_the_banner(history, live_server, page) -> None:  # noqa: F811
    health.probes_forget()
    get_redis().set(health.WORKER_HEARTBEAT_KEY, str(timezone.now().timestamp()))
    for minutes in (9, 6, 3):  # arXiv answered 503 three times running, the last 3 minutes ago
        row = UpstreamRequest.objects.create(
            upstream="arxiv", outcome="failed", http_status=503, duration_ms=80
        )
        UpstreamRequest.objects.filter(pk=row.pk).update(
            created_at=timezone.now() - timedelta(minutes=minutes)
        )
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url} {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    log_in(live_server, page, username="health-admin", next_path="/")
    assert page.locator("#health-connector-arxiv.health-down").count() == 1
    assert page.locator("#health-upstream-arxiv.health-down .health-badge").inner_text() == "down"
    assert page.locator("#health-upstream-wikidata-vectordb .health-badge").inner_text() == "no recent calls"
    banner = page.locator(".alert-banner [data-alert=CortexUpstreamDown]")
    assert banner.all_inner_texts() == [
        "CortexUpstreamDown: Connector arxiv is down: arxiv: HTTP 503: Failed (other upstream error)",
        "CortexUpstreamDown: Upstream arxiv is down: HTTP 503: Failed (other upstream error)",
    ]
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert axe_violations(page, impacts=SERIOUS) == []
    page.screenshot(path=str(screenshot_dir() / "dashboard-upstream-down.png"), full_page=True)

    # At 390 px the health table wraps into a phone's width (the panel is 390 less the page's margins).
    page.set_viewport_size({"width": 390, "height": HEIGHT})
    page.reload()
    fits = page.evaluate(
        "(() => { const panel = document.querySelector('#panel-connectors'); panel.style.width = '340px';"
        " const table = document.querySelector('.health-table'); return table.scrollWidth <= 340; })()"
    )
    assert fits
    assert errors == [], errors
    health.probes_forget()
