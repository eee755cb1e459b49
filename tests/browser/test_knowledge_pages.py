"""The pages that show what the API knows, in Chromium at 1280 px: /knowledge searched through HTMX
(results swapped in, URL pushed), an entry with the verifications that cited it, the verifications
queue with its counts and confidence bars, a verification, a grounded message, and a degraded fact
run's knowledge answers. No console errors, no serious or critical axe violation, and a screenshot
of each (``CORTEX_SCREENSHOT_DIR``, default ``.cortex/screenshots``) for a person to look at."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.grounding.models import GroundingMessage, InjectionMode, ReviewStatus, Verdict, Verification
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry, KnowledgeSource
from apps.knowledge.services import entries_embed
from apps.wikidata.models import FactRun, FactRunStatus
from tests.browser.helpers import SERIOUS, axe_violations, screenshot_dir

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def known() -> dict[str, object]:
    base = KnowledgeBase.objects.create(name="default")
    security = KnowledgeDomain.objects.create(base=base, name="security")
    KnowledgeDomain.objects.create(base=base, name="compliance")
    owasp = KnowledgeSource.objects.create(
        domain=security, name="OWASP", location="config/knowledge/security/owasp.json", priority=10
    )
    for entry_id, topic, content, days in (
        (
            "SEC-031",
            "Password storage",
            "Passwords must be stored with an adaptive one-way hash such as Argon2id, scrypt or bcrypt; "
            "MD5 and SHA-1 are not acceptable for passwords.",
            40,
        ),
        (
            "SEC-032",
            "Transport security",
            "TLS 1.2 or later must be used; TLS 1.0 and 1.1 are deprecated.",
            500,
        ),
    ):
        KnowledgeEntry.objects.create(
            entry_id=entry_id,
            domain=security,
            knowledge_source=owasp,
            topic=topic,
            content=content,
            source="OWASP Cheat Sheet Series",
            url="https://cheatsheetseries.owasp.org/",
            last_verified=timezone.localdate() - timezone.timedelta(days=days),
            content_hash=entry_id,
        )
    entries_embed()
    message = GroundingMessage.objects.create(
        message="Passwords should be hashed with MD5. Use TLS 1.2 or later.",
        mode=InjectionMode.AUTOMATIC,
        injected_knowledge=[
            {
                "topic": "Password storage",
                "content": KnowledgeEntry.objects.get(entry_id="SEC-031").content,
                "source": "OWASP Cheat Sheet Series",
            }
        ],
        summary="2 claim(s) checked: 1 supported, 1 contradicted.",
    )
    contradicted = Verification.objects.create(
        claim="Passwords should be hashed with MD5.",
        verdict=Verdict.CONTRADICTED,
        confidence=0.62,
        sources=[
            {"entry_id": "SEC-031", "content_excerpt": "MD5 and SHA-1 are not acceptable", "relevance": 0.81}
        ],
        correction="Use Argon2id, scrypt or bcrypt.",
        latency_ms=8.0,
        message=message,
    )
    Verification.objects.create(
        claim="Use TLS 1.2 or later.",
        verdict=Verdict.SUPPORTED,
        confidence=0.88,
        sources=[
            {"entry_id": "SEC-032", "content_excerpt": "TLS 1.2 or later must be used", "relevance": 0.9}
        ],
        latency_ms=7.0,
        review_status=ReviewStatus.NOT_NEEDED,
        message=message,
    )
    run = FactRun.objects.create(
        question="How should passwords be stored?",
        status=FactRunStatus.DEGRADED,
        degraded=True,
        degraded_reason="Wikidata search failed: the upstream timed out",
        finished_at=timezone.now(),
        knowledge=[
            {
                "entryId": "SEC-031",
                "domain": "security",
                "topic": "Password storage",
                "content": KnowledgeEntry.objects.get(entry_id="SEC-031").content,
                "source": "OWASP Cheat Sheet Series",
                "url": "https://cheatsheetseries.owasp.org/",
                "similarity": 0.71,
            }
        ],
        steps=[{"name": "local", "status": "ok", "durationMs": 5.0, "detail": {"facts": 0, "knowledge": 1}}],
    )
    return {"message": message, "contradicted": contradicted, "run": run}


def test_the_knowledge_pages_read_well_in_a_browser(known, live_server, signed_in) -> None:
    page = signed_in
    errors: list[str] = []
    page.on(
        "console",
        lambda message: errors.append(page.url + " " + message.text) if message.type == "error" else None,
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    shots = screenshot_dir()
    violations: list[str] = []

    page.goto(f"{live_server.url}/knowledge")
    page.evaluate("window.loadedOnce = true")  # survives only if the page is never reloaded
    assert page.locator("#knowledge-results tbody tr").count() == 2
    violations += axe_violations(page, impacts=SERIOUS)
    page.fill("#id_q", "how should passwords be hashed")
    page.click("#knowledge-search button[type=submit]")
    page.wait_for_url("**/knowledge?q=how*")
    page.wait_for_selector(".knowledge-hit")
    assert page.evaluate("window.loadedOnce") is True
    assert page.locator(".knowledge-hit").first.get_attribute("data-entry-id") == "SEC-031"
    violations += axe_violations(page, impacts=SERIOUS)
    page.screenshot(path=str(shots / "knowledge-search.png"), full_page=True)

    page.locator(".knowledge-hit h3 a").first.click()
    page.wait_for_url("**/knowledge/SEC-031")
    assert page.locator("table.citing tbody tr").count() == 1
    assert "Fresh: last verified 40 days ago." in page.inner_text(".staleness")
    violations += axe_violations(page, impacts=SERIOUS)
    page.screenshot(path=str(shots / "knowledge-entry.png"), full_page=True)

    page.goto(f"{live_server.url}/verifications?status=all")
    assert page.locator(".verdict-counts li").count() == 3
    assert page.locator("table.verifications .confidence-bar svg").count() == 2
    violations += axe_violations(page, impacts=SERIOUS)
    page.screenshot(path=str(shots / "verifications-counts.png"), full_page=True)

    page.goto(f"{live_server.url}/verifications/{known['contradicted'].pk}")
    violations += axe_violations(page, impacts=SERIOUS)
    page.screenshot(path=str(shots / "verification-detail.png"), full_page=True)
    page.click("text=The whole message")
    page.wait_for_url(f"**/verifications/messages/{known['message'].pk}")
    assert page.locator("table.verifications tbody tr").count() == 2
    violations += axe_violations(page, impacts=SERIOUS)
    page.screenshot(path=str(shots / "grounding-message.png"), full_page=True)

    page.goto(f"{live_server.url}/facts/runs/{known['run'].pk}")
    assert page.locator("table.knowledge-answers tbody tr").count() == 1
    assert "This run found no facts." not in page.content()
    violations += axe_violations(page, impacts=SERIOUS)
    page.screenshot(path=str(shots / "fact-run-degraded.png"), full_page=True)

    assert violations == []
    assert errors == [], errors
