"""Inputs that used to reach a 500 are refused at the edge with a 4xx saying what to fix (issue #23):
pagination numbers past what Postgres takes, JSON nested deep enough to exhaust the stack, and a
JSON body sent as a multipart form to the JSON APIs.

The write operations are read from the three live OpenAPI documents and the list routes from the
URL resolver, so a route added later is covered too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import get_resolver, reverse

from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401 - rows to page through

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("default_registry")]

BIGINT_PAST = str(2**63)  # one past Postgres's bigint: the limit reached SQL and failed there
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
DOCUMENTS = ("/v1/openapi.json", "/ontology-agent/openapi.json", "/api/openapi.json")
WRITE_METHODS = ("post", "put", "patch", "delete")


def _error(response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]


def _list_routes() -> list[str]:
    names = [name for name in get_resolver().reverse_dict if isinstance(name, str) and name.endswith("-list")]
    return sorted(url for url in map(reverse, names) if url.startswith("/api/"))


def _write_operations() -> list[tuple[str, str]]:
    """(method, concrete url) of every write operation of the three documents."""
    operations = []
    for document in DOCUMENTS:
        schema = Client().get(document).json()
        for path, methods in schema["paths"].items():
            url = path
            for placeholder in ("{run_id}", "{memory_id}", "{id}", "{slug}", "{entry_id}", "{arxiv_id}"):
                url = url.replace(placeholder, ZERO_UUID)
            operations += [(method, url) for method in methods if method in WRITE_METHODS]
    return sorted(set(operations))


# --- pagination ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "parameter", "bounds", "shown"),
    [
        (f"limit={BIGINT_PAST}", "limit", (1, 1000), BIGINT_PAST),
        (f"offset={BIGINT_PAST}", "offset", (0, 2**63 - 1), BIGINT_PAST),
        ("limit=0", "limit", (1, 1000), "0"),
        ("limit=1001", "limit", (1, 1000), "1001"),
        ("limit=-1", "limit", (1, 1000), "-1"),
        ("limit=false", "limit", (1, 1000), "false"),
        ("limit=", "limit", (1, 1000), ""),
        ("offset=1.5", "offset", (0, 2**63 - 1), "1.5"),
        ("offset=-5", "offset", (0, 2**63 - 1), "-5"),
    ],
)
def test_every_api_list_refuses_a_limit_or_offset_outside_its_range(
    admin_client_token: Client, query: str, parameter: str, bounds: tuple[int, int], shown: str
) -> None:
    minimum, maximum = bounds
    routes = _list_routes()
    assert {"/api/connectors/", "/api/events/", "/api/knowledge/", "/api/fact-runs/"} <= set(routes)
    for url in routes:
        response = admin_client_token.get(f"{url}?{query}")
        assert response.status_code == 400, (url, response.content[:300])
        assert _error(response) == {
            "code": "validation_error",
            "message": f"?{parameter}= takes a whole number from {minimum} to {maximum}, not {shown!r}.",
            "details": {"parameter": parameter, "minimum": minimum, "maximum": maximum},
        }, url


def test_limits_within_the_range_page_as_before(admin_client_token: Client) -> None:
    everything = admin_client_token.get("/api/connectors/?limit=1000").json()
    assert [row["slug"] for row in everything["results"]] == ["arxiv", "perplexity", "wikidata"]
    page = admin_client_token.get("/api/connectors/?limit=1&offset=2").json()
    assert (page["count"], [row["slug"] for row in page["results"]]) == (3, ["wikidata"])
    past_the_end = admin_client_token.get(f"/api/connectors/?offset={2**63 - 1}").json()
    assert (past_the_end["count"], past_the_end["results"]) == (3, [])


def test_the_api_document_states_the_ranges() -> None:
    schema = Client().get("/api/openapi.json").json()
    parameters = {p["name"]: p["schema"] for p in schema["paths"]["/api/events/"]["get"]["parameters"]}
    assert parameters["limit"] == {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}
    assert parameters["offset"] == {"type": "integer", "minimum": 0, "maximum": 2**63 - 1, "default": 0}


# --- nesting ---------------------------------------------------------------------------------------


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def test_json_nested_10000_deep_is_a_400_on_every_write_operation(admin_client_token: Client) -> None:
    operations = _write_operations()
    assert {
        ("post", "/api/connectors/"),
        ("post", "/v1/memory/tell"),
        ("post", "/ontology-agent/discover"),
    } <= set(operations)
    expected = {
        "code": "bad_request",
        "message": "The JSON in body is nested more than 64 levels deep; send a flatter document.",
        "details": {"maxDepth": 64, "path": "body"},
    }
    for body in ("[" * 10_000 + "]" * 10_000, _nested(10_000), "[" * 10_000):
        for method, url in operations:
            response = getattr(admin_client_token, method)(url, body, content_type="application/json")
            assert response.status_code == 400, (method, url, response.content[:300])
            assert _error(response) == expected, (method, url)


def test_json_nested_in_an_api_form_field_is_a_400_naming_it(admin_client_token: Client) -> None:
    response = admin_client_token.post(
        "/api/connectors/", {"slug": "x", "config": "[" * 10_000 + "]" * 10_000}
    )  # multipart: DRF parses a JSONField's value as JSON
    assert response.status_code == 400
    assert _error(response) == {
        "code": "bad_request",
        "message": "The JSON in body.config is nested more than 64 levels deep; send a flatter document.",
        "details": {"maxDepth": 64, "path": "body.config"},
    }


def test_64_levels_pass_the_edge_and_65_do_not(admin_client_token: Client) -> None:
    """At the limit the endpoint itself answers (here: the nested value is not text)."""
    at_limit = json.dumps({"text": json.loads(_nested(63))})  # 64 objects deep
    response = admin_client_token.post("/v1/memory/tell", at_limit, content_type="application/json")
    assert (response.status_code, _error(response)["code"]) == (422, "validation_error")
    past = json.dumps({"text": json.loads(_nested(64))})
    response = admin_client_token.post("/v1/memory/tell", past, content_type="application/json")
    assert (response.status_code, _error(response)["details"]) == (400, {"maxDepth": 64, "path": "body"})


def test_deeply_nested_json_to_a_page_is_a_400_page() -> None:
    response = Client().post("/facts", "[" * 10_000, content_type="application/json")
    assert response.status_code == 400
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert "nested more than 64 levels deep" in response.content.decode()


# --- content types ---------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/v1/memory/tell", "/ontology-agent/discover", "/v1/embeddings"])
@pytest.mark.parametrize(
    ("content_type", "media_type"),
    [
        ("multipart/form-data; boundary=zz", "multipart/form-data"),
        ("multipart/form-data", "multipart/form-data"),
        ("application/x-www-form-urlencoded", "application/x-www-form-urlencoded"),
        ("text/plain", "text/plain"),
    ],
)
def test_a_json_body_sent_as_a_form_to_a_json_api_is_a_415(
    admin_client_token: Client, url: str, content_type: str, media_type: str
) -> None:
    response = admin_client_token.post(
        url, json.dumps({"text": "x", "query": "x"}), content_type=content_type
    )
    assert response.status_code == 415, response.content[:300]
    assert _error(response) == {
        "code": "unsupported_media_type",
        "message": f"Send the body as JSON with 'Content-Type: application/json', not {media_type!r}.",
        "details": {"contentType": media_type, "accepted": ["application/json"]},
    }
