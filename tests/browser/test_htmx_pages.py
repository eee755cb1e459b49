"""HTMX pages in a real browser: fragments swapped in place, URLs pushed, no full reloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings

from apps.connectors.services import manifest_import

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def registry() -> None:
    manifest = json.loads((Path(settings.BASE_DIR) / "config" / "connectors.manifest.json").read_text())
    manifest_import(data=manifest)


def _tool_names(page) -> list[str]:
    return page.locator("table.tools tbody tr th code").all_inner_texts()


def test_catalogue_chips_filter_in_place_and_push_the_url(registry, live_server, page) -> None:
    page.goto(f"{live_server.url}/connectors")
    page.evaluate("window.loadedOnce = true")  # survives only if the page is never reloaded
    assert len(_tool_names(page)) == 6

    page.click("a.chip[data-tag='vector']")
    page.wait_for_url("**/connectors?tags=vector")
    page.wait_for_selector("a.chip-on[data-tag='vector']")
    assert _tool_names(page) == ["wikidata.vector_search_items", "wikidata.vector_search_properties"]

    page.click("a.chip[data-scope='facts']")
    page.wait_for_url("**/connectors?tags=vector&scopes=facts")
    page.wait_for_selector("a.chip-on[data-scope='facts']")
    assert _tool_names(page) == ["wikidata.vector_search_items"]
    assert page.evaluate("window.loadedOnce") is True

    page.go_back()  # the pushed history entry restores the previous filter
    page.wait_for_url("**/connectors?tags=vector")
    page.wait_for_function("document.querySelectorAll('table.tools tbody tr').length === 2")


def test_the_signed_map_link_serves_json(registry, live_server, page) -> None:
    page.goto(f"{live_server.url}/connectors")
    href = page.get_attribute("a[href='/v1/connectors/service-map']", "href")
    response = page.request.get(f"{live_server.url}{href}")
    assert response.status == 200
    assert response.json()["brand"] == "brAInwav"
