"""Every page of the permission table (apps/core/security.py), in Chromium, as an anonymous visitor and as a
logged-in operator: it loads (a protected page sends the visitor to the login), with no console error
and no serious or critical axe-core violation (issue #16's sweep; each area's own browser test goes
deeper)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from apps.core.security import PAGE_OPERATIONS
from apps.grounding.models import Verdict, Verification
from apps.knowledge import services as knowledge_services
from apps.knowledge.models import KnowledgeEntry
from apps.wikidata.models import FactRun, FactRunStatus
from tests.browser.helpers import SERIOUS, axe_violations, log_in

pytestmark = pytest.mark.django_db(transaction=True)

# Pages that take an id: the object each is shown with (made by ``_seeded``), by URL name.
DETAIL_PAGES = {
    "wikidata:run_detail": "run",
    "grounding:verification_detail": "verification",
    "knowledge:entry_detail": "entry",
}


def _seeded() -> dict[str, object]:
    domain = knowledge_services.domain_get_or_create(name="security")
    entry = KnowledgeEntry.objects.create(
        entry_id="SEC-901", domain=domain, topic="Sweep entry", content="A page sweep entry.", source="test"
    )
    run = FactRun.objects.create(
        question="Who wrote Dune?",
        status=FactRunStatus.SUCCEEDED,
        finished_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    verification = Verification.objects.create(
        claim="A claim.", verdict=Verdict.UNVERIFIED, confidence=0.4, latency_ms=1.0,
        sources=[{"entry_id": "SEC-901", "content_excerpt": "A page sweep entry.", "relevance": 0.5}],
    )  # fmt: skip
    return {"run": run.pk, "verification": verification.pk, "entry": entry.entry_id}


def _paths(seeded: dict[str, object]) -> list[str]:
    paths = []
    for operation in PAGE_OPERATIONS:
        method, _, template = operation.name.partition(" ")
        if method != "GET" or template.endswith((".ttl", ".zip", ".jsonld", ".json")):
            continue  # downloads, not pages
        if "<" not in template:
            paths.append(reverse(operation.url_name))
        elif operation.url_name in DETAIL_PAGES:
            value = seeded[DETAIL_PAGES[operation.url_name]]
            paths.append(template.split("<")[0] + str(value) + template.split(">", 1)[1])
    return sorted(set(paths))


def _visit(page, url: str, errors: list[str], violations: list[str]) -> int:
    response = page.goto(url)
    page.wait_for_load_state("networkidle")
    violations.extend(axe_violations(page, impacts=SERIOUS))
    return response.status if response else 0


def test_every_page_as_anonymous_and_as_an_operator(live_server, page) -> None:
    paths = _paths(_seeded())
    assert {"/", "/knowledge", "/verifications", "/ontology", "/memories"} <= set(paths)
    errors: list[str] = []
    violations: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url} {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"{page.url} {error}"))

    for path in paths:  # anonymous: a public page, or the login it is sent to
        status = _visit(page, f"{live_server.url}{path}", errors, violations)
        assert status == 200, (path, status)
        assert page.url.startswith(f"{live_server.url}{path}") or "/admin/login/" in page.url, page.url

    log_in(live_server, page, username="sweep-admin")
    for path in paths:
        status = _visit(page, f"{live_server.url}{path}", errors, violations)
        assert status == 200, (path, status)
        assert "/admin/login/" not in page.url, path

    assert errors == [], "\n".join(errors)
    assert violations == [], "\n".join(violations)
