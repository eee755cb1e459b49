# ruff: noqa: F811 - the fixtures imported from other tests are parameters here
"""Every page of the permission table (apps/core/security.py), in Chromium, at 1280 and 390 px, as an
anonymous visitor and as a logged-in operator (issue #26's acceptance; #16's sweep before it): it loads
(a protected page sends the visitor to the login), the page never scrolls sideways (a wide table scrolls
inside its own wrapper), no console error, no Content-Security-Policy violation, no serious or critical
axe-core violation. Detail pages are seeded with real content, a degraded run among them. One browser
context per width; each page is visited once per role and width. Each area's own browser test goes
deeper."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.arxiv.models import RunStatus as ArxivRunStatus
from apps.arxiv.schemas import SearchIn
from apps.arxiv.services import search_submit
from apps.connectors.models import ToolCall
from apps.core.models import UpstreamRequest
from apps.core.security import PAGE_OPERATIONS
from apps.dashboard.panels import PANELS
from apps.grounding.models import GroundingMessage, InjectionMode, ReviewStatus, Verdict, Verification
from apps.knowledge import services as knowledge_services
from apps.knowledge.models import KnowledgeEntry
from apps.wikidata.models import Fact, FactRun, FactRunStatus
from tests.arxiv.test_pages import PAGE, make_paper
from tests.browser.helpers import HEIGHT, SERIOUS, axe_violations, log_in
from tests.browser.test_memory_pages import memories  # noqa: F401
from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401
from tests.ontology.test_query_and_propose import ontology  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = (1280, 390)

# Pages that take an id: the objects each is shown with (made by ``seeded``), by URL name.
DETAIL_PAGES = {
    "connectors:connector_detail": ("connector",),
    "connectors:tool_detail": ("tool",),
    "arxiv:paper_detail": ("paper",),
    "arxiv:run_detail": ("search_run",),
    "wikidata:run_detail": ("run", "degraded_run"),
    "wikidata:fact_detail": ("fact",),
    "grounding:verification_detail": ("verification",),
    "grounding:message_detail": ("message",),
    "knowledge:entry_detail": ("entry",),
    "memory:memory_detail": ("memory",),
    "ontology:class_detail": ("ontology_class",),
    "dashboard:panel": tuple(f"panel:{slug}" for slug in PANELS),
}

# The innermost elements that reach past the viewport's right edge, to name what to fix.
OVERFLOWING = """() => [...document.querySelectorAll("body *")]
  .filter((el) => el.getBoundingClientRect().right > innerWidth + 1 && el.children.length === 0)
  .slice(0, 3)
  .map((el) => `${el.tagName.toLowerCase()}.${el.classList} to ${el.getBoundingClientRect().right}`)"""

# Every ``securitypolicyviolation`` event of the document, kept for the test to read (an init script
# runs in Playwright's own world, outside the page's CSP).

CSP_LISTENER = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"}`);
});
"""


@pytest.fixture
def seeded(ontology: None, default_registry, memories) -> dict[str, object]:
    """Rows for every detail page and for the dashboard's panels (a degraded run, failed calls)."""
    domain = knowledge_services.domain_get_or_create(name="security")
    entry = KnowledgeEntry.objects.create(
        entry_id="SEC-901", domain=domain, topic="Sweep entry", content="A page sweep entry.", source="test"
    )
    finished = datetime(2026, 1, 1, tzinfo=UTC)
    run = FactRun.objects.create(
        question="Who wrote Dune?", status=FactRunStatus.SUCCEEDED, finished_at=finished
    )
    fact = Fact.objects.create(
        run=run, position=1, text="Dune — author — Frank Herbert", score=0.93, qid="Q190192",
        qid_label="Dune", pid="P50", pid_label="author", datatype="wikibase-item",
        value={"type": "wikibase-entityid", "id": "Q7934"}, value_text="Q7934", value_label="Frank Herbert",
        claim_guid="Q190192$0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", rank="normal",
        endpoint="https://www.wikidata.org/w/api.php", retrieved_at=finished,
    )  # fmt: skip
    degraded = FactRun.objects.create(
        question="Who discovered penicillin?", status=FactRunStatus.DEGRADED, degraded=True,
        degraded_reason="Wikidata answered 503 to every call.", finished_at=finished,
        knowledge=[{"entryId": "SEC-901", "topic": "Sweep entry", "content": "A page sweep entry.",
                    "similarity": 0.41, "domain": "security", "source": "test"}],
    )  # fmt: skip
    message = GroundingMessage.objects.create(
        original_message_id="msg-sweep", message="Passwords should be hashed with MD5.",
        mode=InjectionMode.AUTOMATIC, summary="1 claim(s) checked: 1 contradicted.", latency_ms=3.5,
    )  # fmt: skip
    verification = Verification.objects.create(
        claim="Passwords should be hashed with MD5.", verdict=Verdict.CONTRADICTED, confidence=0.62,
        latency_ms=1.0, review_status=ReviewStatus.PENDING, message=message, correction="Use Argon2id.",
        sources=[{"entry_id": "SEC-901", "content_excerpt": "A page sweep entry.", "relevance": 0.5}],
    )  # fmt: skip
    paper = make_paper("2401.00001", "Large language models as retrievers", categories=["cs.CL", "cs.IR"])
    search = search_submit(payload=SearchIn(query="language models", maxResults=10, sortBy="submittedDate"))
    search.status, search.result, search.finished_at = ArxivRunStatus.SUCCEEDED, PAGE, timezone.now()
    search.save()
    # The dashboard's health and budget panels with something in them: Wikidata failing every call.
    UpstreamRequest.objects.bulk_create(
        UpstreamRequest(upstream="wikidata-action-api", outcome="failed", http_status=503, duration_ms=90,
                        budget_per_hour=18000)
        for _ in range(3)
    )  # fmt: skip
    ToolCall.objects.create(
        tool_name="wikidata.sparql", requested_name="wikidata.sparql", upstream_name="sparql",
        connector_slug="wikidata", status="upstream_error", duration_ms=120.0,
    )  # fmt: skip
    values: dict[str, object] = {
        "connector": "wikidata",
        "tool": "wikidata.sparql",
        "paper": paper.arxiv_id,
        "search_run": search.pk,
        "run": run.pk,
        "degraded_run": degraded.pk,
        "fact": fact.pk,
        "verification": verification.pk,
        "message": message.pk,
        "entry": entry.entry_id,
        "memory": memories["frankfurt"],
        "ontology_class": "CWE89SqlInjection",
    }
    values.update({f"panel:{slug}": slug for slug in PANELS})
    return values


def _paths(seeded: dict[str, object]) -> list[str]:
    paths = []
    for operation in PAGE_OPERATIONS:
        method, _, template = operation.name.partition(" ")
        template = template.split(" ")[0]
        if method != "GET" or template.endswith((".ttl", ".zip", ".jsonld", ".json")):
            continue  # downloads, not pages
        if "<" not in template:
            paths.append(reverse(operation.url_name))
            continue
        assert operation.url_name in DETAIL_PAGES, f"seed an object for the new page {operation.name}"
        for key in DETAIL_PAGES[operation.url_name]:
            paths.append(template.split("<")[0] + str(seeded[key]) + template.split(">", 1)[1])
    return sorted(set(paths))


def _check(page, url: str, problems: list[str], widths: dict[str, int]) -> int:
    """Visit ``url``; add what is wrong to ``problems`` and the document's width to ``widths``."""
    response = page.goto(url, wait_until="load")
    if page.evaluate("document.querySelector('[hx-trigger], [hx-ext]') !== null"):
        # Only a page with HTMX triggers may still be fetching after load; networkidle's 500 ms quiet
        # wait on every one of 144 visits was over a minute of the suite.
        page.wait_for_load_state("networkidle")
    viewport = page.viewport_size["width"]
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    widths[f"{viewport} {page.url}"] = scroll_width
    if scroll_width > viewport:
        culprits = page.evaluate(OVERFLOWING)
        problems.append(f"{page.url} at {viewport} px is {scroll_width} px wide: {culprits}")
    problems.extend(f"{page.url} CSP: {v}" for v in page.evaluate("window.__cspViolations"))
    # preload=False: axe's own fetch of the stylesheets would be refused by the CSP (axe's, not the page's).
    problems.extend(axe_violations(page, impacts=SERIOUS, preload=False))
    return response.status if response else 0


def test_every_page_fits_and_breaks_nothing_logged_out_and_as_an_operator(seeded, live_server, page) -> None:
    paths = _paths(seeded)
    assert {"/", "/changes", "/connectors/wikidata", "/connectors/tools/wikidata.sparql", "/ontology",
            f"/facts/runs/{seeded['degraded_run']}", "/dashboard/connectors"} <= set(paths)  # fmt: skip
    browser = page.context.browser
    problems: list[str] = []
    widths: dict[str, int] = {}
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": HEIGHT})
        context.add_init_script(CSP_LISTENER)
        tab = context.new_page()
        tab.on(
            "console", lambda m, t=tab: m.type == "error" and problems.append(f"{t.url} console: {m.text}")
        )
        tab.on("pageerror", lambda error, t=tab: problems.append(f"{t.url} page error: {error}"))

        for path in paths:  # anonymous: a public page, or the login it is sent to
            status = _check(tab, f"{live_server.url}{path}", problems, widths)
            assert status == 200, (width, path, status)
            assert tab.url.startswith(f"{live_server.url}{path}") or "/admin/login/" in tab.url, tab.url
            assert tab.locator("nav[aria-label=Main] a[href='/changes']").count() == 0, path

        log_in(live_server, tab, username=f"sweep-operator-{width}")
        for path in paths:
            status = _check(tab, f"{live_server.url}{path}", problems, widths)
            assert status == 200, (width, path, status)
            assert "/admin/login/" not in tab.url, path
            assert tab.locator("nav[aria-label=Main] a[href='/changes']").count() == 1, path  # staff's link
        context.close()

    print("\n".join(f"{key}: {value}" for key, value in sorted(widths.items())))  # the measured widths (-s)
    assert problems == [], "\n".join(problems)
