"""The /connectors page: the catalogue, HTMX chip filtering, drift badges, escaping (DESIGN §6)."""

from __future__ import annotations

import re

from django.test import Client

from apps.connectors.models import Connector, DriftState, RemoteTool

HTMX = {"HX-Request": "true"}


def _tool_rows(content: str) -> list[str]:
    return re.findall(r'<tr id="tool-([^"]+)">', content)


def _connector_ids(content: str) -> list[str]:
    return re.findall(r'<article class="connector[^"]*" id="connector-([^"]+)">', content)


def test_full_page_shows_the_catalogue(client: Client, default_registry: dict, monkeypatch) -> None:
    monkeypatch.delenv("WIKIDATA_MCP_URL", raising=False)
    response = client.get("/connectors")
    assert response.status_code == 200
    assert response["Vary"] == "HX-Request, Cookie"
    content = response.content.decode()
    assert content.startswith("<!doctype html>")
    assert '<script src="/static/django_htmx/htmx-2.min.js" defer></script>' in content
    assert '<link rel="stylesheet" href="/static/css/cortex.css">' in content
    assert re.search(r"""<body hx-headers='\{"X-CSRFToken": "[A-Za-z0-9]{64}"\}'>""", content)
    assert '<a href="/connectors" aria-current="page">Connectors</a>' in content
    assert '<a href="/admin/">Admin</a>' in content
    assert '<a href="/v1/connectors/service-map">raw signed map</a>' in content
    assert _connector_ids(content) == ["arxiv", "perplexity", "wikidata"]
    assert _tool_rows(content) == [
        "arxiv.search",
        "wikidata.vector_search_items",
        "wikidata.vector_search_properties",
        "wikidata.get_claims",
        "wikidata.sparql",
        "wikidata.get_hierarchy",
    ]
    assert "<dt>Endpoint</dt><dd><code>https://wd-mcp.wmcloud.org/mcp/</code></dd>" in content
    assert "<dt>Version</dt><dd>2026.04.07</dd>" in content
    assert '<span class="badge">disabled</span>' in content  # perplexity
    arxiv_description = "brAInwav arXiv integration: search arXiv papers by query, with paging and sorting"
    assert f"<td>{arxiv_description}</td>" in content
    tag_chips = re.findall(r'data-tag="([^"]+)"', content)
    assert tag_chips == sorted(tag_chips) and "provenance" in tag_chips
    assert re.findall(r'data-scope="([^"]+)"', content) == ["entities", "facts", "literature", "properties"]


def test_htmx_request_gets_only_the_fragment(client: Client, default_registry: dict) -> None:
    response = client.get("/connectors", {"tags": "provenance"}, headers=HTMX)
    assert response.status_code == 200
    content = response.content.decode()
    assert content.startswith('<div id="catalogue" class="catalogue" aria-live="polite">')
    assert "<html" not in content and "<body" not in content
    assert _tool_rows(content) == ["wikidata.get_claims", "wikidata.sparql"]


def test_chips_filter_by_every_chosen_tag_and_scope(client: Client, default_registry: dict) -> None:
    content = client.get("/connectors", {"tags": "wikidata,provenance"}).content.decode()
    assert _connector_ids(content) == ["wikidata"]
    assert _tool_rows(content) == ["wikidata.get_claims", "wikidata.sparql"]
    assert "2 tools with" in content

    content = client.get(
        "/connectors", {"tags": "wikidata", "scopes": "entities"}, headers=HTMX
    ).content.decode()
    assert _tool_rows(content) == ["wikidata.vector_search_items", "wikidata.get_hierarchy"]
    # Chosen chips are pressed and their link removes them; the others add themselves.
    assert re.search(
        r'<a class="chip chip-on" href="/connectors\?scopes=entities"\s+'
        r'hx-get="/connectors\?scopes=entities" hx-target="#catalogue" hx-swap="outerHTML" '
        r'hx-push-url="true"\s+aria-current="true" title="Remove this filter" data-tag="wikidata">',
        content,
    )
    assert 'href="/connectors?tags=papers%2Cwikidata&amp;scopes=entities"' in content
    assert 'href="/connectors?tags=wikidata"' in content  # the pressed scope chip's link drops it

    content = client.get("/connectors", {"tags": "arxiv", "scopes": "facts"}).content.decode()
    assert _connector_ids(content) == []
    assert "No tool matches these filters." in content


def test_drift_badges(client: Client, default_registry: dict) -> None:
    RemoteTool.objects.filter(name="wikidata.get_claims").update(drift=DriftState.MISSING_UPSTREAM)
    RemoteTool.objects.filter(name="wikidata.sparql").update(drift=DriftState.SCHEMA_CHANGED)
    RemoteTool.objects.filter(name="arxiv.search").update(drift=DriftState.IN_SYNC)
    Connector.objects.filter(slug="wikidata").update(
        undeclared_upstream_tools=["get_labels", "search_lexemes"], last_sync_error="Timed out after 5 s"
    )
    content = client.get("/connectors").content.decode()
    assert content.count('<span class="badge badge-error">missing upstream</span>') == 1
    assert content.count('<span class="badge badge-warn">schema changed</span>') == 1
    assert (
        '<span class="badge badge-warn" title="get_labels, search_lexemes">2 undeclared upstream tools</span>'
        in content
    )
    assert '<span class="badge badge-error">last sync failed</span>' in content
    assert '<dd class="sync-error">Timed out after 5 s</dd>' in content
    claims_row = content.split('<tr id="tool-wikidata.get_claims">')[1].split("</tr>")[0]
    assert "missing upstream" in claims_row


def test_data_is_escaped(client: Client, default_registry: dict) -> None:
    RemoteTool.objects.filter(name="arxiv.search").update(
        description='<script>alert("x")</script>', tags=["<b>bold</b>"]
    )
    content = client.get("/connectors").content.decode()
    assert "<script>alert" not in content and "<b>bold</b>" not in content
    assert "<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td>" in content
    assert 'data-tag="&lt;b&gt;bold&lt;/b&gt;"' in content


def test_empty_registry(client: Client, db: None) -> None:
    content = client.get("/connectors").content.decode()
    assert "No connectors yet; import a manifest in the admin." in content
