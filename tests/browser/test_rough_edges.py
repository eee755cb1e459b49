# ruff: noqa: F811 - the fixtures imported from other tests are parameters here
"""Issue 26 item 6 in Chromium: the branded error pages, the ontology tree and its filter, the knowledge
search's "nothing matches well" and the papers' live search, at 1280 and 390 px, signed in: no console
error, no Content-Security-Policy violation, no serious axe violation, no horizontal page scroll."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.arxiv.models import RunStatus
from apps.arxiv.schemas import SearchIn
from apps.arxiv.services import search_submit
from tests.arxiv.test_pages import PAGE
from tests.browser.helpers import HEIGHT, SERIOUS, axe_violations, log_in
from tests.knowledge.test_pages import entries  # noqa: F401
from tests.ontology.test_query_and_propose import ontology  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = {  # path: the status it answers
    "/conectors": 404,
    "/dashbord": 404,
    "/ontology/NoSuchClass": 404,
    "/ontology": 200,
    "/ontology?filter=sql": 200,
    "/knowledge?q=purple+elephant+banana+sandwich": 200,
    "/papers": 200,
}


def _watch(page, problems: list[str]) -> None:
    def console(message) -> None:
        # A 404 page is itself "a resource that failed to load" for Chromium's console: expected here.
        if message.type == "error" and "status of 404" not in message.text:
            problems.append(f"{page.url}: {message.text[:160]}")
        elif "Content Security Policy" in message.text:
            problems.append(f"{page.url}: CSP {message.text[:160]}")

    page.on("console", console)
    page.on("pageerror", lambda error: problems.append(f"{page.url}: {error}"))


def test_the_pages_fit_and_break_nothing_at_1280_and_390(ontology: None, entries, live_server, page) -> None:
    problems: list[str] = []
    _watch(page, problems)
    log_in(live_server, page, username="rough-admin")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": HEIGHT})
        for path, status in PAGES.items():
            response = page.goto(f"{live_server.url}{path}")
            assert response.status == status, path
            page.wait_for_load_state("networkidle")
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, (path, width, overflow)
            problems.extend(axe_violations(page, impacts=SERIOUS))
    assert problems == [], "\n".join(problems)


def test_the_error_page_search_goes_to_the_pages_own_search(ontology: None, live_server, page) -> None:
    page.goto(f"{live_server.url}/conectors")
    assert page.locator("nav[aria-label=Main] a").count() >= 9
    page.fill("#error-search-q", "SQL injection")
    page.click("button:has-text('Search the ontology')")
    page.wait_for_url("**/ontology?q=SQL*")
    assert "CWE-89 SQL Injection" in page.locator("#ontology-results").inner_text()


def test_the_ontology_filter_narrows_the_tree_as_one_types(ontology: None, live_server, page) -> None:
    problems: list[str] = []
    _watch(page, problems)
    page.goto(f"{live_server.url}/ontology")
    assert page.locator("details.ontology-domain[open]").count() == 0
    page.fill("#ontology-filter", "sql")
    assert page.locator("details.ontology-domain:not([hidden])").count() == 1
    assert page.locator("details.ontology-domain[open] summary h3").inner_text() == "security"
    assert page.locator("a[href='/ontology/CWE89SqlInjection']").is_visible()
    assert page.locator("a[href='/ontology/CWE943ImproperNeutralizationInDataQueryLogic']").is_visible()
    assert not page.locator("a[href='/ontology/PasswordHashing']").is_visible()
    assert page.locator("#ontology-filter-count").inner_text() == "1 class matches “sql”."
    page.fill("#ontology-filter", "")
    assert page.locator("details.ontology-domain:not([hidden])").count() == 5
    assert page.locator("details.ontology-domain[open]").count() == 0
    assert page.locator("#ontology-filter-count").inner_text().startswith("211 classes in 5 domains")
    assert problems == [], "\n".join(problems)


def test_the_papers_live_search_logs_no_csp_violation(live_server, page) -> None:
    run = search_submit(payload=SearchIn(query="language models", maxResults=10, sortBy="submittedDate"))
    run.status, run.result, run.finished_at = RunStatus.SUCCEEDED, PAGE, timezone.now()
    run.save()
    problems: list[str] = []
    _watch(page, problems)
    log_in(live_server, page, username="papers-admin", next_path="/papers")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.goto(f"{live_server.url}/papers")
        page.fill("#id_q", "language")  # the stored papers' live filter
        page.wait_for_timeout(800)
        page.fill("#id_query", "language models")
        page.click("#live-search button[type=submit]")
        page.wait_for_selector("#live-results .live-items li")
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, (width, overflow)
    assert problems == [], "\n".join(problems)
