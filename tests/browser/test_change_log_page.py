"""The change log in Chromium at 1280 and 390 px: a manifest import that changed a connector and two
tools is one change set whose fields read old → new; a filter swaps the results in by HTMX; no
horizontal page scroll, no console error (CSP included), no serious axe violation. The 1280 px
screenshot is the one in docs/images/change-log.png."""

from __future__ import annotations

import copy
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from auditlog.models import LogEntry

from apps.connectors.services import manifest_import
from tests.browser.helpers import HEIGHT, SERIOUS, WIDTH, axe_violations, log_in, screenshot_dir
from tests.connectors.conftest import DEFAULT_MANIFEST_PATH

pytestmark = pytest.mark.django_db(transaction=True)

WIDER_THAN_THE_SCREEN = """[...document.querySelectorAll('main *')]
    .filter(e => !e.closest('.table-scroll') && e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .map(e => e.tagName + '.' + e.className)"""


def _imports() -> str:
    """The default manifest, then an operator's edit of it: the edit's change set id."""
    manifest = json.loads(DEFAULT_MANIFEST_PATH.read_text(encoding="utf-8"))
    manifest_import(data=copy.deepcopy(manifest), actor="first start")
    wikidata = next(entry for entry in manifest["connectors"] if entry["id"] == "wikidata")
    wikidata["ttlSeconds"] = 900
    wikidata["rateLimit"] = {"intervalSeconds": 0.5, "burst": 2}
    tools = {tool["name"]: tool for tool in wikidata["remoteTools"]}
    tools["wikidata.sparql"]["description"] = "Execute read-only SPARQL queries on the Wikidata Query Service"
    tools["wikidata.sparql"]["aliases"] = ["execute_sparql", "wdqs"]
    tools["wikidata.get_claims"]["tags"] = ["claims", "wikidata"]
    manifest_import(data=manifest, actor="manage.py connectors import")
    return LogEntry.objects.order_by("-pk").values_list("cid", flat=True).first() or ""


def test_the_change_log_shows_a_manifest_import_as_one_change_set(live_server, page) -> None:
    change_set = _imports()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url} {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    log_in(live_server, page, username="change-admin", next_path="/changes")

    page.goto(f"{live_server.url}/changes?set={change_set}")
    section = page.locator("section.change-set")
    assert section.count() == 1
    assert "manage.py connectors import" in section.locator("h2").inner_text()
    assert "manifest import" in section.locator("h2").inner_text()
    assert section.locator("article.change-entry").count() == 3
    rows = {
        row.locator("th").inner_text(): (
            row.locator("td").nth(0).inner_text(),
            row.locator("td").nth(1).inner_text(),
        )
        for row in section.locator("table.change-diff tbody tr").all()
    }
    assert rows["ttl seconds"] == ("1800", "900")
    assert rows["rate limit burst"] == ("5", "2")
    assert rows["aliases"] == ("execute_sparql, sparql", "execute_sparql, wdqs")
    assert rows["tags"] == ("claims, wikidata, provenance", "claims, wikidata")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate(WIDER_THAN_THE_SCREEN) == []
    assert axe_violations(page, impacts=SERIOUS) == []
    page.screenshot(path=str(screenshot_dir() / "change-log.png"), full_page=True)

    # The "Who" filter swaps the results in place (HTMX) and pushes the address.
    page.goto(f"{live_server.url}/changes")
    assert page.locator("section.change-set").count() == 2
    page.select_option("#id_actor", "first start")
    # (Python-side waits: Playwright's string predicates are eval, which the page's CSP refuses.)
    from playwright.sync_api import expect  # as the page fixture: only once Chromium is there

    page.wait_for_url(lambda url: parse_qs(urlsplit(url).query).get("actor") == ["first start"])
    expect(page.locator("section.change-set")).to_have_count(1)
    assert page.locator("article.change-entry").count() == 9  # 3 connectors and 6 tools created

    # At 390 px nothing of the change log is wider than the screen (wide values scroll inside their
    # table); the site's navigation is the header's own concern (tests/browser/test_every_page.py).
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/changes?set={change_set}")
    assert page.evaluate(WIDER_THAN_THE_SCREEN) == []
    assert axe_violations(page, impacts=SERIOUS) == []
    assert errors == [], errors
