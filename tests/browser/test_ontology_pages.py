# ruff: noqa: F811 - the fixtures imported from the ontology tests are parameters here
"""The ontology pages in Chromium at 1280 px: search through HTMX, open a class and its neighbourhood
graph, approve a proposal in place; no console errors, no axe violations, and a screenshot of each
page (``CORTEX_SCREENSHOT_DIR``, default ``.cortex/screenshots``) for a person to look at."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from apps.ontology.models import OntologyProposal
from tests.browser.helpers import HEIGHT, WIDTH, axe_violations, log_in, screenshot_dir
from tests.ontology.test_query_and_propose import CREATE, ontology, propose, writer  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_ontology_pages_read_well_in_a_browser(
    ontology: None, writer: tuple[Any, Client], live_server, page
) -> None:
    _, client = writer
    staged = propose(client, CREATE).json()["proposal"]
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    log_in(live_server, page, username="onto-admin", next_path="/ontology")
    errors: list[str] = []
    page.on("console", lambda m: errors.append(page.url + " " + m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    shots = screenshot_dir()

    page.goto(f"{live_server.url}/ontology")
    page.evaluate("window.loadedOnce = true")
    assert page.locator("#ontology-tree li").count() > 200  # the tree, every domain folded
    assert axe_violations(page) == []
    page.screenshot(path=str(shots / "ontology-index.png"))

    page.fill("#id_q", "SQL injection")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_url("**/ontology?q=SQL*")
    page.wait_for_selector(".ontology-results li")
    assert page.evaluate("window.loadedOnce") is True
    assert "CWE-89 SQL Injection" in page.locator(".ontology-results").inner_text()
    page.screenshot(path=str(shots / "ontology-search.png"))

    page.goto(f"{live_server.url}/ontology/CWE89SqlInjection")
    assert page.locator(".neighbourhood svg .node").count() >= 4
    assert page.locator(".ontology-inferred .badge").first.inner_text() == "inferred (OWL 2 RL)"
    assert axe_violations(page) == []
    page.screenshot(path=str(shots / "ontology-class.png"), full_page=True)

    page.goto(f"{live_server.url}/ontology/proposals")
    assert axe_violations(page) == []
    page.screenshot(path=str(shots / "ontology-proposals.png"), full_page=True)
    page.click(f"#proposal-{staged['proposal_id']} button:has-text('Approve')")
    page.wait_for_selector(f"#proposal-{staged['proposal_id']} .badge-ok:has-text('merged')")
    assert OntologyProposal.objects.get(pk=staged["proposal_id"]).status == "merged"
    assert errors == [], errors
