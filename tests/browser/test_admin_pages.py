"""Every admin page an operator opens (the index, each changelist, each change form with a real row, the
import pages), in Chromium at 1280 px and at 390 px: the page itself never scrolls sideways (a wide
table scrolls inside its own box), with no console error, no Content-Security-Policy violation and no
serious or critical axe-core violation (issue #26 item 6)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.urls import reverse

from apps.arxiv.models import Paper, RunStatus, SearchRun
from apps.connectors.models import RemoteTool, ToolCall
from apps.connectors.services import manifest_import
from apps.core.models import Event
from apps.core.services import api_token_create
from apps.grounding.models import (
    GroundingAgent,
    GroundingMessage,
    GroundingSettings,
    ReviewStatus,
    Verdict,
    Verification,
)
from apps.grounding.services import verification_review
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry, KnowledgeSource
from apps.memory.models import MemorySettings
from apps.memory.services import Scope, TellItem, memory_tell
from apps.ontology.models import OntologyClass, OntologyProposal
from apps.wikidata.models import Fact, FactRun, FactRunStatus
from tests.browser.helpers import SERIOUS, axe_violations, log_in, screenshot_dir
from tests.conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True)

DEFAULT_MANIFEST = Path(__file__).resolve().parents[2] / "config" / "connectors.manifest.json"
LONG = "A long claim about password storage that an agent sent verbatim. " * 4


def _seeded() -> None:
    """A row behind every admin, with the long texts and JSON values that made pages wide."""
    manifest_import(data=json.loads(DEFAULT_MANIFEST.read_text(encoding="utf-8")), actor="tests")
    tool = RemoteTool.objects.get(name="wikidata.sparql")
    tool.aliases.create(name="wikidata.sparql_query_with_a_long_alias_name")
    token, _ = api_token_create(name="agent", scopes=["read", "write"])
    ToolCall.objects.create(
        tool=tool, tool_name=tool.name, requested_name="wikidata.sparql_query_with_a_long_alias_name",
        upstream_name="execute_sparql", connector_slug="wikidata", status="upstream_error",
        duration_ms=12.5, error="HTTP 503 from the upstream " * 5, correlation_id="c" * 32, token=token,
    )  # fmt: skip
    base = KnowledgeBase.objects.create(name="default")
    domain = KnowledgeDomain.objects.create(base=base, name="security")
    source = KnowledgeSource.objects.create(domain=domain, name="owasp", location="upload:owasp.json")
    KnowledgeEntry.objects.create(
        entry_id="SEC-001", domain=domain, knowledge_source=source, topic="Password storage",
        content="Store passwords with a slow hash. " * 20, source="OWASP", content_hash="x",
    )  # fmt: skip
    GroundingAgent.objects.create(name="security-agent", domain=domain, description="Answers security.")
    message = GroundingMessage.objects.create(
        original_message_id="m-1", message=LONG, summary="1 claim", injected_knowledge=[{"note": LONG}]
    )
    verification = Verification.objects.create(
        claim=LONG, domain=domain, verdict=Verdict.UNVERIFIED, confidence=0.4, latency_ms=1.0,
        sources=[{"entry_id": "SEC-001", "content_excerpt": LONG, "relevance": 0.8}], signals=[],
        message=message, review_status=ReviewStatus.PENDING,
    )  # fmt: skip
    verification_review(
        verification=verification, reviewer=make_user("reviewer"), action="reject",
        verdict=Verdict.SUPPORTED, note="Checked against the OWASP cheat sheet.",
    )  # fmt: skip
    run = FactRun.objects.create(
        question="Who founded Acme?", status=FactRunStatus.SUCCEEDED, degraded=True,
        plan={"steps": [LONG]}, finished_at=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    Fact.objects.create(
        run=run, position=1, text="Acme was founded by Ada.", qid="Q1", pid="P112", score=0.9,
        retrieved_at=datetime(2024, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    Paper.objects.create(
        arxiv_id="2401.12345", title="Attention " * 10, summary=LONG, authors=["Ada", "Grace"],
        published=datetime(2024, 1, 20, tzinfo=UTC), updated=datetime(2024, 1, 20, tzinfo=UTC),
        url="https://arxiv.org/abs/2401.12345",
    )  # fmt: skip
    SearchRun.objects.create(
        kind="search", cache_key="a" * 64, parameters={"query": "attention"},
        arxiv_params=[["search_query", "all:attention"]], status=RunStatus.SUCCEEDED,
    )  # fmt: skip
    memory_tell(scope=Scope(token=token), items=[TellItem(content="The staging database runs in Dublin.")])
    Event.objects.create(name="test.event", payload={"x": 1, "text": LONG})
    GroundingSettings.current()
    MemorySettings.current()
    OntologyClass.objects.create(
        iri="https://example.org/cw#Password", local_name="Password", term_id="CW-0001",
        preferred_term="Password", definition="A secret a person remembers.", physicality="AbstractEntity",
        role="Object", domain="security", quality_score=0.8, authority_score=0.7, maturity="draft",
        status="draft", source="OWASP", markdown="# Password",
    )  # fmt: skip
    OntologyProposal.objects.create(
        action="create", target_iri="https://example.org/cw#Passphrase", proposal={"label": "Passphrase"},
        token=token, consistent=True, quality_score=0.6, markdown_preview="# Passphrase", base_version=1,
    )  # fmt: skip
    Group.objects.create(name="analysts")


def _admin_paths() -> list[str]:
    paths = [
        reverse("admin:index"),
        reverse("admin:connectors_connector_import"),
        reverse("admin:knowledge_knowledgeentry_import"),
    ]
    for model in admin.site._registry:
        opts = model._meta
        paths.append(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
        row = model._default_manager.order_by("pk").first()
        if row is not None:  # a model only its workflow writes shows its (empty) changelist
            paths.append(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk]))
    return paths


# The page's own width beyond the viewport (0 when it fits); a changelist's table beyond its box (at
# 1280 px every column is in view without scrolling it); the CSP violations seen so far.
PAGE_OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
TABLE_OVERFLOW = """(() => { const box = document.querySelector('#changelist .results');
  return box ? box.scrollWidth - box.clientWidth : 0; })()"""
WATCH_CSP = """window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective));"""


@pytest.mark.parametrize("width", [1280, 390])
def test_every_admin_page_fits_the_viewport_without_errors(live_server, page, width: int) -> None:
    _seeded()
    paths = _admin_paths()
    assert len(paths) >= 50
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url} {m.text[:160]}") if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"{page.url} {error}"))
    page.add_init_script(WATCH_CSP)
    page.set_viewport_size({"width": width, "height": 900})
    log_in(live_server, page, username="admin-sweep")

    overflowing, blocked, violations = [], [], []
    for path in paths:
        # "load" is enough: admin pages fetch nothing after it (networkidle's 500 ms quiet wait, 200
        # times, was minutes of the suite).
        response = page.goto(f"{live_server.url}{path}", wait_until="load")
        assert response is not None and response.status == 200, (path, response and response.status)
        overflow = page.evaluate(PAGE_OVERFLOW)
        if overflow > 0:
            overflowing.append(f"{path} is {overflow}px too wide")
        hidden = page.evaluate(TABLE_OVERFLOW) if width == 1280 else 0
        if hidden > 0:
            overflowing.append(f"{path}: {hidden}px of the list hidden (scrolled)")
        blocked.extend(f"{path} {directive}" for directive in page.evaluate("window.__csp"))
        # preload=False: axe's own copies of the stylesheets would be refused by the CSP (not the page's).
        violations.extend(axe_violations(page, impacts=SERIOUS, preload=False))

    assert (overflowing, blocked, errors, violations) == ([], [], [], []), "\n".join(
        overflowing + blocked + errors + violations
    )


@pytest.mark.parametrize("width", [1280, 390])
def test_the_manifest_preview_shows_old_and_new_and_warns_before_deleting(live_server, page, width) -> None:
    _seeded()
    manifest = json.loads(DEFAULT_MANIFEST.read_text(encoding="utf-8"))
    del manifest["connectors"][1]  # perplexity
    manifest["connectors"][0]["version"] = "2.0.0"
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text[:160]) if m.type == "error" else None)
    page.add_init_script(WATCH_CSP)
    page.set_viewport_size({"width": width, "height": 900})
    log_in(live_server, page, username="import-admin", next_path="/admin/connectors/connector/import/")

    page.fill("#id_manifest_text", json.dumps(manifest, indent=2))
    page.click("input[value='Validate and preview']")
    page.wait_for_load_state("networkidle")
    warning = page.locator(".manifest-delete-warning")
    assert warning.is_visible()
    assert warning.inner_text().splitlines()[:2] == [
        "Applying this manifest deletes",
        "the whole connector perplexity (it has no tools)",
    ]
    change = page.locator("tr.updated", has_text="arxiv").locator("li", has_text="version")
    assert change.inner_text() == 'version: "2026.05" → "2.0.0"'
    # static/css/admin.css applies: the page's own <style> block was refused by the CSP before.
    assert warning.evaluate("e => getComputedStyle(e).borderLeftWidth") == "4px"
    page.screenshot(path=str(screenshot_dir() / f"admin-manifest-preview-{width}.png"), full_page=True)
    assert page.evaluate(PAGE_OVERFLOW) == 0
    assert page.evaluate("window.__csp") == []
    assert errors == []
    assert axe_violations(page, impacts=SERIOUS, preload=False) == []
