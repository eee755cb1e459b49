"""``knowledge add`` with Markdown headings that are not ``## SEC-001: Topic`` (issue 26 item 6): an id
written under the heading in the ways editors write it is read, and a heading like ``## sec-7`` is told
what is wrong with it, never "id: is required" as if there were no id."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.knowledge.models import KnowledgeEntry

pytestmark = pytest.mark.django_db


def _pack(tmp_path: Path, section: str) -> Path:
    path = tmp_path / "notes.md"
    path.write_text(
        "# Session notes\n\n## SEC-006: Session fixation\nRotate the session id at login.\n\n" + section,
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("id_line", ["id: SEC-007", "- id: SEC-007", "**id:** SEC-007", "id : SEC-007"])
def test_an_id_line_under_a_heading_is_read_however_it_is_written(tmp_path: Path, id_line: str) -> None:
    out = StringIO()
    section = f"## sec-7\n{id_line}\nsource: OWASP ASVS\nSession ids expire after inactivity.\n"
    call_command("knowledge", "add", "security", str(_pack(tmp_path, section)), stdout=out)
    assert "security/notes: 2 created" in out.getvalue()
    entry = KnowledgeEntry.objects.get(entry_id="SEC-007")
    assert (entry.topic, entry.source, entry.content) == (
        "sec-7",
        "OWASP ASVS",
        "Session ids expire after inactivity.",
    )


def test_a_heading_sec_7_is_told_it_is_not_an_id_and_what_is(tmp_path: Path) -> None:
    section = "## sec-7\nSession ids expire after inactivity.\n"
    err = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("knowledge", "add", "security", str(_pack(tmp_path, section)), stderr=err)
    message = (
        "line 6.id: 'sec-7' in the heading is not an id: an id is capital letters, a hyphen and three digits "
        "(SEC-007?); write the heading as '## SEC-007: Topic', or add a line 'id: SEC-007' under it"
    )
    assert message in str(raised.value)
    assert "is required" not in str(raised.value)
    assert not KnowledgeEntry.objects.exists()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            "## SEC-007\nSession ids expire.\n",
            "line 6.topic: is missing: the heading names only the id; write it as '## SEC-007: Topic'",
        ),
        (
            "## Session expiry\nSession ids expire.\n",
            "line 6.id: is missing: the heading 'Session expiry' names no id; start it with one "
            "('## SEC-001: Session expiry') or add a line 'id: SEC-001' under it",
        ),
    ],
)
def test_a_heading_without_an_id_or_topic_says_how_to_write_it(
    tmp_path: Path, section: str, message: str
) -> None:
    with pytest.raises(CommandError) as raised:
        call_command("knowledge", "add", "security", str(_pack(tmp_path, section)))
    assert message in str(raised.value)
