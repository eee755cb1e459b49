"""Importing knowledge: JSON and Markdown packs, every error listed, nothing half-imported,
re-embedding only what changed, hybrid search, and the CLI."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.core.errors import NotFound, ValidationFailed
from apps.knowledge import selectors, services
from apps.knowledge.models import KnowledgeDomain, KnowledgeEntry, KnowledgeSource

pytestmark = pytest.mark.django_db

ENTRIES = [
    {
        "id": "SEC-001",
        "topic": "Password storage",
        "content": "Passwords must be stored with a slow, salted hash such as Argon2id, scrypt or bcrypt; "
        "fast hashes such as MD5 or SHA-1 must never be used.",
        "source": "OWASP Password Storage Cheat Sheet",
        "url": "https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html",
        "tags": ["passwords", "hashing"],
        "related": ["SEC-002"],
        "confidence": 1.0,
        "last_verified": "2026-11-01",
    },
    {
        "id": "SEC-002",
        "topic": "SQL injection",
        "content": "Parameterised queries keep user input out of the SQL text and prevent SQL injection "
        "(CWE-89).",
        "source": "CWE-89",
        "url": "https://cwe.mitre.org/data/definitions/89.html",
    },
]


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_a_json_pack_is_imported_embedded_and_found(tmp_path: Path) -> None:
    path = _write(tmp_path, "owasp.json", {"source": {"name": "OWASP", "priority": 10}, "entries": ENTRIES})
    summary = services.pack_file_import(domain_name="security", path=path)
    assert (summary.created, summary.embedded) == (2, 2)
    source = KnowledgeSource.objects.get(name="OWASP")
    assert source.priority == 10 and source.domain.name == "security"
    entry = KnowledgeEntry.objects.get(entry_id="SEC-001")
    assert entry.embedding is not None and entry.embedded_hash == entry.content_hash
    assert entry.tags == ["passwords", "hashing"] and str(entry.last_verified) == "2026-11-01"
    hits = selectors.knowledge_search(query="how should passwords be hashed", domain="security")
    assert hits[0].entry.entry_id == "SEC-001" and hits[0].vector_rank == 1
    words = selectors.knowledge_search(query="parameterised queries", domain="security")
    assert words[0].entry.entry_id == "SEC-002" and words[0].text_rank == 1


def test_importing_again_changes_and_embeds_only_what_changed(tmp_path: Path) -> None:
    services.pack_file_import(domain_name="security", path=_write(tmp_path, "a.json", ENTRIES))
    changed = [
        dict(ENTRIES[0]),
        {**ENTRIES[1], "content": "Use bound parameters; never concatenate input into SQL."},
    ]
    summary = services.pack_file_import(domain_name="security", path=_write(tmp_path, "a.json", changed))
    assert (summary.created, summary.updated, summary.unchanged, summary.embedded) == (0, 1, 1, 1)


def test_a_bad_pack_lists_every_error_and_imports_nothing(tmp_path: Path) -> None:
    bad = [
        ENTRIES[0],
        {"id": "sec-1", "topic": "x", "content": "y", "source": "z"},
        {
            "id": "SEC-003",
            "topic": "",
            "content": "no topic",
            "source": "z",
            "url": "ftp://x",
            "confidence": 2,
        },
        {"id": "SEC-001", "topic": "dup", "content": "dup", "source": "z"},
        "not an object",
    ]
    with pytest.raises(ValidationFailed) as raised:
        services.pack_file_import(domain_name="security", path=_write(tmp_path, "bad.json", bad))
    paths = [error["path"] for error in raised.value.details["errors"]]
    assert paths == ["$[1].id", "$[2].topic", "$[2].url", "$[2].confidence", "$[3].id", "$[4]"]
    assert "nothing was imported" in raised.value.message
    assert KnowledgeEntry.objects.count() == 0 and not KnowledgeDomain.objects.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [("{not json", "not valid JSON"), ('{"entries": 5}', "JSON array of entries"), ("[]", "no entries")],
)
def test_malformed_files_are_refused_with_what_to_fix(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValidationFailed, match=message):
        services.pack_file_import(domain_name="security", path=_write(tmp_path, "bad.json", text))


def test_an_id_of_another_domain_is_refused(tmp_path: Path) -> None:
    services.pack_file_import(domain_name="security", path=_write(tmp_path, "a.json", ENTRIES))
    with pytest.raises(ValidationFailed, match="SEC-001 already belong"):
        services.pack_file_import(domain_name="compliance", path=_write(tmp_path, "b.json", ENTRIES[:1]))
    assert not KnowledgeDomain.objects.filter(name="compliance").exists()


def test_a_markdown_pack_is_split_by_headings(tmp_path: Path) -> None:
    markdown = """# Performance notes

## PERF-001: Binary search
Binary search finds an item in a sorted array in O(log n) comparisons.
source: Knuth, TAOCP vol. 3
url: https://en.wikipedia.org/wiki/Binary_search
tags: search, complexity

## PERF-002: Hash tables
Lookups in a hash table take O(1) time on average.
"""
    summary = services.pack_file_import(
        domain_name="performance", path=_write(tmp_path, "notes.md", markdown)
    )
    assert summary.created == 2
    first = KnowledgeEntry.objects.get(entry_id="PERF-001")
    assert first.topic == "Binary search" and first.source == "Knuth, TAOCP vol. 3"
    assert first.tags == ["search", "complexity"] and "O(log n)" in first.content
    assert KnowledgeEntry.objects.get(entry_id="PERF-002").source == "notes"  # the file's name by default


def test_unknown_domain_and_bad_domain_names(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="Unknown knowledge domain 'nope'"):
        selectors.knowledge_search(query="anything", domain="nope")
    with pytest.raises(ValidationFailed, match="not a domain name"):
        services.pack_file_import(domain_name="Bad Domain", path=_write(tmp_path, "a.json", ENTRIES))


def test_cli_add_search_update_and_errors(tmp_path: Path) -> None:
    out = StringIO()
    call_command("knowledge", "add", "security", str(_write(tmp_path, "a.json", ENTRIES)), stdout=out)
    assert "security/a: 2 created" in out.getvalue()
    out = StringIO()
    call_command("knowledge", "search", "MD5 passwords", "--domain", "security", stdout=out)
    assert out.getvalue().startswith("SEC-001")
    KnowledgeEntry.objects.filter(entry_id="SEC-002").update(embedded_hash="")
    out = StringIO()
    call_command("knowledge", "update", "security", stdout=out)
    assert "1 entries re-embedded" in out.getvalue()
    err = StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command(
            "knowledge", "add", "security", str(_write(tmp_path, "b.json", [{"id": "sec-1"}])), stderr=err
        )
    assert "$[0].id" in err.getvalue() and "$[0].topic" in err.getvalue()
    with pytest.raises(CommandError, match="No such file"):
        call_command("knowledge", "add", "security", str(tmp_path / "missing.json"))
    with pytest.raises(CommandError, match="Unknown knowledge domain"):
        call_command("knowledge", "update", "nope")
