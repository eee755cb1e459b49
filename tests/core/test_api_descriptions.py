"""``/api/`` shows its views' descriptions as text (issue 26 item 6): the reStructuredText literals of the
docstrings (``?name=``) become ``<code>`` on the browsable pages and single backticks in JSON, never raw
double backticks."""

from __future__ import annotations

import pytest

from tests.conftest import role_client

pytestmark = pytest.mark.django_db

HTML = {"Accept": "text/html"}


def test_the_index_and_a_resource_page_show_code_not_backticks() -> None:
    client = role_client()
    index = client.get("/api/", headers=HTML)
    assert index.status_code == 200
    html = index.content.decode()
    assert "``" not in html
    assert (
        "<p>The index of <code>/api/</code>: any staff session may read it (what it lists, each resource "
        "decides).</p>" in html
    )
    events = client.get("/api/events/", headers=HTML).content.decode()
    assert "``" not in events
    assert (
        "<p>Stored events, newest first; filter with <code>?name=</code> and "
        "<code>?correlation_id=</code>.</p>" in events
    )


def test_a_docstring_over_several_lines_is_one_paragraph_in_json() -> None:
    response = role_client("wikidata.view_factrun").options(
        "/api/fact-runs/", headers={"Accept": "application/json"}
    )
    assert response.status_code == 200, response.content
    assert response.json()["description"] == (
        "Fact runs, newest first; filter with `?status=`, `?degraded=true|false` and `?purpose=` "
        "(`question`, or `verification`: made on a grounding verification's behalf)."
    )
