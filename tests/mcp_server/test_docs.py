"""``docs/mcp.md`` is up to date with the MCP server's own tools, resources and prompt (regenerate it
with ``manage.py mcp_docs``), and the generator leaves the prose around its markers alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from apps.core.generated_docs import MarkersMissing
from apps.mcp_server.docs import BEGIN, END, mcp_docs_generated, mcp_docs_render
from apps.mcp_server.services import GROUND_ANSWER, RESOURCE_TEMPLATES, mcp_resources_list
from apps.mcp_server.tools import CORTEX_TOOLS

DOCS_PAGE = Path(settings.BASE_DIR) / "docs" / "mcp.md"


def test_the_page_is_up_to_date() -> None:
    current = DOCS_PAGE.read_text(encoding="utf-8")
    assert current == mcp_docs_render(current), "docs/mcp.md is stale: run manage.py mcp_docs"


def test_the_page_names_every_tool_resource_and_the_prompt() -> None:
    page = DOCS_PAGE.read_text(encoding="utf-8")
    generated = page[page.index(BEGIN) : page.index(END)]
    for tool in CORTEX_TOOLS:
        assert f"`{tool.name}`" in generated
    for resource in mcp_resources_list():
        assert f"`{resource['uri']}`" in generated
    for template in RESOURCE_TEMPLATES:
        assert f"`{template['uriTemplate']}`" in generated
    assert f"`{GROUND_ANSWER['name']}`" in generated


def test_generation_is_deterministic_and_keeps_the_prose() -> None:
    page = f"# Title\n\nprose before\n\n{BEGIN}\nstale\n{END}\n\nprose after\n"
    rendered = mcp_docs_render(page)
    assert rendered == mcp_docs_render(rendered)
    assert rendered == f"# Title\n\nprose before\n\n{mcp_docs_generated()}\nprose after\n"


def test_a_page_without_markers_is_refused() -> None:
    with pytest.raises(MarkersMissing):
        mcp_docs_render("# no markers here\n")


def test_check_fails_on_a_stale_page(tmp_path, monkeypatch) -> None:
    from apps.mcp_server.management.commands import mcp_docs

    stale = tmp_path / "mcp.md"
    stale.write_text(f"prose\n{BEGIN}\nold list\n{END}\n", encoding="utf-8")
    monkeypatch.setattr(mcp_docs.Command, "page", stale)
    with pytest.raises(CommandError, match="out of date"):
        call_command("mcp_docs", "--check")
    call_command("mcp_docs")
    call_command("mcp_docs", "--check")
    assert stale.read_text(encoding="utf-8") == mcp_docs_render(stale.read_text(encoding="utf-8"))
