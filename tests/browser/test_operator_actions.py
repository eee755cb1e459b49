"""Sync and "Try this tool" in Chromium at 1280 and 390 px (#26 item 5): an operator syncs the wikidata
connector after the upstream renamed a tool and sees the rename; tries wikidata.sparql, gets a field
error for an empty query, a dry run, then the call and its ToolCall link, all swapped in by HTMX. No
console error (CSP refusals included), no horizontal page scroll, no serious axe violation.

The upstream is the fake Wikidata MCP server (tests/connectors/mcp_server.py).
"""

from __future__ import annotations

import pytest

from apps.connectors.models import ToolCall
from tests.browser.helpers import HEIGHT, SERIOUS, axe_violations, log_in, screenshot_dir
from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401
from tests.connectors.mcp_server import mcp_servers_fixture, wikidata_mcp_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PAGE_OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.mark.parametrize("width", [1280, 390])
def test_sync_and_try_this_tool_in_a_browser(wikidata_mcp, live_server, page, width) -> None:
    from playwright.sync_api import expect  # as the page fixture: only once Chromium is there

    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url} {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_viewport_size({"width": width, "height": HEIGHT})
    log_in(live_server, page, username=f"operator-{width}", next_path="/connectors/wikidata")
    shots = screenshot_dir()

    # Sync: the first one records the upstream; after a rename the second shows it as drift.
    page.click("#connector-sync button[type=submit]")
    expect(page.locator("#connector-sync .sync-result")).to_be_visible()
    wikidata_mcp.rename_tool("execute_sparql", "run_sparql")
    page.click("#connector-sync button[type=submit]")
    expect(page.locator("#connector-sync .sync-renamed")).to_have_text("wikidata.sparql → run_sparql")
    assert page.url == f"{live_server.url}/connectors/wikidata"  # swapped in place, not a new page
    assert page.evaluate(PAGE_OVERFLOW) == 0
    assert axe_violations(page, impacts=SERIOUS) == []
    page.screenshot(path=str(shots / f"connector-sync-{width}.png"), full_page=True)

    # Try this tool: an empty required field is a field error; then a dry run; then the call.
    page.goto(f"{live_server.url}/connectors/tools/wikidata.sparql")
    page.click("#tool-trial .trial-form button[type=submit]")
    expect(page.locator("#tool-trial .field-error")).to_have_text("This field is required.")
    page.fill("#id_arg-sparql", "SELECT 1")
    page.click("#tool-trial .trial-form button[type=submit]")
    expect(page.locator("#tool-trial .dry-run-upstream")).to_have_text("run_sparql")
    assert wikidata_mcp.calls == []
    assert axe_violations(page, impacts=SERIOUS) == []
    assert page.evaluate(PAGE_OVERFLOW) == 0
    page.screenshot(path=str(shots / f"tool-dry-run-{width}.png"), full_page=True)

    page.click("#tool-trial button[name=confirm]")
    link = page.locator("#tool-trial a.tool-call-link")
    expect(link).to_be_visible()
    call = ToolCall.objects.get()
    assert (call.upstream_name, call.status, call.transport) == ("run_sparql", "ok", "page")
    assert link.get_attribute("href") == f"/admin/connectors/toolcall/{call.pk}/change/"
    assert [name for name, _ in wikidata_mcp.calls] == ["run_sparql"]
    assert page.evaluate(PAGE_OVERFLOW) == 0
    assert axe_violations(page, impacts=SERIOUS) == []
    page.screenshot(path=str(shots / f"tool-called-{width}.png"), full_page=True)

    link.click()  # the recorded call in the admin
    page.wait_for_url(f"{live_server.url}/admin/connectors/toolcall/{call.pk}/change/")
    assert errors == []
