"""``docs/security.md`` is up to date with the permission table (regenerate it with
``manage.py security_docs``), and the generator leaves the prose around its markers alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from apps.core import security
from apps.core.generated_docs import MarkersMissing
from apps.core.security import BEGIN, END, security_docs_generated, security_docs_render

DOCS_PAGE = Path(settings.BASE_DIR) / "docs" / "security.md"


def test_the_page_is_up_to_date() -> None:
    current = DOCS_PAGE.read_text(encoding="utf-8")
    assert current == security_docs_render(current), "docs/security.md is stale: run manage.py security_docs"


def test_the_page_shows_every_operation_and_its_cells() -> None:
    page = DOCS_PAGE.read_text(encoding="utf-8")
    generated = page[page.index(BEGIN) : page.index(END)]
    assert (
        "| `POST /v1/facts/query` | `upstream` | 401 | 401 | 403 | 403 | allowed | 403 | allowed |"
        in generated
    )
    assert (
        "| `tools/call knowledge.verify` | `verify` | 401 | 401 | 403 | 403 | 403 | allowed | allowed |"
        in (generated)
    )
    assert (
        "| `POST /facts` | `wikidata.add_factrun` (rate-limited) | login | 403 | 403 | 403 | allowed "
        "| 403 | 403 | 403 | 403 | 403 | 403 | 403 | 403 | 403 | 403 | allowed |"
    ) in generated
    for operation in (*security.HTTP_OPERATIONS, *security.MCP_OPERATIONS, *security.PAGE_OPERATIONS):
        assert f"| `{operation.name}` |" in generated
    assert (
        "72 × 7 over HTTP, 31 × 7 over each MCP transport, 38 × 16 pages and 28 × 16 `/api/` sessions: "
        "1994 cells." in generated
    )
    # Reviews are scriptable (issue #24) for admin tokens and reviewers' sessions, nobody else.
    assert (
        "| `POST /api/verifications/{id}/review/` | `admin` | 401 | 401 | 403 | 403 | 403 | 403 | allowed |"
        in generated
    )
    assert (
        "| `GET /api/verifications/` | `grounding.view_verification` or "
        "`grounding.review_verification` | 401 | 403 | 403 | 403 | 403 | 403 | 403 | allowed | allowed "
        "| 403 | 403 | 403 | 403 | 403 | 403 | allowed |"
    ) in generated
    # Sync and "Try this tool": the admin's permission, on staff only; the pages themselves are public.
    assert (
        "| `POST /connectors/tools/<name>/try` | `connectors.change_connector` (rate-limited) | login | 403 "
        "| 403 | 403 | 403 | 403 | 403 | 403 | 403 | 403 | 403 | 403 | 403 | 403 | allowed | allowed |"
    ) in generated
    for operation in security.API_SESSION_OPERATIONS:
        assert generated.count(f"| `{operation.name}` |") == 2  # its token row and its session row


def test_generation_is_deterministic_and_keeps_the_prose() -> None:
    page = f"# Title\n\nprose before\n\n{BEGIN}\nstale\n{END}\n\nprose after\n"
    rendered = security_docs_render(page)
    assert rendered == security_docs_render(rendered)
    assert rendered == f"# Title\n\nprose before\n\n{security_docs_generated()}\nprose after\n"


def test_a_page_without_markers_is_refused() -> None:
    with pytest.raises(MarkersMissing):
        security_docs_render("# no markers here\n")


def test_check_fails_on_a_stale_page(tmp_path, monkeypatch) -> None:
    from apps.core.management.commands import security_docs

    stale = tmp_path / "security.md"
    stale.write_text(f"prose\n{BEGIN}\nold table\n{END}\n", encoding="utf-8")
    monkeypatch.setattr(security_docs.Command, "page", stale)
    with pytest.raises(CommandError, match="out of date"):
        call_command("security_docs", "--check")
    call_command("security_docs")
    call_command("security_docs", "--check")
    assert stale.read_text(encoding="utf-8") == security_docs_render(stale.read_text(encoding="utf-8"))
