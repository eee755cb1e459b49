"""A grounded message's page (its claims' verifications, the knowledge injected, the summary), the
queue's counts per verdict, and the verification page's links to the message and to entries."""

from __future__ import annotations

import re
import uuid

import pytest

from apps.grounding.models import GroundingMessage, InjectionMode, ReviewStatus, Verdict, Verification
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry
from tests.conftest import role_client

pytestmark = pytest.mark.django_db

READER = "grounding.view_verification"
REVIEWER = "grounding.review_verification"
GUID = "Q42$D8404CDA-25E4-4334-AF13-A3290BCD9C0F"


@pytest.fixture
def message() -> GroundingMessage:
    base = KnowledgeBase.objects.create(name="default")
    security = KnowledgeDomain.objects.create(base=base, name="security")
    KnowledgeEntry.objects.create(
        entry_id="SEC-031",
        domain=security,
        topic="Password storage",
        content="Passwords must be stored with an adaptive one-way hash such as Argon2id, scrypt or bcrypt.",
        source="OWASP Password Storage Cheat Sheet",
        content_hash="x",
    )
    grounded = GroundingMessage.objects.create(
        original_message_id="msg-7",
        message="Passwords should be hashed with MD5.\nDouglas Adams was born in 1952.",
        mode=InjectionMode.AUTOMATIC,
        injected_knowledge=[
            {
                "topic": "Password storage",
                "content": "Passwords must be stored with an adaptive one-way hash such as Argon2id, "
                "scrypt or bcrypt.",
                "source": "OWASP Password Storage Cheat Sheet",
            }
        ],
        summary="2 claim(s) checked: 1 supported, 1 contradicted.",
        latency_ms=12.25,
    )
    Verification.objects.create(
        claim="Passwords should be hashed with MD5.",
        verdict=Verdict.CONTRADICTED,
        confidence=0.62,
        sources=[{"entry_id": "SEC-031", "content_excerpt": "adaptive one-way hash", "relevance": 0.8}],
        correction="Use Argon2id, scrypt or bcrypt.",
        latency_ms=5.0,
        message=grounded,
    )
    Verification.objects.create(
        claim="Douglas Adams was born in 1952.",
        verdict=Verdict.SUPPORTED,
        confidence=0.91,
        sources=[
            {
                "entry_id": f"wikidata:{GUID}",
                "content_excerpt": "Douglas Adams — date of birth — 1952-03-11",
                "relevance": 0.9,
                "qid": "Q42",
                "claimGuid": GUID,
                "propertyId": "P569",
                "factId": 5,
            }
        ],
        latency_ms=5.0,
        review_status=ReviewStatus.NOT_NEEDED,
        message=grounded,
    )
    return grounded


def test_the_message_page_shows_its_claims_and_injected_knowledge(message, django_assert_num_queries) -> None:
    client = role_client(READER)
    client.get(f"/verifications/messages/{message.pk}")
    # session, user, permissions (user, groups), the message, its verifications, the entries, the threshold.
    with django_assert_num_queries(8):
        response = client.get(f"/verifications/messages/{message.pk}")
    assert response.status_code == 200
    content = response.content.decode()
    assert "<p>2 claim(s) checked: 1 supported, 1 contradicted.</p>" in content
    assert "(the agent's id <code>msg-7</code>)" in content
    assert "Passwords should be hashed with MD5.<br>Douglas Adams was born in 1952." in content
    claims = re.findall(
        r'<tr data-verification-id="(\d+)">\s*<th scope="row"><a href="[^"]+">([^<]+)</a>', content
    )
    assert [claim for _, claim in claims] == [
        "Passwords should be hashed with MD5.",
        "Douglas Adams was born in 1952.",
    ]
    assert 'aria-label="Confidence 0.62, below the review threshold 0.70"' in content
    assert 'aria-label="Confidence 0.91, at or above the review threshold 0.70"' in content
    assert '<td><a href="/knowledge/SEC-031"><code>SEC-031</code></a></td>' in content
    # A Wikidata source links to its statement on the item's page.
    assert (
        f'<td><a href="https://www.wikidata.org/wiki/Q42#{GUID}" rel="noopener noreferrer">'
        f"<code>{GUID}</code></a></td>" in content
    )
    # The injected entry, linked by its topic and source to the entry that was the best source.
    assert '<h3><a href="/knowledge/SEC-031"><code>SEC-031</code></a> Password storage</h3>' in content


def test_the_verification_page_links_to_its_message(message) -> None:
    verification = message.verifications.get(verdict=Verdict.SUPPORTED)
    content = role_client(READER).get(f"/verifications/{verification.pk}").content.decode()
    assert f'<a href="/verifications/messages/{message.pk}">' in content
    assert f'<dt>Wikidata statement</dt><dd><a href="https://www.wikidata.org/wiki/Q42#{GUID}"' in content
    assert (
        '<dt>Item</dt><dd><a href="https://www.wikidata.org/wiki/Q42" rel="noopener noreferrer">'
        "<code>Q42</code></a></dd>" in content
    )
    assert '<a href="/facts/5">/facts/5</a>' in content
    assert "at or above" in content


def test_unknown_or_malformed_message_ids_answer_404(message) -> None:
    client = role_client(READER)
    response = client.get(f"/verifications/messages/{uuid.uuid4()}")
    assert response.status_code == 404
    assert "No grounded message has the id" in response.content.decode()
    assert client.get("/verifications/messages/not-a-uuid").status_code == 404


def test_the_message_page_needs_the_verification_role(message) -> None:
    assert role_client().get(f"/verifications/messages/{message.pk}").status_code == 403


def test_the_queue_counts_each_verdict_under_the_other_filters(message, django_assert_num_queries) -> None:
    client = role_client(REVIEWER)
    client.get("/verifications?status=all")
    # session, user, permissions (user, groups), threshold, domains, count, rows, verdict counts.
    with django_assert_num_queries(9):
        content = client.get("/verifications", {"status": "all", "verdict": "supported"}).content.decode()
    counts = re.findall(r'<span class="badge [\w-]+">(\w+)</span> <strong>(\d+)</strong>', content)
    assert counts == [("Supported", "1"), ("Contradicted", "1"), ("Unverified", "0")]
    assert 'aria-current="true"><span class="badge badge-ok">Supported</span>' in content
    # Pending only (the default): the confident one is not counted.
    content = client.get("/verifications").content.decode()
    counts = re.findall(r'<span class="badge [\w-]+">(\w+)</span> <strong>(\d+)</strong>', content)
    assert counts == [("Supported", "0"), ("Contradicted", "1"), ("Unverified", "0")]


def test_the_verification_page_costs_a_fixed_number_of_queries(message, django_assert_num_queries) -> None:
    verification = message.verifications.get(verdict=Verdict.CONTRADICTED)
    client = role_client(READER)
    client.get(f"/verifications/{verification.pk}")
    # session, user, permissions (user, groups), the verification with its domain, reviewer and message,
    # the entries it cites, the threshold.
    with django_assert_num_queries(7):
        response = client.get(f"/verifications/{verification.pk}")
    assert response.status_code == 200
