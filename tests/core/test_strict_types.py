"""Values are taken only as the JSON type the OpenAPI documents state (issue #23: schemathesis found
lax parsing — ``false`` or ``"5"`` for a number, ``0`` for a boolean or a date — accepted).

/v1/ and /ontology-agent/ bodies are pydantic models on ``apps.core.schemas.StrictSchema`` (strict
mode); the writable /api/ serializers are ``apps.core.serializers.JsonModelSerializer`` (HTML forms of
the browsable API keep DRF's reading of text).
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401 - rows to write to

pytestmark = pytest.mark.django_db


def _fields(response) -> list[tuple[str, str]]:
    error = response.json()["error"]
    return [(field["path"], field["type"]) for field in error["details"]["fields"]]


@pytest.mark.parametrize(
    ("url", "body", "path", "kind"),
    [
        (
            "/v1/memory/ask",
            {"question": "What boils at 100 C?", "includeSuperseded": 0},
            "body.payload.includeSuperseded",
            "bool_type",
        ),
        (
            "/v1/memory/ask",
            {"question": "What boils at 100 C?", "limit": "5"},
            "body.payload.limit",
            "int_type",
        ),
        (
            "/v1/memory/ask",
            {"question": "What boils at 100 C?", "limit": False},
            "body.payload.limit",
            "int_type",
        ),
        (
            "/v1/memory/ask",
            {"question": "What boils at 100 C?", "limit": 2.5},
            "body.payload.limit",
            "int_type",
        ),
        (
            "/v1/memory/ask",
            {"question": "What boils at 100 C?", "threshold": "0.5"},
            "body.payload.threshold",
            "float_type",
        ),
        (
            "/v1/memory/ask",
            {"question": "What boils at 100 C?", "threshold": True},
            "body.payload.threshold",
            "float_type",
        ),
        ("/v1/memory/tell", {"content": "c", "pinned": "true"}, "body.payload.pinned", "bool_type"),
        ("/v1/memory/tell", {"content": "c", "supersedes": 5}, "body.payload.supersedes", "uuid_type"),
        (
            "/v1/facts/query",
            {"query": "What boils at 100 C?", "includeDeprecated": 0},
            "body.payload.includeDeprecated",
            "bool_type",
        ),
        (
            "/v1/arxiv/search",
            {"query": "What boils at 100 C?", "dateFrom": 0},
            "body.payload.dateFrom",
            "string_type",
        ),
        (
            "/v1/knowledge/search",
            {"query": "What boils at 100 C?", "limit": "10"},
            "body.payload.limit",
            "int_type",
        ),
        (
            "/ontology-agent/discover",
            {"query": "What boils at 100 C?", "limit": False},
            "body.payload.limit",
            "int_type",
        ),
    ],
)
def test_a_v1_body_value_of_another_json_type_is_a_422_naming_it(
    admin_client_token: Client, url: str, body: dict, path: str, kind: str
) -> None:
    response = admin_client_token.post(url, json.dumps(body), content_type="application/json")
    assert response.status_code == 422, response.content[:300]
    assert _fields(response) == [(path, kind)]


def test_json_types_are_still_read_as_before(admin_client_token: Client) -> None:
    """Dates and UUIDs as strings, an integer for a number, booleans as booleans."""
    body = {"content": "Water boils at 100 C.", "pinned": True, "importance": 1, "supersedes": None}
    told = admin_client_token.post("/v1/memory/tell", json.dumps(body), content_type="application/json")
    assert told.status_code == 200, told.content[:300]
    memory_id = told.json()["id"]
    pinned = admin_client_token.post(
        f"/v1/memory/{memory_id}/pin", json.dumps({"pinned": False}), content_type="application/json"
    )
    assert (pinned.status_code, pinned.json()["pinned"]) == (200, False)
    superseding = {"content": "Water boils at 100 C at sea level.", "supersedes": memory_id}
    response = admin_client_token.post(
        "/v1/memory/tell", json.dumps(superseding), content_type="application/json"
    )
    assert (response.status_code, response.json()["supersedes"]) == (200, memory_id), response.content[:300]


@pytest.mark.usefixtures("default_registry")
@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"enabled": "false"}, "enabled", "Must be a valid boolean."),
        ({"enabled": 0}, "enabled", "Must be a valid boolean."),
        ({"ttl_seconds": "60"}, "ttl_seconds", "A valid integer is required."),
        ({"ttl_seconds": True}, "ttl_seconds", "A valid integer is required."),
        ({"name": 5}, "name", "Not a valid string."),
        ({"scopes": [5]}, "scopes", "Not a valid string."),
    ],
)
def test_an_api_json_value_of_another_type_is_a_400_naming_it(
    admin_client_token: Client, body: dict, field: str, message: str
) -> None:
    response = admin_client_token.patch(
        "/api/connectors/arxiv/", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 400, response.content[:300]
    fields = response.json()["error"]["details"]["fields"]
    assert fields in ({field: [message]}, {field: {"0": [message]}})


@pytest.mark.usefixtures("default_registry")
def test_api_forms_and_json_types_are_read_as_before(admin_client_token: Client) -> None:
    response = admin_client_token.patch(
        "/api/connectors/arxiv/",
        json.dumps({"enabled": False, "ttl_seconds": 60}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content[:300]
    assert (response.json()["enabled"], response.json()["ttl_seconds"]) == (False, 60)
    form = admin_client_token.patch(
        "/api/connectors/arxiv/",
        "enabled=true&ttl_seconds=90",
        content_type="application/x-www-form-urlencoded",
    )
    assert form.status_code == 200, form.content[:300]
    assert (form.json()["enabled"], form.json()["ttl_seconds"]) == (True, 90)


def test_the_api_document_still_types_the_strict_fields() -> None:
    connector = Client().get("/api/openapi.json").json()["components"]["schemas"]["Connector"]["properties"]
    assert (connector["enabled"], connector["ttl_seconds"]["type"], connector["slug"]["type"]) == (
        {"type": "boolean"},
        "integer",
        "string",
    )
