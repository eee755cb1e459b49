"""The knowledge and grounding admin: lists with counts, filters and search; importing a pack file
(every error listed, nothing imported on error; the embedding model runs for real); exporting entries
in the seed's shape; the grounding settings (one row, one pattern per line, regexes checked); agents;
and the read-only verification log."""

from __future__ import annotations

import json
import re
from datetime import date

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.grounding.models import (
    DEFAULT_CLAIM_PATTERNS,
    GroundingAgent,
    GroundingMessage,
    GroundingSettings,
    InjectionMode,
    Verdict,
    Verification,
)
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry, KnowledgeSource
from apps.knowledge.services import pack_parse_json

pytestmark = pytest.mark.django_db

ENTRIES = "/admin/knowledge/knowledgeentry/"
IMPORT = "/admin/knowledge/knowledgeentry/import/"
DOMAINS = "/admin/knowledge/knowledgedomain/"
SETTINGS = "/admin/grounding/groundingsettings/"

GOOD_PACK = {
    "source": {"name": "OWASP Top 10", "type": "json_file", "priority": 10},
    "entries": [
        {
            "id": "SEC-001",
            "topic": "Broken Access Control",
            "content": "Broken access control is ranked first in the OWASP Top 10 2021.",
            "source": "OWASP Top 10 2021",
            "url": "https://owasp.org/Top10/A01_2021-Broken_Access_Control/",
            "related": ["SEC-002"],
            "tags": ["owasp", "access-control"],
            "confidence": 0.95,
            "last_verified": "2024-03-01",
        },
        {
            "id": "SEC-002",
            "topic": "Cryptographic Failures",
            "content": "Cryptographic failures are ranked second in the OWASP Top 10 2021.",
            "source": "OWASP Top 10 2021",
        },
    ],
}
MARKDOWN_PACK = """# Performance patterns

## PERF-001: Binary search
Binary search finds an item in a sorted array in O(log n) time.
source: Introduction to Algorithms
tags: search, complexity
confidence: 0.9

## PERF-002: Hash table lookup
A hash table lookup takes O(1) time on average.
url: https://en.wikipedia.org/wiki/Hash_table
"""
BAD_PACK = {
    "entries": [
        {"id": "sec-1", "topic": "Lowercase id", "content": "x", "source": "s"},
        {"id": "SEC-003", "topic": "No content", "source": "s"},
        {
            "id": "SEC-004",
            "topic": "Bad",
            "content": "c",
            "source": "s",
            "url": "javascript:alert(1)",
            "confidence": 2,
        },
        {"id": "SEC-005", "topic": "Ok", "content": "c", "source": "s", "colour": "red"},
        {"id": "SEC-006", "topic": "Ok", "content": "c", "source": "s"},
        {"id": "SEC-006", "topic": "Again", "content": "c", "source": "s"},
    ]
}
BAD_PACK_ERRORS = [
    ("$[0].id", "'sec-1' is not an id like SEC-001 (^[A-Z]+-\\d{3}$)"),
    ("$[1].content", "is required and must be a non-empty string"),
    ("$[2].url", "must be an http(s) URL"),
    ("$[2].confidence", "must be a number from 0 to 1"),
    ("$[3]", "unknown field(s) colour"),
    ("$[5].id", "SEC-006 repeats $[4]"),
]


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def _upload(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="application/octet-stream")


def _download(response) -> dict:
    assert response["Content-Type"] == "application/json; charset=utf-8"
    return json.loads(response.content)


@pytest.fixture
def knowledge() -> dict[str, object]:
    base = KnowledgeBase.objects.create(name="default")
    security = KnowledgeDomain.objects.create(base=base, name="security")
    compliance = KnowledgeDomain.objects.create(base=base, name="compliance")
    owasp = KnowledgeSource.objects.create(
        domain=security, name="OWASP Top 10", location="owasp.json", priority=10
    )
    KnowledgeSource.objects.create(domain=security, name="CWE Database", location="cwe.json", priority=20)
    gdpr = KnowledgeSource.objects.create(
        domain=compliance, name="GDPR", location="gdpr.json", type="markdown"
    )
    entries = {
        "SEC-010": KnowledgeEntry.objects.create(
            entry_id="SEC-010",
            domain=security,
            knowledge_source=owasp,
            topic="Injection",
            content="Injection is ranked third in the OWASP Top 10 2021.",
            source="OWASP Top 10 2021",
            url="https://owasp.org/Top10/A03_2021-Injection/",
            related=["SEC-011"],
            tags=["owasp", "injection"],
            confidence=0.9,
            last_verified=date(2024, 2, 1),
        ),
        "SEC-011": KnowledgeEntry.objects.create(
            entry_id="SEC-011",
            domain=security,
            knowledge_source=owasp,
            topic="Insecure Design",
            content="Insecure design is ranked fourth in the OWASP Top 10 2021.",
            source="OWASP Top 10 2021",
            tags=["owasp"],
        ),
        "GDPR-033": KnowledgeEntry.objects.create(
            entry_id="GDPR-033",
            domain=compliance,
            knowledge_source=gdpr,
            topic="Breach notification",
            content="Notify the supervisory authority within 72 hours.",
            source="GDPR Article 33",
            tags=["breach"],
        ),
    }
    return {"base": base, "security": security, "compliance": compliance, "entries": entries}


# --- Lists --------------------------------------------------------------------------------------


def test_knowledge_changelists_show_counts(admin_client: Client, knowledge: dict) -> None:
    response = admin_client.get("/admin/knowledge/knowledgebase/")
    assert response.status_code == 200
    assert [base.domain_total for base in response.context["cl"].result_list] == [2]

    response = admin_client.get(DOMAINS)
    rows = {domain.name: domain for domain in response.context["cl"].result_list}
    assert {name: (d.entry_total, d.source_total) for name, d in rows.items()} == {
        "compliance": (1, 1),
        "security": (2, 2),
    }
    content = response.content.decode()
    security = knowledge["security"]
    assert f'<a href="{ENTRIES}?domain={security.pk}">2</a>' in content
    assert f'<a href="{DOMAINS}{security.pk}/export/">security.json</a>' in content

    response = admin_client.get("/admin/knowledge/knowledgesource/", {"domain__id__exact": security.pk})
    assert [(s.name, s.entry_total) for s in response.context["cl"].result_list] == [
        ("OWASP Top 10", 2),
        ("CWE Database", 0),
    ]
    response = admin_client.get("/admin/knowledge/knowledgesource/", {"type__exact": "markdown"})
    assert [s.name for s in response.context["cl"].result_list] == ["GDPR"]


def test_entry_changelist_columns_filters_and_search(admin_client: Client, knowledge: dict) -> None:
    response = admin_client.get(ENTRIES)
    assert response.status_code == 200
    content = response.content.decode()
    for column in ("entry_id", "topic_short", "domain_link", "source_short", "confidence", "last_verified"):
        assert re.search(rf'<th scope="col" class="(sortable )?column-{column}[ "]', content)
    assert f'<a href="{IMPORT}">Import entries</a>' in content
    assert '<option value="export_entries">Export the selected entries (JSON)</option>' in content

    def ids(**query: str) -> list[str]:
        return [entry.entry_id for entry in admin_client.get(ENTRIES, query).context["cl"].result_list]

    assert ids() == ["GDPR-033", "SEC-010", "SEC-011"]
    assert ids(domain__id__exact=str(knowledge["security"].pk)) == ["SEC-010", "SEC-011"]
    assert ids(tag="injection") == ["SEC-010"]
    assert ids(tag="owasp") == ["SEC-010", "SEC-011"]
    assert ids(embedded="no") == ["GDPR-033", "SEC-010", "SEC-011"]
    assert ids(embedded="yes") == []
    assert ids(q="SEC-011") == ["SEC-011"]
    assert ids(q="supervisory") == ["GDPR-033"]


def test_entry_change_page_hides_the_embedding_and_re_embeds_on_save(
    admin_client: Client, knowledge: dict
) -> None:
    entry = knowledge["entries"]["SEC-011"]
    url = f"{ENTRIES}{entry.pk}/change/"
    content = admin_client.get(url).content.decode()
    assert 'name="embedding"' not in content and 'name="content_hash"' not in content
    assert 'name="topic"' in content and 'name="tags"' in content
    response = admin_client.post(
        url,
        {
            "entry_id": "SEC-011",
            "domain": knowledge["security"].pk,
            "knowledge_source": entry.knowledge_source_id,
            "topic": "Insecure Design",
            "content": "Insecure design is ranked fourth in the OWASP Top 10 2021 list.",
            "source": "OWASP Top 10 2021",
            "url": "",
            "confidence": "0.8",
            "last_verified": "2024-04-01",
            "tags": "owasp,design",
            "related": "SEC-010",
        },
    )
    assert response.status_code == 302
    entry.refresh_from_db()
    assert entry.content == "Insecure design is ranked fourth in the OWASP Top 10 2021 list."
    assert (entry.tags, entry.related, entry.confidence) == (["owasp", "design"], ["SEC-010"], 0.8)
    assert entry.embedding is not None and entry.embedded_hash == entry.content_hash != ""


# --- Import ---------------------------------------------------------------------------------------


def test_import_json_pack_into_a_new_domain(admin_client: Client, knowledge: dict) -> None:
    response = admin_client.get(IMPORT)
    assert response.status_code == 200
    assert 'enctype="multipart/form-data"' in response.content.decode()

    response = admin_client.post(
        IMPORT,
        {"pack_file": _upload("owasp-top-10.json", json.dumps(GOOD_PACK)), "new_domain": "appsec"},
        follow=False,
    )
    assert response.status_code == 302
    domain = KnowledgeDomain.objects.get(name="appsec")
    assert response["Location"] == f"{ENTRIES}?domain={domain.pk}"
    assert _messages(response) == [
        "Imported appsec/OWASP Top 10: 2 created, 0 updated, 0 unchanged, 2 embedded."
    ]
    source = KnowledgeSource.objects.get(domain=domain)
    assert (source.name, source.type, source.location, source.priority) == (
        "OWASP Top 10",
        "json_file",
        "upload:owasp-top-10.json",
        10,
    )
    first = KnowledgeEntry.objects.get(entry_id="SEC-001")
    assert (first.domain, first.knowledge_source, first.topic, first.url, first.tags, first.related) == (
        domain,
        source,
        "Broken Access Control",
        "https://owasp.org/Top10/A01_2021-Broken_Access_Control/",
        ["owasp", "access-control"],
        ["SEC-002"],
    )
    assert (first.confidence, first.last_verified) == (0.95, date(2024, 3, 1))
    assert all(
        e.embedding is not None and e.embedded_hash == e.content_hash
        for e in KnowledgeEntry.objects.filter(domain=domain)
    )

    # The same file again changes nothing.
    response = admin_client.post(
        IMPORT, {"pack_file": _upload("owasp-top-10.json", json.dumps(GOOD_PACK)), "domain": "appsec"}
    )
    assert _messages(response)[-1] == (
        "Imported appsec/OWASP Top 10: 0 created, 0 updated, 2 unchanged, 0 embedded."
    )


def test_import_markdown_pack_into_an_existing_domain(admin_client: Client, knowledge: dict) -> None:
    performance = KnowledgeDomain.objects.create(base=knowledge["base"], name="performance")
    response = admin_client.post(
        IMPORT, {"pack_file": _upload("patterns.md", MARKDOWN_PACK), "domain": "performance"}
    )
    assert response.status_code == 302
    assert _messages(response) == [
        "Imported performance/patterns: 2 created, 0 updated, 0 unchanged, 2 embedded."
    ]
    entries = KnowledgeEntry.objects.filter(domain=performance).order_by("entry_id")
    assert [(e.entry_id, e.topic, e.content, e.source, e.tags, e.confidence) for e in entries] == [
        (
            "PERF-001",
            "Binary search",
            "Binary search finds an item in a sorted array in O(log n) time.",
            "Introduction to Algorithms",
            ["search", "complexity"],
            0.9,
        ),
        (
            "PERF-002",
            "Hash table lookup",
            "A hash table lookup takes O(1) time on average.",
            "patterns",
            [],
            1.0,
        ),
    ]
    assert KnowledgeSource.objects.get(domain=performance).type == "markdown"


def test_import_of_a_malformed_file_lists_every_error_and_imports_nothing(
    admin_client: Client, knowledge: dict
) -> None:
    before = KnowledgeEntry.objects.count()
    response = admin_client.post(
        IMPORT, {"pack_file": _upload("bad.json", json.dumps(BAD_PACK)), "new_domain": "newdomain"}
    )
    assert response.status_code == 200
    content = response.content.decode()
    assert "The knowledge file has 6 error(s), nothing was imported:" in content
    rows = re.findall(r"<tr><td><code>(.*?)</code></td><td>(.*?)</td></tr>", content)
    assert [(path, message.replace("&#x27;", "'")) for path, message in rows] == BAD_PACK_ERRORS
    assert KnowledgeEntry.objects.count() == before
    assert not KnowledgeDomain.objects.filter(name="newdomain").exists()
    assert not KnowledgeSource.objects.filter(location="upload:bad.json").exists()

    response = admin_client.post(
        IMPORT, {"pack_file": _upload("broken.json", '{"entries": ['), "domain": "security"}
    )
    content = response.content.decode()
    assert "The file is not valid JSON: Expecting value at line 1, column 14." in content
    assert "<tr><td><code>$</code></td><td>Expecting value</td></tr>" in content

    response = admin_client.post(
        IMPORT, {"pack_file": _upload("empty.md", "no headings here"), "domain": "security"}
    )
    assert "The Markdown file has no headings" in response.content.decode()
    assert KnowledgeEntry.objects.count() == before


def test_import_refuses_ids_of_another_domain_and_rolls_back(admin_client: Client, knowledge: dict) -> None:
    pack = {
        "entries": [{"id": "GDPR-033", "topic": "t", "content": "c", "source": "s"}, GOOD_PACK["entries"][1]]
    }
    response = admin_client.post(
        IMPORT, {"pack_file": _upload("clash.json", json.dumps(pack)), "new_domain": "other"}
    )
    assert response.status_code == 200
    content = response.content.decode()
    assert "Entry id(s) GDPR-033 already belong to another domain; nothing was imported." in content
    assert "<tr><td><code>GDPR-033</code></td><td>id used by another domain</td></tr>" in content
    assert not KnowledgeDomain.objects.filter(name="other").exists()
    assert not KnowledgeEntry.objects.filter(entry_id="SEC-002").exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"domain": "security", "new_domain": "appsec"}, "Choose a domain or name a new one, not both."),
        ({}, "Choose a domain or name a new one."),
        ({"new_domain": "App Sec"}, "Use lowercase letters, digits, - and _, starting with a letter."),
        ({"domain": "nope"}, "Select a valid choice. That choice is not one of the available choices."),
    ],
)
def test_import_form_errors(admin_client: Client, knowledge: dict, data: dict, message: str) -> None:
    response = admin_client.post(IMPORT, {"pack_file": _upload("p.json", json.dumps(GOOD_PACK)), **data})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not KnowledgeEntry.objects.filter(entry_id="SEC-001").exists()


def test_import_rejects_other_file_types(admin_client: Client, knowledge: dict) -> None:
    response = admin_client.post(IMPORT, {"pack_file": _upload("pack.yaml", "a: 1"), "domain": "security"})
    assert "Upload a .json, .md or .markdown file." in response.content.decode()


def test_import_needs_add_and_change_permissions(knowledge: dict) -> None:
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.set(
        Permission.objects.filter(codename__in=["view_knowledgeentry", "add_knowledgeentry"])
    )
    client = Client()
    client.force_login(viewer)
    assert client.get(IMPORT).status_code == 403
    assert f'href="{IMPORT}"' not in client.get(ENTRIES).content.decode()


# --- Export ---------------------------------------------------------------------------------------


EXPORTED_SEC_010 = {
    "id": "SEC-010",
    "topic": "Injection",
    "content": "Injection is ranked third in the OWASP Top 10 2021.",
    "source": "OWASP Top 10 2021",
    "url": "https://owasp.org/Top10/A03_2021-Injection/",
    "related": ["SEC-011"],
    "tags": ["owasp", "injection"],
    "confidence": 0.9,
    "last_verified": "2024-02-01",
}
EXPORTED_SEC_011 = {
    "id": "SEC-011",
    "topic": "Insecure Design",
    "content": "Insecure design is ranked fourth in the OWASP Top 10 2021.",
    "source": "OWASP Top 10 2021",
    "related": [],
    "tags": ["owasp"],
    "confidence": 1.0,
}


def test_export_action_downloads_the_selected_entries(admin_client: Client, knowledge: dict) -> None:
    entries = knowledge["entries"]
    response = admin_client.post(
        ENTRIES,
        {"action": "export_entries", "_selected_action": [entries["SEC-011"].pk, entries["SEC-010"].pk]},
    )
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="knowledge-entries.json"'
    exported = _download(response)
    assert exported == {"entries": [EXPORTED_SEC_010, EXPORTED_SEC_011]}
    # What is exported imports again.
    pack = pack_parse_json(response.content.decode())
    assert [(p.entry_id, p.url, p.last_verified) for p in pack.entries] == [
        ("SEC-010", "https://owasp.org/Top10/A03_2021-Injection/", date(2024, 2, 1)),
        ("SEC-011", "", None),
    ]


def test_export_all_entries_of_a_domain(admin_client: Client, knowledge: dict) -> None:
    security, compliance = knowledge["security"], knowledge["compliance"]
    response = admin_client.get(f"{DOMAINS}{security.pk}/export/")
    assert response["Content-Disposition"] == 'attachment; filename="security.json"'
    assert _download(response) == {"entries": [EXPORTED_SEC_010, EXPORTED_SEC_011]}

    response = admin_client.post(DOMAINS, {"action": "export_entries", "_selected_action": [compliance.pk]})
    assert response["Content-Disposition"] == 'attachment; filename="compliance.json"'
    assert [e["id"] for e in _download(response)["entries"]] == ["GDPR-033"]

    response = admin_client.post(
        DOMAINS, {"action": "export_entries", "_selected_action": [compliance.pk, security.pk]}
    )
    assert response["Content-Disposition"] == 'attachment; filename="knowledge-entries.json"'
    assert [e["id"] for e in _download(response)["entries"]] == ["GDPR-033", "SEC-010", "SEC-011"]
    assert admin_client.get(f"{DOMAINS}999999/export/").status_code == 404


# --- Grounding settings -----------------------------------------------------------------------


def _settings_form(**overrides: str) -> dict[str, str]:
    data = {
        "enabled": "on",
        "injection_mode": InjectionMode.ON_DETECTION,
        "trigger_patterns": "should be\nmust be\n",
        "claim_patterns": "\\b(?:must|should)\\b\n\\d{1,3} (?:days|hours)\n",
        "min_claim_length": "12",
        "confidence_threshold": "0.65",
    }
    data.update(overrides)
    return data


def test_grounding_settings_is_one_editable_row(admin_client: Client) -> None:
    assert not GroundingSettings.objects.exists()
    response = admin_client.get(SETTINGS)  # created with the seed's defaults on first visit
    row = GroundingSettings.objects.get()
    url = f"{SETTINGS}{row.pk}/change/"
    assert (response.status_code, response["Location"]) == (302, url)
    assert admin_client.get(SETTINGS)["Location"] == url
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    other = Client()
    other.force_login(staff)
    assert other.get(SETTINGS).status_code == 403
    assert admin_client.get(f"{SETTINGS}add/").status_code == 403
    assert admin_client.get(f"{SETTINGS}{row.pk}/delete/").status_code == 403

    content = admin_client.get(url).content.decode()
    textarea = re.search(r'<textarea name="claim_patterns"[^>]*>\n?(.*?)</textarea>', content, re.S).group(1)
    assert textarea.split("\n") == DEFAULT_CLAIM_PATTERNS
    assert "deletelink" not in content

    response = admin_client.post(url, _settings_form())
    assert response.status_code == 302
    row.refresh_from_db()
    # A comma inside a regex survives: one pattern per line.
    assert row.claim_patterns == ["\\b(?:must|should)\\b", "\\d{1,3} (?:days|hours)"]
    assert row.trigger_patterns == ["should be", "must be"]
    assert (row.injection_mode, row.min_claim_length, row.confidence_threshold) == ("on_detection", 12, 0.65)
    assert GroundingSettings.objects.count() == 1


def test_grounding_settings_rejects_an_invalid_regex(admin_client: Client) -> None:
    row = GroundingSettings.current()
    url = f"{SETTINGS}{row.pk}/change/"
    response = admin_client.post(url, _settings_form(claim_patterns="\\bmust\\b\n(unclosed\n[z-a]"))
    assert response.status_code == 200
    content = response.content.decode()
    assert (
        "<li>&#x27;(unclosed&#x27; is not a valid regular expression: "
        "missing ), unterminated subpattern at position 0.</li>"
    ) in content
    assert (
        "<li>&#x27;[z-a]&#x27; is not a valid regular expression: bad character range z-a at position 1.</li>"
        in (content)
    )
    row.refresh_from_db()
    assert row.claim_patterns == DEFAULT_CLAIM_PATTERNS
    assert row.injection_mode == InjectionMode.AUTOMATIC


# --- Grounding agents, messages, verifications ---------------------------------------------------


def test_grounding_agent_edits_keywords_per_line_and_sources(admin_client: Client, knowledge: dict) -> None:
    security = knowledge["security"]
    agent = GroundingAgent.objects.create(
        name="security-grounding-agent",
        domain=security,
        verification_keywords=["XSS"],
        applies_to_agents=["architect"],
    )
    response = admin_client.get("/admin/grounding/groundingagent/")
    assert response.status_code == 200
    assert '<td class="field-keywords">XSS</td>' in response.content.decode()
    url = f"/admin/grounding/groundingagent/{agent.pk}/change/"
    content = admin_client.get(url).content.decode()
    assert 'class="selectfilter" data-field-name="sources" data-is-stacked="0"' in content
    sources = list(KnowledgeSource.objects.filter(domain=security).values_list("pk", flat=True))
    response = admin_client.post(
        url,
        {
            "name": "security-grounding-agent",
            "domain": security.pk,
            "description": "Verifies security claims",
            "enabled": "on",
            "verification_keywords": "XSS\nSQL injection, blind\nO(n)\n",
            "applies_to_agents": "architect\ncode-reviewer",
            "sources": sources,
        },
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.verification_keywords == ["XSS", "SQL injection, blind", "O(n)"]
    assert agent.applies_to_agents == ["architect", "code-reviewer"]
    assert sorted(agent.sources.values_list("pk", flat=True)) == sorted(sources)


def test_verification_log_is_read_only_and_points_to_the_review_page(
    admin_client: Client, knowledge: dict
) -> None:
    message = GroundingMessage.objects.create(
        message="Passwords must use <b>MD5</b>.", mode=InjectionMode.AUTOMATIC, summary="1 claim(s) checked"
    )
    verification = Verification.objects.create(
        claim="Passwords must use <b>MD5</b>.",
        domain=knowledge["security"],
        verdict=Verdict.CONTRADICTED,
        confidence=0.6,
        sources=[{"entry_id": "SEC-010", "content_excerpt": "x", "relevance": 0.7}],
        latency_ms=10.0,
        message=message,
    )
    Verification.objects.create(
        claim="Other", verdict=Verdict.SUPPORTED, confidence=0.9, latency_ms=1.0, review_status="not_needed"
    )
    response = admin_client.get("/admin/grounding/verification/", {"verdict__exact": "contradicted"})
    assert [v.pk for v in response.context["cl"].result_list] == [verification.pk]
    response = admin_client.get("/admin/grounding/verification/", {"review_status__exact": "not_needed"})
    assert [v.claim for v in response.context["cl"].result_list] == ["Other"]
    response = admin_client.get(
        "/admin/grounding/verification/", {"domain__id__exact": knowledge["security"].pk}
    )
    assert [v.pk for v in response.context["cl"].result_list] == [verification.pk]
    assert admin_client.get("/admin/grounding/verification/add/").status_code == 403

    content = admin_client.get(f"/admin/grounding/verification/{verification.pk}/change/").content.decode()
    assert f'<a href="/verifications/{verification.pk}">/verifications/{verification.pk}</a>' in content
    assert 'name="claim"' not in content and 'name="review_status"' not in content
    assert "Passwords must use &lt;b&gt;MD5&lt;/b&gt;." in content

    content = admin_client.get(f"/admin/grounding/groundingmessage/{message.pk}/change/").content.decode()
    assert f'<a href="/verifications/{verification.pk}">' in content  # the inline
    assert 'name="message"' not in content


def test_verification_log_shows_and_filters_a_degraded_source(admin_client: Client) -> None:
    # #24: a verdict that rests on stored facts alone (Wikidata unreachable) says so in the admin.
    degraded = Verification.objects.create(
        claim="Marie Curie was born in Warsaw.", verdict=Verdict.UNVERIFIED, confidence=0.4, latency_ms=5.0,
        degraded=True, degraded_reason="Wikidata answered 503 three times",
    )  # fmt: skip
    Verification.objects.create(claim="Other", verdict=Verdict.UNVERIFIED, confidence=0.4, latency_ms=1.0)
    response = admin_client.get("/admin/grounding/verification/", {"degraded__exact": "1"})
    assert [v.pk for v in response.context["cl"].result_list] == [degraded.pk]
    content = admin_client.get(f"/admin/grounding/verification/{degraded.pk}/change/").content.decode()
    assert "Wikidata answered 503 three times" in content
