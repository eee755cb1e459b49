"""The site's own 404, 403 and 500 pages (issue 26 item 6): the navigation, a search box that needs no
script, the page a mistyped address meant, and the error shape on the API paths as before."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.test import Client, RequestFactory

from apps.core import views
from tests.conftest import role_client
from tests.ontology.test_query_and_propose import ontology  # noqa: F401 - a fixture used below

pytestmark = pytest.mark.django_db

NAV = '<nav aria-label="Main">'
SEARCH = (
    '<form class="filter-form error-search" role="search" method="get" action="/ontology">',
    '<input type="search" name="q" id="error-search-q"',
    '<button type="submit" formaction="/knowledge">Search knowledge</button>',
    '<button type="submit" formaction="/papers">Search papers</button>',
)


def _branded(html: str) -> None:
    assert html.startswith("<!doctype html>")
    assert NAV in html and '<a class="brand" href="/">CortexWeb</a>' in html
    for piece in SEARCH:
        assert piece in html, piece
    main = html.split('<main id="main">')[1]
    assert "style=" not in main and "<script" not in main


@pytest.mark.parametrize(
    ("path", "label", "url"),
    [("/conectors", "Connectors", "/connectors"), ("/dashbord", "the dashboard", "/")],
)
def test_a_mistyped_page_is_the_branded_404_with_the_page_it_meant(path: str, label: str, url: str) -> None:
    for client in (Client(), role_client()):
        response = client.get(path)
        assert response.status_code == 404
        html = response.content.decode()
        _branded(html)
        assert "<title>Page not found · CortexWeb</title>" in html
        assert f"<p>There is no page at <code>{path}</code>.</p>" in html
        assert f'Did you mean <a href="{url}">{label}</a> (<code>{url}</code>)?' in html


def test_an_address_close_to_no_page_suggests_nothing() -> None:
    html = Client().get("/zzzqqq/1").content.decode()
    _branded(html)
    assert "Did you mean" not in html and "Resolver404" not in html


def test_an_unknown_memory_is_the_branded_404_saying_which() -> None:
    unknown = uuid.UUID("00000000-0000-4000-8000-000000000001")
    response = role_client("memory.view_memory").get(f"/memories/{unknown}")
    assert response.status_code == 404
    html = response.content.decode()
    _branded(html)
    assert f"<p>There is no page at <code>/memories/{unknown}</code>. No memory {unknown}.</p>" in html


def test_an_unknown_ontology_class_is_the_branded_404_saying_which(ontology: None) -> None:  # noqa: F811
    response = Client().get("/ontology/NoSuchClass")
    assert response.status_code == 404
    html = response.content.decode()
    _branded(html)
    assert (
        "<p>There is no page at <code>/ontology/NoSuchClass</code>. No ontology class NoSuchClass.</p>"
        in html
    )


def test_a_page_the_user_may_not_open_is_the_branded_403() -> None:
    response = role_client().get("/memories")  # staff without the memory role
    assert response.status_code == 403
    html = response.content.decode()
    _branded(html)
    assert "<h1>Not allowed</h1>" in html


def test_the_500_page_is_branded_and_reads_no_request() -> None:
    response = views.server_error(RequestFactory().get("/facts"))
    assert response.status_code == 500
    html = response.content.decode()
    _branded(html)
    assert "<h1>Something went wrong</h1>" in html
    assert not re.search(r'aria-current="page"', html)


def test_api_paths_keep_the_error_shape() -> None:
    response = Client().get("/api/nothing-here/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    api_500 = views.server_error(RequestFactory().get("/v1/facts"))
    assert api_500.status_code == 500
    assert json.loads(api_500.content)["error"] == {
        "code": "internal_error",
        "message": "An internal error occurred; it has been logged.",
        "details": {},
    }
