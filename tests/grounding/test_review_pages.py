"""The review queue (/verifications) and a verification's page: who may see and review, CSRF, approve,
reject and correct (writing a knowledge entry), refused reviews, filters and pages, HTMX fragments,
and the evidence page with its escaping."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from apps.grounding.models import GroundingMessage, InjectionMode, ReviewStatus, Verdict, Verification
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry, KnowledgeSource

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
QUEUE = "/verifications"
GDPR_33 = (
    "In the case of a personal data breach, the controller shall without undue delay and, where feasible, "
    "not later than 72 hours after having become aware of it, notify the supervisory authority."
)
SEC_031 = "Passwords must be stored with an adaptive one-way hash such as Argon2id, scrypt or bcrypt."


# --- Factories ----------------------------------------------------------------------------------


def make_user(username: str, *codenames: str, is_staff: bool = True) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=is_staff)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="grounding", codename__in=codenames)
    )
    return user


def client_for(user: User, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def make_verification(claim: str, *, created: datetime, **fields) -> Verification:
    defaults = {
        "verdict": Verdict.UNVERIFIED,
        "confidence": 0.5,
        "sources": [],
        "latency_ms": 12.5,
        "review_status": ReviewStatus.PENDING,
    }
    defaults.update(fields)
    verification = Verification.objects.create(claim=claim, **defaults)
    Verification.objects.filter(pk=verification.pk).update(created_at=created)
    verification.refresh_from_db()
    return verification


@pytest.fixture
def knowledge() -> dict[str, object]:
    base = KnowledgeBase.objects.create(name="default")
    security = KnowledgeDomain.objects.create(base=base, name="security")
    compliance = KnowledgeDomain.objects.create(base=base, name="compliance")
    gdpr = KnowledgeSource.objects.create(
        domain=compliance,
        name="GDPR Requirements",
        location="config/knowledge/compliance/gdpr.json",
        priority=10,
    )
    entries = {
        "GDPR-033": KnowledgeEntry.objects.create(
            entry_id="GDPR-033",
            domain=compliance,
            knowledge_source=gdpr,
            topic="Breach notification to the supervisory authority",
            content=GDPR_33,
            source="GDPR Article 33",
            url="https://gdpr-info.eu/art-33-gdpr/",
            confidence=0.98,
            last_verified=date(2024, 1, 15),
        ),
        "GDPR-034": KnowledgeEntry.objects.create(
            entry_id="GDPR-034",
            domain=compliance,
            topic="Communicating a breach to the data subject",
            content="When a breach is likely to result in a high risk, the controller tells the subject.",
            source="GDPR Article 34",
            url="javascript:alert(1)",
        ),
        "SEC-031": KnowledgeEntry.objects.create(
            entry_id="SEC-031",
            domain=security,
            topic="Password storage",
            content=SEC_031,
            source="OWASP ASVS 2.4.1",
            url="https://owasp.org/www-project-application-security-verification-standard/",
            last_verified=date(2023, 6, 1),
        ),
    }
    return {"security": security, "compliance": compliance, "entries": entries}


@pytest.fixture
def verifications(knowledge: dict) -> dict[str, Verification]:
    """Four verifications, the newest first: two pending, one not queued, one approved."""
    t0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    message = GroundingMessage.objects.create(
        original_message_id="msg-42",
        message="Controllers must notify the authority within 48 hours of a breach.",
        mode=InjectionMode.AUTOMATIC,
        summary="1 claim(s) checked: 1 contradicted.",
    )
    breach = make_verification(
        "Controllers must notify the authority within 48 hours of a breach.",
        created=t0 + timedelta(minutes=4),
        domain=knowledge["compliance"],
        verdict=Verdict.CONTRADICTED,
        confidence=0.55,
        sources=[
            {
                "entry_id": "GDPR-033",
                "content_excerpt": "not later than 72 hours after having become aware of it",
                "relevance": 0.8123,
                "source": "GDPR Article 33",
                "url": "https://gdpr-info.eu/art-33-gdpr/",
            },
            {
                "entry_id": "GDPR-034",
                "content_excerpt": "the controller shall tell the data subject.",
                "relevance": 0.6,
                "source": "GDPR Article 34",
                "url": "javascript:alert(1)",
            },
            {
                "entry_id": "GDPR-099",
                "content_excerpt": "A removed entry.",
                "relevance": 0.5,
                "source": "Old pack",
                "url": "javascript:alert(2)",
            },
        ],
        correction=GDPR_33,
        related_entries=["GDPR-033", "GDPR-034", "GDPR-012"],
        signals=[{"type": "quantity", "claim": "48 hours", "evidence": "72 hours"}],
        latency_ms=42.5,
        message=message,
    )
    md5 = make_verification(
        "Passwords should be hashed with MD5.",
        created=t0 + timedelta(minutes=3),
        domain=knowledge["security"],
        verdict=Verdict.UNVERIFIED,
        confidence=0.4,
        sources=[
            {
                "entry_id": "SEC-031",
                "content_excerpt": SEC_031,
                "relevance": 0.52,
                "source": "OWASP",
                "url": "",
            }
        ],
    )
    bcrypt = make_verification(
        "Passwords must be hashed with bcrypt or Argon2id.",
        created=t0 + timedelta(minutes=2),
        domain=knowledge["security"],
        verdict=Verdict.SUPPORTED,
        confidence=0.92,
        sources=[{"entry_id": "SEC-031", "content_excerpt": SEC_031, "relevance": 0.88}],
        review_status=ReviewStatus.NOT_NEEDED,
    )
    approved = make_verification(
        "TLS 1.3 should be preferred.",
        created=t0 + timedelta(minutes=1),
        domain=knowledge["security"],
        verdict=Verdict.SUPPORTED,
        confidence=0.65,
        review_status=ReviewStatus.APPROVED,
    )
    return {"breach": breach, "md5": md5, "bcrypt": bcrypt, "approved": approved}


@pytest.fixture
def reviewer() -> User:
    return make_user("rita", "review_verification")


@pytest.fixture
def reviewer_client(reviewer: User) -> Client:
    return client_for(reviewer)


def _claims(response) -> list[str]:
    return [row["verification"].claim for row in response.context["rows"]]


def _review_url(verification: Verification) -> str:
    return f"/verifications/{verification.pk}/review"


def _unchanged(verification: Verification) -> None:
    stored = Verification.objects.get(pk=verification.pk)
    assert (stored.review_status, stored.reviewer_id, stored.reviewed_at, stored.review_note) == (
        verification.review_status,
        None,
        None,
        "",
    )
    assert (stored.correction, stored.corrected_entry) == (verification.correction, "")


# --- Who may see and review ---------------------------------------------------------------------


def test_queue_requires_staff_with_the_review_permission(verifications: dict) -> None:
    response = Client().get(QUEUE, {"verdict": "contradicted"})
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=%2Fverifications%3Fverdict%3Dcontradicted"

    response = Client().get(QUEUE, headers={**HTMX, "HX-Current-URL": "http://testserver/verifications?q=x"})
    assert response.status_code == 204
    assert response["HX-Redirect"] == "/admin/login/?next=%2Fverifications%3Fq%3Dx"

    assert client_for(make_user("sam")).get(QUEUE).status_code == 403  # staff, no permission
    assert client_for(make_user("ana", "view_verification")).get(QUEUE).status_code == 403
    assert client_for(make_user("nora", "review_verification", is_staff=False)).get(QUEUE).status_code == 403

    reviewer = make_user("rita", "review_verification")
    response = client_for(reviewer).get(QUEUE)
    assert response.status_code == 200
    assert "HX-Request" in response["Vary"]
    superuser = User.objects.create_superuser("root", password="pw")
    assert client_for(superuser).get(QUEUE).status_code == 200


def test_detail_page_is_for_reviewers_and_analysts(verifications: dict) -> None:
    url = f"/verifications/{verifications['breach'].pk}"
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next=%2Fverifications%2F{verifications['breach'].pk}"
    assert client_for(make_user("sam")).get(url).status_code == 403

    analyst = client_for(make_user("ana", "view_verification")).get(url)
    assert analyst.status_code == 200
    assert "Save review" not in analyst.content.decode()  # reading only

    reviewer = client_for(make_user("rita", "review_verification")).get(url)
    assert reviewer.status_code == 200
    assert "Save review" in reviewer.content.decode()


def test_unknown_verification_is_a_404_page(reviewer_client: Client) -> None:
    response = reviewer_client.get("/verifications/999999")
    assert response.status_code == 404
    assert "No verification has the id <code>999999</code>." in response.content.decode()
    response = reviewer_client.post("/verifications/999999/review", {"action": "approve"})
    assert response.status_code == 404


def test_review_needs_the_review_permission_and_a_post(verifications: dict, reviewer_client: Client) -> None:
    breach = verifications["breach"]
    response = Client().post(_review_url(breach), {"action": "approve"})
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=")
    analyst = client_for(make_user("ana", "view_verification"))
    assert analyst.post(_review_url(breach), {"action": "approve"}).status_code == 403
    assert reviewer_client.get(_review_url(breach)).status_code == 405
    _unchanged(breach)


def test_review_post_enforces_csrf(verifications: dict, reviewer: User) -> None:
    breach = verifications["breach"]
    client = client_for(reviewer, enforce_csrf_checks=True)
    response = client.post(_review_url(breach), {"action": "approve"}, headers=HTMX)
    assert response.status_code == 403
    _unchanged(breach)

    page = client.get(QUEUE)  # sets the CSRF cookie; the page carries the token for htmx
    token = client.cookies["csrftoken"].value
    assert re.search(r'<body hx-headers=\'\{"X-CSRFToken": "[^"]+"\}\'>', page.content.decode())
    response = client.post(_review_url(breach), {"action": "approve"}, headers={**HTMX, "X-CSRFToken": token})
    assert response.status_code == 200
    assert Verification.objects.get(pk=breach.pk).review_status == ReviewStatus.APPROVED


# --- Approve, reject, correct -------------------------------------------------------------------


def test_approve_with_htmx_returns_the_updated_row(
    verifications: dict, reviewer: User, reviewer_client: Client
) -> None:
    breach = verifications["breach"]
    before = timezone.now()
    response = reviewer_client.post(
        _review_url(breach),
        {"action": "approve", "note": "  checked Art. 33  ", "next": "/verifications"},
        headers=HTMX,
    )
    assert response.status_code == 200
    content = response.content.decode()
    assert content.startswith(f'<tr id="verification-{breach.pk}" data-verification-id="{breach.pk}"')
    assert "<html" not in content
    assert '<span class="badge status-approved">Approved</span>' in content
    assert "by rita" in content
    stored = Verification.objects.get(pk=breach.pk)
    assert stored.review_status == ReviewStatus.APPROVED
    assert stored.reviewer == reviewer
    assert before <= stored.reviewed_at <= timezone.now()
    assert stored.review_note == "checked Art. 33"
    assert stored.correction == GDPR_33 and stored.corrected_entry == ""


def test_reject_without_htmx_redirects_back(
    verifications: dict, reviewer: User, reviewer_client: Client
) -> None:
    md5 = verifications["md5"]
    back = "/verifications?verdict=unverified&page=1"
    response = reviewer_client.post(
        _review_url(md5), {"action": "reject", "verdict": "contradicted", "next": back}
    )
    assert response.status_code == 303
    assert response["Location"] == back
    stored = Verification.objects.get(pk=md5.pk)
    assert (stored.review_status, stored.reviewer, stored.review_note) == (
        ReviewStatus.REJECTED,
        reviewer,
        "",
    )
    assert stored.reviewed_at is not None

    # Only a local URL is followed; anything else goes to the queue.
    response = reviewer_client.post(
        _review_url(md5), {"action": "reject", "verdict": "contradicted", "next": "https://evil.example/"}
    )
    assert response["Location"] == "/verifications"


def test_correct_updates_the_named_entry(
    verifications: dict, knowledge: dict, reviewer: User, reviewer_client: Client
) -> None:
    md5 = verifications["md5"]
    text = "Passwords must be stored with Argon2id, scrypt or bcrypt; never with MD5 or SHA-1."
    response = reviewer_client.post(
        _review_url(md5),
        {
            "action": "correct",
            "verdict": "contradicted",
            "correction": text,
            "entry_id": "SEC-031",
            "note": "MD5 is broken",
        },
        headers=HTMX,
    )
    assert response.status_code == 200
    content = response.content.decode()
    assert '<span class="badge status-corrected">Corrected</span>' in content
    assert 'entry <a href="/knowledge/SEC-031"><code>SEC-031</code></a>' in content
    stored = Verification.objects.get(pk=md5.pk)
    assert (stored.review_status, stored.reviewer, stored.correction, stored.corrected_entry) == (
        ReviewStatus.CORRECTED,
        reviewer,
        text,
        "SEC-031",
    )
    assert stored.review_note == "MD5 is broken" and stored.reviewed_at is not None
    entry = KnowledgeEntry.objects.get(entry_id="SEC-031")
    assert (entry.content, entry.topic, entry.source, entry.domain) == (
        text,
        "Password storage",
        "OWASP ASVS 2.4.1",
        knowledge["security"],
    )
    assert entry.last_verified == date.today()
    assert entry.embedding is not None and entry.embedded_hash == entry.content_hash


def test_correct_creates_a_new_entry_in_the_claims_domain(
    verifications: dict, knowledge: dict, reviewer_client: Client
) -> None:
    breach = verifications["breach"]
    text = "Controllers notify the supervisory authority within 72 hours of becoming aware of a breach."
    response = reviewer_client.post(
        _review_url(breach),
        {"action": "correct", "verdict": "contradicted", "correction": text, "entry_id": "gdpr-040"},
    )
    assert response.status_code == 303
    entry = KnowledgeEntry.objects.get(entry_id="GDPR-040")
    assert (entry.domain, entry.content, entry.topic, entry.source, entry.last_verified) == (
        knowledge["compliance"],
        text,
        text[:80],
        "Operator review",
        date.today(),
    )
    stored = Verification.objects.get(pk=breach.pk)
    assert (stored.review_status, stored.correction, stored.corrected_entry) == (
        ReviewStatus.CORRECTED,
        text,
        "GDPR-040",
    )


@pytest.mark.parametrize(
    ("form", "message"),
    [
        (
            {"action": "correct", "verdict": "contradicted", "correction": "   ", "entry_id": "SEC-031"},
            "A correction needs the corrected text.",
        ),
        (
            {
                "action": "correct",
                "verdict": "contradicted",
                "correction": "Use Argon2id.",
                "entry_id": "sec-1",
            },
            "&#x27;SEC-1&#x27; is not an entry id like SEC-001.",
        ),
        (
            {
                "action": "correct",
                "verdict": "contradicted",
                "correction": "Use Argon2id.",
                "entry_id": "GDPR-033",
            },
            "GDPR-033 belongs to the domain compliance, not security.",
        ),
        (
            {"action": "delete"},
            "Decision: Select a valid choice. delete is not one of the available choices.",
        ),
    ],
)
def test_refused_review_shows_the_message_and_changes_nothing(
    verifications: dict, reviewer_client: Client, form: dict, message: str
) -> None:
    md5 = verifications["md5"]
    entries_before = list(KnowledgeEntry.objects.order_by("entry_id").values_list("entry_id", "content"))

    response = reviewer_client.post(_review_url(md5), form, headers=HTMX)
    assert response.status_code == 200  # htmx swaps only 2xx responses
    content = response.content.decode()
    assert content.startswith(f'<tr id="verification-{md5.pk}"')
    assert f'<p class="notice notice-error" role="alert">{message}</p>' in content
    assert '<span class="badge status-pending">Pending review</span>' in content

    response = reviewer_client.post(_review_url(md5), form)
    assert response.status_code == 400
    assert f'<p class="notice notice-error" role="alert">{message}</p>' in response.content.decode()

    _unchanged(md5)
    assert (
        list(KnowledgeEntry.objects.order_by("entry_id").values_list("entry_id", "content")) == entries_before
    )


def test_refused_correction_keeps_what_was_typed(verifications: dict, reviewer_client: Client) -> None:
    md5 = verifications["md5"]
    form = {
        "action": "correct",
        "verdict": "contradicted",
        "correction": "Use <b>Argon2id</b>.",
        "entry_id": "sec-1",
        "note": "n",
    }
    content = reviewer_client.post(_review_url(md5), form, headers=HTMX).content.decode()
    assert "<details open>" in content
    assert ">Use &lt;b&gt;Argon2id&lt;/b&gt;.</textarea>" in content
    assert 'value="sec-1"' in content


# --- The queue: filters, pages, fragments --------------------------------------------------------


def test_queue_shows_pending_by_default_with_row_details(
    verifications: dict, reviewer_client: Client
) -> None:
    response = reviewer_client.get(QUEUE)
    assert response.status_code == 200
    # Pending: the verdict most likely to change (the lowest confidence, 0.4) first.
    assert _claims(response) == [
        "Passwords should be hashed with MD5.",
        "Controllers must notify the authority within 48 hours of a breach.",
    ]
    content = response.content.decode()
    assert "<html" in content and 'id="verification-filters"' in content
    assert '<option value="pending" selected>Pending review</option>' in content
    breach = verifications["breach"]
    row = re.search(rf'<tr id="verification-{breach.pk}".*?</tr>', content, re.S).group(0)
    assert f'<a href="/verifications/{breach.pk}">Controllers must notify' in row
    assert '<span class="badge badge-error">Contradicted</span>' in row
    assert "<td>compliance</td>" in row
    assert 'aria-label="Confidence 0.55, below the review threshold 0.70"' in row
    assert "<strong>0.55</strong> <small>below review threshold 0.70</small>" in row
    assert '<td><a href="/knowledge/GDPR-033"><code>GDPR-033</code></a></td>' in row
    assert '<time datetime="2024-05-01T10:04:00+00:00">2024-05-01 10:04</time>' in row
    assert row.count(f'hx-post="/verifications/{breach.pk}/review"') == 3
    assert row.count('<input type="hidden" name="next" value="/verifications">') == 3
    for action in ("approve", "reject", "correct"):
        assert f'<input type="hidden" name="action" value="{action}">' in row
    assert 'name="csrfmiddlewaretoken"' in row
    assert '<a href="/verifications" aria-current="page">Verifications</a>' in content


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"verdict": "contradicted"}, ["Controllers must notify the authority within 48 hours of a breach."]),
        ({"domain": "security"}, ["Passwords should be hashed with MD5."]),
        (
            {"status": "all", "domain": "security"},
            [
                "Passwords should be hashed with MD5.",
                "Passwords must be hashed with bcrypt or Argon2id.",
                "TLS 1.3 should be preferred.",
            ],
        ),
        ({"status": "approved"}, ["TLS 1.3 should be preferred."]),
        ({"status": "not_needed"}, ["Passwords must be hashed with bcrypt or Argon2id."]),
        (
            {"status": "all", "min_confidence": "0.6"},
            ["Passwords must be hashed with bcrypt or Argon2id.", "TLS 1.3 should be preferred."],
        ),
        (
            {"status": "all", "max_confidence": "0.55"},
            [
                "Controllers must notify the authority within 48 hours of a breach.",
                "Passwords should be hashed with MD5.",
            ],
        ),
        (
            {"status": "all", "min_confidence": "0.5", "max_confidence": "0.7"},
            [
                "Controllers must notify the authority within 48 hours of a breach.",
                "TLS 1.3 should be preferred.",
            ],
        ),
        (
            {"status": "all", "q": "PASSWORDS"},
            ["Passwords should be hashed with MD5.", "Passwords must be hashed with bcrypt or Argon2id."],
        ),
        ({"q": "bcrypt"}, []),
        ({"domain": "compliance", "verdict": "supported"}, []),
    ],
)
def test_queue_filters(
    verifications: dict, reviewer_client: Client, query: dict, expected: list[str]
) -> None:
    response = reviewer_client.get(QUEUE, query)
    assert response.status_code == 200
    assert _claims(response) == expected
    assert f"{len(expected)} verification{'' if len(expected) == 1 else 's'}." in response.content.decode()


def test_htmx_filter_returns_only_the_results_fragment(verifications: dict, reviewer_client: Client) -> None:
    response = reviewer_client.get(QUEUE, {"verdict": "unverified"}, headers=HTMX)
    assert response.status_code == 200
    content = response.content.decode()
    assert content.startswith('<div id="verification-results"')
    assert "<html" not in content and 'id="verification-filters"' not in content
    assert _claims(response) == ["Passwords should be hashed with MD5."]
    # The rows' "next" brings a non-HTMX review back to the same filters.
    assert '<input type="hidden" name="next" value="/verifications?verdict=unverified">' in content


def test_bad_filters_are_reported_and_the_rest_still_apply(
    verifications: dict, reviewer_client: Client
) -> None:
    response = reviewer_client.get(
        QUEUE, {"status": "all", "min_confidence": "0.9", "max_confidence": "0.5", "verdict": "supported"}
    )
    assert response.status_code == 200
    content = response.content.decode()
    assert "<li>max_confidence: Must not be below the lower bound.</li>" in content
    assert _claims(response) == ["Passwords must be hashed with bcrypt or Argon2id."]

    response = reviewer_client.get(QUEUE, {"min_confidence": "2", "status": "bogus"})
    content = response.content.decode()
    assert "<li>min_confidence: Ensure this value is less than or equal to 1.</li>" in content
    assert "<li>status: Select a valid choice. bogus is not one of the available choices.</li>" in content
    assert len(_claims(response)) == 2  # pending


def test_queue_pages_by_25(knowledge: dict, reviewer_client: Client) -> None:
    t0 = datetime(2024, 5, 1, tzinfo=UTC)
    for index in range(30):
        make_verification(f"Claim number {index:02d} must hold.", created=t0 + timedelta(minutes=index))
    first = reviewer_client.get(QUEUE)
    assert len(first.context["rows"]) == 25
    assert _claims(first)[0] == "Claim number 29 must hold."
    content = first.content.decode()
    assert "30 verifications." in content and "Page 1 of 2" in content
    assert '<a rel="next" href="?page=2"' in content
    second = reviewer_client.get(QUEUE, {"page": "2"}, headers=HTMX)
    assert _claims(second) == [f"Claim number {index:02d} must hold." for index in (4, 3, 2, 1, 0)]
    assert second.content.decode().startswith('<div id="verification-results"')


# --- One verification -----------------------------------------------------------------------------


def test_detail_shows_the_claim_beside_its_evidence(verifications: dict, reviewer: User) -> None:
    breach = verifications["breach"]
    Verification.objects.filter(pk=breach.pk).update(
        review_status=ReviewStatus.APPROVED,
        reviewer=reviewer,
        reviewed_at=datetime(2024, 5, 2, 9, 30, tzinfo=UTC),
        review_note="Art. 33 says 72 hours",
    )
    response = client_for(make_user("ana", "view_verification")).get(f"/verifications/{breach.pk}")
    assert response.status_code == 200
    content = response.content.decode()
    claim_column = content.index('class="claim-column"')
    evidence_column = content.index('class="evidence-column"')
    assert content.index('<div class="side-by-side">') < claim_column < evidence_column
    claim_part = content[claim_column:evidence_column]
    assert (
        '<p class="claim-text">Controllers must notify the authority within 48 hours of a breach.</p>'
        in claim_part
    )
    assert "<dt>Latency</dt><dd>42.5 ms</dd>" in claim_part
    assert f'<p class="correction">{GDPR_33}</p>' in claim_part

    evidence = content[evidence_column:]
    gdpr33 = re.search(
        r'<article class="evidence-item" data-entry-id="GDPR-033">.*?</article>', evidence, re.S
    )
    gdpr33 = gdpr33.group(0)
    assert (
        '<h3><a href="/knowledge/GDPR-033"><code>GDPR-033</code></a> '
        "Breach notification to the supervisory authority</h3>" in gdpr33
    )
    assert "Relevance 0.8123" in gdpr33
    assert (
        '<blockquote class="excerpt">not later than 72 hours after having become aware of it</blockquote>'
        in gdpr33
    )
    assert f'<dd class="entry-content">{GDPR_33}</dd>' in gdpr33
    assert (
        '<dd><a href="https://gdpr-info.eu/art-33-gdpr/" rel="noopener noreferrer">GDPR Article 33</a>'
        " (GDPR Requirements, priority 10)</dd>"
    ) in gdpr33
    assert "<dt>Confidence</dt><dd>0.98</dd>" in gdpr33
    assert '<dt>Last verified</dt><dd><time datetime="2024-01-15">2024-01-15</time></dd>' in gdpr33
    gdpr34 = re.search(r'data-entry-id="GDPR-034">.*?</article>', evidence, re.S).group(0)
    assert "<dd>GDPR Article 34</dd>" in gdpr34 and "javascript:" not in content  # only http(s) links
    assert "<dt>Last verified</dt><dd>never</dd>" in gdpr34
    gone = re.search(r'data-entry-id="GDPR-099">.*?</article>', evidence, re.S).group(0)
    assert "This entry is no longer in the knowledge base; the source was\n              Old pack." in gone

    assert '<tr><th scope="row">quantity</th><td>48 hours</td><td>72 hours</td></tr>' in content
    assert (
        '<li><a href="/knowledge/GDPR-033"><code>GDPR-033</code></a> '
        "Breach notification to the supervisory authority</li>" in content
    )
    assert "<li><code>GDPR-012</code> (not in the knowledge base)</li>" in content
    assert "<dt>Reviewer</dt><dd>rita</dd>" in content
    assert '<time datetime="2024-05-02T09:30:00+00:00">2024-05-02 09:30:00 UTC</time>' in content
    assert "<dt>Note</dt><dd>Art. 33 says 72 hours</dd>" in content
    assert "<dt>Message id</dt><dd><code>msg-42</code></dd>" in content
    assert "<dt>Summary</dt><dd>1 claim(s) checked: 1 contradicted.</dd>" in content


def test_detail_escapes_the_claim_and_stored_text(knowledge: dict, reviewer_client: Client) -> None:
    verification = make_verification(
        "<script>alert('claim')</script> must be escaped",
        created=datetime(2024, 5, 1, tzinfo=UTC),
        correction="<img src=x onerror=alert(1)>",
        signals=[{"type": "negation", "claim": "<b>not</b>", "evidence": "must"}],
        sources=[{"entry_id": "SEC-031", "content_excerpt": "<i>excerpt</i>", "relevance": 0.5}],
    )
    content = reviewer_client.get(f"/verifications/{verification.pk}").content.decode()
    assert "<script>alert" not in content and "<img src=x" not in content and "<i>excerpt" not in content
    assert "&lt;script&gt;alert(&#x27;claim&#x27;)&lt;/script&gt; must be escaped" in content
    assert "&lt;img src=x onerror=alert(1)&gt;" in content
    assert "<td>&lt;b&gt;not&lt;/b&gt;</td>" in content
    assert '<blockquote class="excerpt">&lt;i&gt;excerpt&lt;/i&gt;</blockquote>' in content
    assert "This claim was verified on its own, not as part of a message." in content
    queue = reviewer_client.get(QUEUE).content.decode()
    assert "&lt;script&gt;alert(&#x27;claim&#x27;)&lt;/script&gt; must be escaped" in queue
    assert "<script>alert" not in queue


def test_detail_review_form_posts_back_to_the_page(verifications: dict, reviewer_client: Client) -> None:
    md5 = verifications["md5"]
    url = f"/verifications/{md5.pk}"
    content = reviewer_client.get(url).content.decode()
    assert (
        f'<form class="live-form review-form" method="post" action="/verifications/{md5.pk}/review">'
        in content
    )
    assert f'<input type="hidden" name="next" value="{url}">' in content
    assert (
        '<textarea name="correction" cols="60" rows="3" maxlength="10000" id="id_correction">\n</textarea>'
        in (content)
    )
    response = reviewer_client.post(
        _review_url(md5), {"action": "reject", "verdict": "contradicted", "note": "MD5", "next": url}
    )
    assert (response.status_code, response["Location"]) == (303, url)
    content = reviewer_client.get(url).content.decode()
    assert "<dt>Status</dt><dd>Rejected</dd>" in content and "<dt>Reviewer</dt><dd>rita</dd>" in content
