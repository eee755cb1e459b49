"""The memory pages in Chromium at 1280 px: ask through HTMX (results swapped in, URL pushed), open a
memory, pin it in place; no console errors, no axe violations, and a screenshot of each page
(``CORTEX_SCREENSHOT_DIR``, default ``.cortex/screenshots``) for a person to look at."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.memory.models import Memory
from apps.memory.services import Scope, TellItem, memories_reinforce, memory_tell
from tests.browser.helpers import axe_violations, screenshot_dir

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def memories(make_token) -> dict[str, str]:
    """What two agents told: infrastructure facts (one superseded, one retrieved twice) and travel ones."""
    ops, _ = make_token("read", "write", name="ops-agent")
    travel, _ = make_token("read", "write", name="travel-agent")
    planner = Scope(token=ops, agent="planner", session="deploy-42")
    old = memory_tell(
        scope=planner,
        items=[TellItem(content="The staging database runs on Postgres 15 in Dublin.", domain="infra")],
    )[0]["id"]
    told = memory_tell(
        scope=planner,
        items=[
            TellItem(
                content="The staging database runs on Postgres 16 in Frankfurt, on the db-stg-2 host.",
                domain="infra",
                importance=0.9,
                metadata={"source": "runbook", "ticket": "OPS-1432"},
                ttl_seconds=20 * 86400,
                supersedes=uuid.UUID(old),
            ),
            TellItem(
                content="Deploys happen on Tuesdays after the stand-up.", domain="infra", type="long_term"
            ),
            TellItem(content="The on-call rota changes every Monday at 09:00 UTC.", domain="infra"),
        ],
    )
    memory_tell(
        scope=Scope(token=travel, agent="concierge"),
        items=[
            TellItem(content="Alice prefers window seats on long flights.", domain="travel", pinned=True),
            TellItem(
                content="Bob is allergic to peanuts; tell the airline.", domain="travel", importance=0.8
            ),
        ],
    )
    frankfurt = told[0]["id"]
    memories_reinforce(hits=[(frankfurt, 0.71), (frankfurt, 0.64)])
    Memory.objects.filter(pk=old).update(created_at=timezone.now() - timedelta(days=3))
    return {"frankfurt": frankfurt, "old": old}


def test_the_memory_pages_read_well_in_a_browser(memories, live_server, signed_in) -> None:
    page = signed_in
    errors: list[str] = []
    page.on(
        "console",
        lambda message: errors.append(page.url + " " + message.text) if message.type == "error" else None,
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    shots = screenshot_dir()

    page.goto(f"{live_server.url}/memories")
    page.evaluate("window.loadedOnce = true")  # survives only if the page is never reloaded
    assert page.locator("#memory-results tbody tr").count() == 6
    assert axe_violations(page) == []
    page.screenshot(path=str(shots / "memories-list.png"), full_page=True)

    page.fill("#id_q", "Where does the staging database run?")
    page.click("#memory-search button[type=submit]")
    page.wait_for_url("**/memories?q=Where*")
    page.wait_for_selector("svg.relevance-bar")
    assert page.evaluate("window.loadedOnce") is True
    first = page.locator("table.ranked-memories tbody tr").first
    assert "Frankfurt" in first.inner_text()
    classes = first.locator("svg.relevance-bar rect").evaluate_all(
        "rects => rects.map(r => r.getAttribute('class'))"
    )
    assert classes == ["bar-track", "c-domain", "c-temporal", "c-semantic", "c-frequency"]
    assert axe_violations(page) == []
    page.screenshot(path=str(shots / "memories-ranked.png"), full_page=True)

    first.locator("th a").click()
    page.wait_for_url(f"**/memories/{memories['frankfurt']}")
    assert page.locator(".decay-chart svg polyline").count() == 2
    assert page.locator(".supersession-chain li").count() == 2
    assert page.locator("table.accesses tbody tr").count() == 2
    assert axe_violations(page) == []
    page.screenshot(path=str(shots / "memory-detail.png"), full_page=True)

    page.click(f"#memory-actions-{memories['frankfurt']} button:has-text('Pin')")
    page.wait_for_selector(f"#memory-actions-{memories['frankfurt']} button:has-text('Unpin')")
    assert Memory.objects.get(pk=memories["frankfurt"]).pinned is True
    page.click(f"#memory-actions-{memories['frankfurt']} summary")
    page.locator("section[aria-labelledby=state-heading]").screenshot(path=str(shots / "memory-pinned.png"))
    assert errors == [], errors
