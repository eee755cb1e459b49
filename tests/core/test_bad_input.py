"""Bad input on every /v1/ POST endpoint: a 4xx in the error shape, never a 500.

The endpoints are read from the live OpenAPI document, so every endpoint a
later change adds is swept too.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from cortexweb.api import api

ZERO_UUID = "00000000-0000-0000-0000-000000000000"

pytestmark = pytest.mark.django_db


def _post_operations() -> list[str]:
    schema = api.get_openapi_schema()
    return sorted(concrete_path(path) for path, operations in schema["paths"].items() if "post" in operations)


def concrete_path(path: str) -> str:
    """An operation's path with a (well-formed, unknown) UUID for each of its ids."""
    return path.replace("{run_id}", ZERO_UUID).replace("{memory_id}", ZERO_UUID)


def _assert_error_shape(response, statuses: set[int]) -> dict:
    assert response.status_code in statuses, (response.status_code, response.content[:500])
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["message"]
    return body["error"]


def test_there_are_post_endpoints_to_sweep() -> None:
    assert {"/v1/embeddings", "/v1/tools/call", "/v1/agents/plan"} <= set(_post_operations())


@pytest.mark.parametrize(
    ("name", "body", "content_type"),
    [
        ("unknown field", {"input": ["hello"], "unexpected": 1}, "application/json"),
        ("wrong type", {"input": "not-a-list"}, "application/json"),
        ("wrong item type", {"input": [1, {"a": 2}]}, "application/json"),
        ("missing fields", {}, "application/json"),
        ("null body", None, "application/json"),
        ("not json", "{not json", "application/json"),
        ("array body", [1, 2, 3], "application/json"),
    ],
)
def test_malformed_bodies_get_a_4xx_in_the_error_shape(
    make_token, name: str, body, content_type: str
) -> None:
    _, raw = make_token("admin")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    for path in _post_operations():
        data = body if isinstance(body, str) else json.dumps(body)
        # A body with nothing wrong once defaults apply ({} for forget, pin) reaches the unknown id: 404.
        statuses = {400, 422, 404} if ZERO_UUID in path else {400, 422}
        error = _assert_error_shape(client.post(path, data, content_type=content_type), statuses)
        assert error["code"] in {"validation_error", "bad_request", "not_found"}, (path, name)


def test_unknown_field_is_named_in_the_details(make_token) -> None:
    _, raw = make_token("admin")
    response = Client(headers={"Authorization": f"Bearer {raw}"}).post(
        "/v1/embeddings", {"input": ["hello"], "inptu": 1}, content_type="application/json"
    )
    error = _assert_error_shape(response, {422})
    assert error["details"]["fields"] == [
        {"path": "body.payload.inptu", "message": "Extra inputs are not permitted", "type": "extra_forbidden"}
    ]


def test_a_2mb_body_is_refused_before_parsing(make_token) -> None:
    _, raw = make_token("admin")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    body = json.dumps({"input": ["x" * (2 * 1024 * 1024)]})
    for path in _post_operations():
        error = _assert_error_shape(client.post(path, body, content_type="application/json"), {413})
        assert error["code"] == "payload_too_large"
        assert error["details"] == {"limitBytes": 1024 * 1024, "receivedBytes": len(body)}


def test_a_token_without_the_scope_gets_403(make_token) -> None:
    _, raw = make_token("propose")
    response = Client(headers={"Authorization": f"Bearer {raw}"}).post(
        "/v1/embeddings", {"input": ["hello"]}, content_type="application/json"
    )
    error = _assert_error_shape(response, {403})
    assert error["details"] == {"required": "read", "granted": ["propose"]}


@pytest.mark.parametrize(
    "path", ["/api/knowledge/", "/api/verifications/", "/api/papers/", "/api/knowledge/SEC-001/"]
)
def test_an_unknown_format_or_accept_on_api_is_a_4xx_in_the_error_shape(make_token, path: str) -> None:
    _, raw = make_token("read")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    assert _assert_error_shape(client.get(path, {"format": "xlsx"}), {404})["code"] == "not_found"
    refused = client.get(path, HTTP_ACCEPT="application/xml")
    assert _assert_error_shape(refused, {406})["message"]
