"""``/api/`` in a browser: a staff session beside bearer tokens (CSRF on unsafe methods), the
knowledge, verification and paper resources, their filters, and CSV output."""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime

import pytest
from django.test import Client

from apps.arxiv.models import Paper
from apps.core.renderers import csv_cell
from apps.grounding.models import GroundingMessage, ReviewStatus, Verdict, Verification
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry
from apps.memory.models import Memory
from apps.memory.services import Scope, TellItem, memory_tell
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

VIEW_VERIFICATION = "grounding.view_verification"


@pytest.fixture
def rows() -> dict[str, object]:
    base = KnowledgeBase.objects.create(name="default")
    security = KnowledgeDomain.objects.create(base=base, name="security")
    compliance = KnowledgeDomain.objects.create(base=base, name="compliance")
    sec = KnowledgeEntry.objects.create(
        entry_id="SEC-001",
        domain=security,
        topic="Password storage",
        content='=HYPERLINK("http://evil") store passwords with a slow hash',
        source="OWASP",
        tags=["passwords", "hashing"],
        last_verified=date(2024, 5, 1),
        content_hash="x",
    )
    gdpr = KnowledgeEntry.objects.create(
        entry_id="GDPR-001",
        domain=compliance,
        topic="Breach notice",
        content="Notify within 72 hours.",
        source="GDPR Art. 33",
        tags=["breach"],
        content_hash="y",
    )
    message = GroundingMessage.objects.create(original_message_id="m-1", message="hi", summary="s")
    supported = Verification.objects.create(
        claim="Passwords are hashed.",
        domain=security,
        verdict=Verdict.SUPPORTED,
        confidence=0.9,
        sources=[{"entry_id": "SEC-001", "content_excerpt": "slow hash", "relevance": 0.8}],
        latency_ms=3.0,
        message=message,
        review_status=ReviewStatus.NOT_NEEDED,
    )
    contradicted = Verification.objects.create(
        claim="Breaches need no notice.",
        domain=compliance,
        verdict=Verdict.CONTRADICTED,
        confidence=0.4,
        latency_ms=2.0,
        review_status=ReviewStatus.PENDING,
    )
    paper = Paper.objects.create(
        arxiv_id="2401.12345",
        title="Attention",
        summary="s",
        authors=["Ada"],
        published=datetime(2024, 1, 20, tzinfo=UTC),
        updated=datetime(2024, 1, 20, tzinfo=UTC),
        url="https://arxiv.org/abs/2401.12345",
        categories=["cs.CL", "cs.LG"],
        primary_category="cs.CL",
    )
    old = Paper.objects.create(
        arxiv_id="hep-th/9901001",
        title="Strings",
        summary="s",
        authors=["Bob"],
        published=datetime(1999, 1, 1, tzinfo=UTC),
        updated=datetime(1999, 1, 1, tzinfo=UTC),
        url="https://arxiv.org/abs/hep-th/9901001",
        categories=["hep-th"],
        primary_category="hep-th",
    )
    return {
        "sec": sec,
        "gdpr": gdpr,
        "supported": supported,
        "contradicted": contradicted,
        "message": message,
        "paper": paper,
        "old": old,
    }


def staff(*perms: str, username: str = "analyst", **options: object) -> Client:
    client = Client(**options)
    client.force_login(make_user(username, *perms))
    return client


# --- Who gets in ------------------------------------------------------------------------------------


def test_a_staff_session_reads_the_api_as_json_and_in_the_browser(rows) -> None:
    client = staff(VIEW_VERIFICATION)
    response = client.get("/api/verifications/")
    assert response.status_code == 200
    assert [row["claim"] for row in response.json()["results"]] == [
        "Breaches need no notice.",
        "Passwords are hashed.",
    ]
    page = client.get("/api/", HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    assert page["Content-Type"] == "text/html; charset=utf-8"
    for resource in ("knowledge", "verifications", "papers", "memories"):
        assert f"http://testserver/api/{resource}/" in page.content.decode()


def test_a_staff_user_without_the_role_gets_403_and_anonymous_401(rows) -> None:
    response = staff().get("/api/verifications/")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert staff(username="other").get("/api/knowledge/").status_code == 200  # any staff
    anonymous = Client().get("/api/knowledge/")
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"] == 'Bearer realm="cortexweb"'
    not_staff = Client()
    not_staff.force_login(make_user("visitor", VIEW_VERIFICATION, is_staff=False))
    assert not_staff.get("/api/verifications/").status_code == 403


def test_a_bearer_token_still_works_and_wins_over_the_session(rows, make_token) -> None:
    _, raw = make_token("read")
    response = Client(headers={"Authorization": f"Bearer {raw}"}).get("/api/verifications/")
    assert response.status_code == 200
    assert response.json()["count"] == 2
    # A role-less staff session sending a read token reads with the token.
    client = staff(headers={"Authorization": f"Bearer {raw}"})
    assert client.get("/api/verifications/").status_code == 200
    bad = staff(VIEW_VERIFICATION, username="x", headers={"Authorization": "Bearer cwt_nope"})
    assert bad.get("/api/verifications/").status_code == 401


def test_a_session_post_needs_the_csrf_token(db) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("root", is_superuser=True))
    refused = client.post("/api/connectors/", {}, content_type="application/json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
    assert "CSRF" in refused.json()["error"]["message"]
    client.get("/api/", HTTP_ACCEPT="text/html")  # the browsable API sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    accepted = client.post("/api/connectors/", {}, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 400  # past CSRF and permissions: the empty body is refused
    assert accepted.json()["error"]["code"] == "validation_error"


def test_a_session_write_needs_the_model_permission(db) -> None:
    client = staff("connectors.view_connector")
    assert client.post("/api/connectors/", {}, content_type="application/json").status_code == 403
    writer = staff("connectors.add_connector", username="writer")
    assert writer.post("/api/connectors/", {}, content_type="application/json").status_code == 400


def test_memories_a_token_sees_its_own_a_session_every_one(make_token) -> None:
    ops, _ = make_token("read", "write", name="ops")
    travel, raw_travel = make_token("read", "write", name="travel")
    for token, text in ((ops, "The staging database runs in Dublin."), (travel, "Flights go via Lisbon.")):
        memory_tell(scope=Scope(token=token), items=[TellItem(content=text)])
    own = Client(headers={"Authorization": f"Bearer {raw_travel}"}).get("/api/memories/").json()
    assert [row["content"] for row in own["results"]] == ["Flights go via Lisbon."]
    every = staff("memory.view_memory").get("/api/memories/").json()
    assert sorted(row["content"] for row in every["results"]) == sorted(
        Memory.objects.values_list("content", flat=True)
    )
    assert every["count"] == 2
    assert staff(username="nobody").get("/api/memories/").status_code == 403


# --- The resources and their filters ---------------------------------------------------------------


def test_knowledge_entries_by_entry_id_with_filters(rows) -> None:
    client = staff()
    entry = client.get("/api/knowledge/SEC-001/").json()
    assert entry["domain"] == "security"
    assert entry["tags"] == ["passwords", "hashing"]
    assert entry["last_verified"] == "2024-05-01"

    def ids(query: str) -> list[str]:
        return [row["entry_id"] for row in client.get(f"/api/knowledge/?{query}").json()["results"]]

    assert ids("") == ["GDPR-001", "SEC-001"]
    assert ids("domain=security") == ["SEC-001"]
    assert ids("tag=breach") == ["GDPR-001"]
    assert ids("source=OWASP") == ["SEC-001"]
    assert ids("domain=nope") == []


def test_verifications_with_filters(rows) -> None:
    client = staff(VIEW_VERIFICATION)

    def claims(query: str) -> list[str]:
        return [row["claim"] for row in client.get(f"/api/verifications/?{query}").json()["results"]]

    assert claims("verdict=supported") == ["Passwords are hashed."]
    assert claims("review_status=pending") == ["Breaches need no notice."]
    assert claims("domain=compliance") == ["Breaches need no notice."]
    assert claims(f"message={rows['message'].pk}") == ["Passwords are hashed."]
    detail = client.get(f"/api/verifications/{rows['supported'].pk}/").json()
    assert detail["message"] == str(rows["message"].pk)
    assert detail["domain"] == "security"
    bad = client.get("/api/verifications/?verdict=maybe")
    assert bad.status_code == 400
    assert bad.json()["error"]["details"] == {"parameter": "verdict"}


def test_papers_by_arxiv_id_old_and_new_style(rows) -> None:
    client = staff()
    assert client.get("/api/papers/2401.12345/").json()["title"] == "Attention"
    assert client.get("/api/papers/hep-th/9901001/").json()["title"] == "Strings"
    listed = client.get("/api/papers/?category=cs.LG").json()["results"]
    assert [row["arxiv_id"] for row in listed] == ["2401.12345"]
    assert [row["arxiv_id"] for row in client.get("/api/papers/").json()["results"]] == [
        "2401.12345",
        "hep-th/9901001",
    ]


# --- CSV ----------------------------------------------------------------------------------------------


def test_csv_output_of_a_list_and_of_one_row(rows) -> None:
    client = staff()
    response = client.get("/api/knowledge/?format=csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'inline; filename="knowledge-entry.csv"'
    table = list(csv.reader(io.StringIO(response.content.decode())))
    assert table[0] == [
        "entry_id", "domain", "knowledge_source", "topic", "content", "source", "url", "related", "tags",
        "confidence", "last_verified", "created_at", "updated_at",
    ]  # fmt: skip
    assert [row[0] for row in table[1:]] == ["GDPR-001", "SEC-001"]
    sec = dict(zip(table[0], table[2], strict=True))
    assert sec["tags"] == '["passwords","hashing"]'
    assert sec["content"] == '\'=HYPERLINK("http://evil") store passwords with a slow hash'  # no formula
    one = client.get("/api/papers/2401.12345/", HTTP_ACCEPT="text/csv")
    assert one["Content-Type"] == "text/csv; charset=utf-8"
    assert len(list(csv.reader(io.StringIO(one.content.decode())))) == 2


def test_csv_of_an_error_is_the_error_shape(rows) -> None:
    response = staff().get("/api/verifications/?format=csv")
    assert response.status_code == 403
    table = list(csv.reader(io.StringIO(response.content.decode())))
    assert table[0] == ["error"]


def test_csv_cells() -> None:
    assert [csv_cell(value) for value in (None, True, 1.5, -2, "-x", "@me", {"a": [1]}, "plain")] == [
        "", "true", "1.5", "-2", "'-x", "'@me", '{"a":[1]}', "plain",
    ]  # fmt: skip
