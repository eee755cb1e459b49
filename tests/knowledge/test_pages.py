"""/knowledge (hybrid search with a domain filter, HTMX results, browsing) and /knowledge/<entry_id>
(source, last verified, staleness, and the verifications that cited it), with their query counts."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.grounding.models import GroundingMessage, InjectionMode, ReviewStatus, Verdict, Verification
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry, KnowledgeSource
from apps.knowledge.selectors import STALE_AFTER_DAYS, entry_staleness
from apps.knowledge.services import entries_embed
from tests.conftest import role_client

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
READER = "grounding.view_verification"


@pytest.fixture
def entries() -> dict[str, KnowledgeEntry]:
    base = KnowledgeBase.objects.create(name="default")
    security = KnowledgeDomain.objects.create(base=base, name="security")
    compliance = KnowledgeDomain.objects.create(base=base, name="compliance")
    owasp = KnowledgeSource.objects.create(
        domain=security, name="OWASP", location="config/knowledge/security/owasp.json", priority=10
    )
    today = timezone.localdate()
    rows = {
        "SEC-031": KnowledgeEntry(
            entry_id="SEC-031",
            domain=security,
            knowledge_source=owasp,
            topic="Password storage",
            content="Passwords must be stored with an adaptive one-way hash such as Argon2id, scrypt "
            "or bcrypt.",
            source="OWASP Password Storage Cheat Sheet",
            url="https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html",
            related=["SEC-032"],
            tags=["passwords"],
            last_verified=today - timedelta(days=30),
        ),
        "SEC-032": KnowledgeEntry(
            entry_id="SEC-032",
            domain=security,
            topic="Transport security <TLS>",
            content="TLS 1.2 or later must be used; TLS 1.0 and 1.1 are deprecated.",
            source="RFC 8996",
            url="javascript:alert(1)",
            last_verified=today - timedelta(days=STALE_AFTER_DAYS + 10),
        ),
        "GDPR-033": KnowledgeEntry(
            entry_id="GDPR-033",
            domain=compliance,
            topic="Breach notification",
            content="A personal data breach must be notified to the supervisory authority within 72 hours.",
            source="GDPR Article 33",
        ),
    }
    for entry in rows.values():
        entry.content_hash = entry.entry_id
        entry.save()
    entries_embed()
    return {key: KnowledgeEntry.objects.get(entry_id=key) for key in rows}


def cite(
    entry_id: str, claim: str, *, relevance: float, message: GroundingMessage | None = None
) -> Verification:
    return Verification.objects.create(
        claim=claim,
        verdict=Verdict.SUPPORTED,
        confidence=0.82,
        sources=[{"entry_id": entry_id, "content_excerpt": "…", "relevance": relevance}],
        latency_ms=3.0,
        review_status=ReviewStatus.NOT_NEEDED,
        message=message,
    )


# --- Search -------------------------------------------------------------------------------------


def test_a_search_returns_the_expected_entry_first(entries) -> None:
    response = role_client().get("/knowledge", {"q": "how should passwords be hashed"})
    assert response.status_code == 200
    content = response.content.decode()
    assert content.startswith("<!doctype html>")
    ids = re.findall(r'<li class="knowledge-hit" data-entry-id="([A-Z]+-\d{3})">', content)
    assert ids[0] == "SEC-031"
    assert '<h3><a href="/knowledge/SEC-031"><code>SEC-031</code></a> Password storage</h3>' in content


def test_the_domain_filter_keeps_other_domains_out(entries) -> None:
    content = role_client().get("/knowledge", {"q": "must", "domain": "compliance"}).content.decode()
    assert re.findall(r'data-entry-id="([A-Z]+-\d{3})"', content) == ["GDPR-033"]
    assert '<option value="compliance" selected>compliance</option>' in content


def test_htmx_gets_only_the_results(entries) -> None:
    response = role_client().get("/knowledge", {"q": "TLS deprecated"}, headers=HTMX)
    content = response.content.decode()
    assert content.startswith('<div id="knowledge-results"')
    assert "<html" not in content and "<form" not in content
    assert re.findall(r'data-entry-id="([A-Z]+-\d{3})"', content)[0] == "SEC-032"
    assert "Transport security &lt;TLS&gt;" in content


def test_without_text_the_entries_are_listed(entries, django_assert_num_queries) -> None:
    client = role_client()
    client.get("/knowledge")
    # session, user, domains, count, entries.
    with django_assert_num_queries(5):
        content = client.get("/knowledge", {"domain": "security"}).content.decode()
    assert re.findall(r'<tr data-entry-id="([A-Z]+-\d{3})">', content) == ["SEC-031", "SEC-032"]
    assert "2 entries in security." in content
    # SEC-032 was last verified more than a year ago.
    assert content.count('<span class="badge staleness-stale">stale</span>') == 1


def test_bad_filters_are_said_not_failed(entries) -> None:
    client = role_client()
    content = client.get("/knowledge", {"q": "x"}).content.decode()
    assert "q: Type at least 2 characters." in content
    content = client.get("/knowledge", {"q": "tls", "domain": "nope"}).content.decode()
    assert "There is no domain &#x27;nope&#x27;; showing every domain." in content
    assert 'data-entry-id="SEC-032"' in content
    assert client.get("/knowledge", {"q": "a\x00b"}).status_code == 400


def test_the_pages_need_staff() -> None:
    assert Client().get("/knowledge").status_code == 302
    assert Client().get("/knowledge/SEC-031")["Location"].startswith("/admin/login/")


# --- One entry ------------------------------------------------------------------------------------


def test_the_entry_page_shows_source_staleness_and_the_citing_verifications(
    entries, django_assert_num_queries
) -> None:
    message = GroundingMessage.objects.create(
        message="Hash passwords with bcrypt.", mode=InjectionMode.AUTOMATIC
    )
    first = cite("SEC-031", "Passwords should be hashed with bcrypt.", relevance=0.9, message=message)
    second = cite("SEC-031", "Passwords must use an adaptive hash <b>now</b>.", relevance=0.7)
    cite("SEC-032", "TLS 1.0 is fine.", relevance=0.8)
    client = role_client(READER)
    client.get("/knowledge/SEC-031")
    # session, user, the entry, permissions (user, groups), the citing count and rows, the threshold.
    with django_assert_num_queries(8):
        response = client.get("/knowledge/SEC-031")
    assert response.status_code == 200
    content = response.content.decode()
    assert (
        '<dt>Source</dt><dd><a href="https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html"'
        ' rel="noopener noreferrer">OWASP Password Storage Cheat Sheet</a></dd>' in content
    )
    last = (timezone.localdate() - timedelta(days=30)).isoformat()
    assert f'<dt>Last verified</dt><dd><time datetime="{last}">{last}</time></dd>' in content
    assert "Fresh: last verified 30 days ago." in content
    assert f"more than {STALE_AFTER_DAYS} days old" in content
    assert '<span class="badge staleness-fresh">fresh</span>' in content
    assert '<dt>Related</dt><dd><a href="/knowledge/SEC-032"><code>SEC-032</code></a> </dd>' in content
    assert "2 verifications." in content
    rows = re.findall(r'<tr data-verification-id="(\d+)">', content)
    assert rows == [str(second.pk), str(first.pk)]
    assert "Passwords must use an adaptive hash &lt;b&gt;now&lt;/b&gt;." in content
    assert "<td>0.900</td>" in content and "<td>0.700</td>" in content
    assert f'<a href="/verifications/messages/{message.pk}">message</a>' in content
    assert "TLS 1.0 is fine." not in content


def test_a_stale_entry_says_so_and_a_bad_url_is_text(entries) -> None:
    content = role_client(READER).get("/knowledge/SEC-032").content.decode()
    assert '<span class="badge staleness-stale">stale</span>' in content
    assert f"Stale: last verified {STALE_AFTER_DAYS + 10} days ago" in content
    assert "<dt>Source</dt><dd>RFC 8996</dd>" in content and 'href="javascript:' not in content
    assert "No verification has cited this entry yet." in content


def test_staleness_rule() -> None:
    today = date(2026, 1, 1)
    entry = KnowledgeEntry(entry_id="X-001", last_verified=None)
    assert entry_staleness(entry=entry, today=today).state == "never"
    entry.last_verified = today - timedelta(days=STALE_AFTER_DAYS)
    assert entry_staleness(entry=entry, today=today).state == "fresh"
    entry.last_verified = today - timedelta(days=STALE_AFTER_DAYS + 1)
    assert entry_staleness(entry=entry, today=today).state == "stale"


def test_staff_without_the_verification_role_do_not_see_the_claims(entries) -> None:
    cite("SEC-031", "Passwords should be hashed with bcrypt.", relevance=0.9)
    content = role_client().get("/knowledge/SEC-031").content.decode()
    assert "Passwords should be hashed with bcrypt." not in content
    assert "Reading verifications needs the verification reader or reviewer role." in content


@pytest.mark.parametrize("entry_id", ["NOPE-999", "not-an-id", "SEC-0311"])
def test_unknown_entries_answer_a_404_page(entries, entry_id: str) -> None:
    response = role_client().get(f"/knowledge/{entry_id}")
    assert response.status_code == 404
    assert f"No knowledge entry has the id <code>{entry_id}</code>" in response.content.decode()


def test_a_nul_in_the_entry_id_is_refused() -> None:
    assert role_client().get("/knowledge/SEC%00-001").status_code == 400


def test_a_search_costs_a_fixed_number_of_queries(entries, django_assert_num_queries) -> None:
    client = role_client()
    client.get("/knowledge", {"q": "password"})
    # session, user, domains, the domain check, the nearest by meaning, the best by full text.
    with django_assert_num_queries(6):
        response = client.get("/knowledge", {"q": "how should passwords be hashed", "domain": "security"})
    assert response.status_code == 200
