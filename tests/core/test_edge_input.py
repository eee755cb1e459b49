"""The edge refuses NUL characters and lone surrogates once, for every endpoint and page.

The sweep reads the operations from the live /v1/ OpenAPI document and the /api/ routes from the URL
resolver, so every endpoint a later change adds is swept too. Each case says what it expects; the
tests collect every mismatch (and every 500) and assert there are none.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.test.client import encode_multipart
from django.urls import get_resolver, resolve, reverse
from rest_framework import serializers

from apps.core.errors import drf_exception_handler
from cortexweb.api import api
from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401 - the planner's registry
from tests.core.test_bad_input import concrete_path

pytestmark = pytest.mark.django_db

NUL = "a\x00b"
SURROGATE = "a\ud800b"
BAD_TEXTS = {"nul": NUL, "surrogate": SURROGATE}
PROBLEMS = {"nul": "contains a NUL character", "surrogate": "contains an unpaired surrogate"}
METHODS = ("get", "post", "put", "patch", "delete")


def _refusal(*paths_and_problems: tuple[str, str]) -> dict[str, Any]:
    """The exact error the edge answers for these (path, problem) pairs."""
    return {
        "code": "validation_error",
        "message": "Strings may not contain NUL characters or unpaired surrogates; fix: "
        + ", ".join(path for path, _ in paths_and_problems)
        + ".",
        "details": {
            "fields": [
                {"path": path, "message": problem, "type": "unstorable_text"}
                for path, problem in paths_and_problems
            ]
        },
    }


def _error(response) -> dict[str, Any] | None:
    """The error object when the response is in the error shape, else None."""
    try:
        body = response.json()
    except ValueError:
        return None
    if set(body) != {"error"} or set(body["error"]) != {"code", "message", "details"}:
        return None
    return body["error"]


# --- /v1/: every operation of the OpenAPI document -------------------------------------------------

SCHEMA = api.get_openapi_schema()
RAW_BODY_PATHS = {"/v1/memory/import"}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMA["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    if "anyOf" in schema:
        return _resolve(next(branch for branch in schema["anyOf"] if branch.get("type") != "null"))
    return schema


def _sample(schema: dict[str, Any]) -> Any:
    """A value of every property (not just the required ones), so every string field is present."""
    schema = _resolve(schema)
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        if "properties" in schema:
            return {name: _sample(child) for name, child in schema["properties"].items()}
        return {"q": "x"}  # free-form (tool arguments): one string inside
    if kind == "array":
        return [_sample(schema.get("items", {"type": "string"}))]
    return {"integer": 1, "number": 1.0, "boolean": False}.get(kind, "x")


def _string_leaves(value: Any, path: str) -> list[tuple[str, list[Any]]]:
    """(dotted path, key path) of every string in a sample document."""
    if isinstance(value, str):
        return [(path, [])]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    leaves = []
    for key, child in items:
        child_path = f"{path}.{key}" if isinstance(value, dict) else f"{path}[{key}]"
        leaves += [(dotted, [key, *keys]) for dotted, keys in _string_leaves(child, child_path)]
    return leaves


def _replaced(document: Any, keys: list[Any], text: str) -> Any:
    copy = json.loads(json.dumps(document))
    target = copy
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = text
    return copy


def _v1_cases() -> list[tuple[str, str, str, dict[str, Any], tuple[str, str]]]:
    """(operation, method, url, request kwargs, expected (path, problem)) for every string input."""
    cases = []
    for path, operations in SCHEMA["paths"].items():
        for method, operation in operations.items():
            label = f"{method.upper()} {path}"
            params = operation.get("parameters", [])
            url = path
            for param in params:
                if param["in"] == "path":
                    url = url.replace("{" + param["name"] + "}", "00000000-0000-0000-0000-000000000000")
            for param in params:
                if param["in"] == "path":
                    # A path cannot carry a surrogate (it is UTF-8 decoded); NUL arrives as %00.
                    bad_url = path.replace("{" + param["name"] + "}", "a%00b")
                    cases.append((label, method, bad_url, {}, ("path", PROBLEMS["nul"])))
                elif param["in"] == "query":
                    bad = f"{url}?{param['name']}=a%00b"
                    cases.append((label, method, bad, {}, (f"query.{param['name']}", PROBLEMS["nul"])))
            body = operation.get("requestBody")
            if body:
                document = _sample(body["content"]["application/json"]["schema"])
                for dotted, keys in _string_leaves(document, "body"):
                    for kind, text in BAD_TEXTS.items():
                        data = json.dumps(_replaced(document, keys, text))  # \u0000 and \ud800 escapes
                        kwargs = {"data": data, "content_type": "application/json"}
                        cases.append((label, method, url, kwargs, (dotted, PROBLEMS[kind])))
                    # The same surrogate as raw (CESU-8) bytes: json.loads decodes them into one.
                    raw = json.dumps(_replaced(document, keys, "a\udead")).replace("\\udead", "\udead")
                    kwargs = {
                        "data": raw.encode("utf-8", "surrogatepass"),
                        "content_type": "application/json",
                    }
                    cases.append((label, method, url, kwargs, (dotted, PROBLEMS["surrogate"])))
    return cases


V1_CASES = _v1_cases()


def test_the_sweep_covers_every_v1_operation_with_a_string_input() -> None:
    operations = {f"{method.upper()} {path}" for path, ops in SCHEMA["paths"].items() for method in ops}
    swept = {label for label, *_ in V1_CASES}
    assert operations - swept == {"GET /v1/connectors/service-map"}  # it takes no input at all
    assert len(operations) >= 15 and len(V1_CASES) >= 60


def test_nul_and_lone_surrogates_in_every_v1_input_get_422_naming_the_field(make_token) -> None:
    _, raw = make_token("admin")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    mismatches = []
    for label, method, url, kwargs, expected in V1_CASES:
        response = getattr(client, method)(url, **kwargs)
        error = _error(response)
        if response.status_code != 422 or error != _refusal(expected):
            mismatches.append((label, url, expected, response.status_code, response.content[:300]))
    assert mismatches == []


def test_the_refusal_comes_before_authentication_and_names_every_field() -> None:
    body = json.dumps({"input": [NUL, "fine", SURROGATE], f"k{NUL}": 1})
    response = Client().post("/v1/embeddings?x=%00", body, content_type="application/json")
    assert response.status_code == 422
    assert _error(response) == _refusal(
        ("query.x", PROBLEMS["nul"]),
        ("body.input[0]", PROBLEMS["nul"]),
        ("body.input[2]", PROBLEMS["surrogate"]),
        ("body.ka\\u0000b", "its name contains a NUL character"),
    )


def test_a_body_full_of_bad_strings_gets_a_bounded_answer() -> None:
    response = Client().post(
        "/v1/embeddings", json.dumps({"input": [NUL] * 5000}), content_type="application/json"
    )
    assert response.status_code == 422
    error = _error(response)
    listed = [f"body.input[{index}]" for index in range(20)]
    assert error["message"] == (
        "Strings may not contain NUL characters or unpaired surrogates; fix: "
        + ", ".join(listed)
        + " and 4980 more."
    )
    assert [field["path"] for field in error["details"]["fields"]] == listed
    assert error["details"]["unlisted"] == 4980


@pytest.mark.usefixtures("default_registry")
def test_paired_surrogates_and_escaped_backslashes_are_ordinary_text(make_token) -> None:
    _, raw = make_token("admin")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    # An emoji as a surrogate pair, and a backslash followed by "u0000": both valid text.
    body = '{"intent": "fact_query", "query": "who \\ud83d\\ude00 wrote \\\\u0000 this?"}'
    response = client.post("/v1/agents/plan", body, content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["query"] == "who \U0001f600 wrote \\u0000 this?"


# --- /api/: every list route, its filters, detail lookups and writable fields ----------------------

# The filters each list view reads (their docstrings); a new /api/ list route fails the coverage test
# until it is listed here, so the sweep cannot silently skip it.
API_FILTERS = {
    "event-list": ["name", "correlation_id"],
    "connector-list": ["transport", "enabled", "scopes"],
    "tool-list": ["connector", "tags", "scopes", "drift"],
    "fact-list": ["qid", "pid", "claim_guid", "rank", "run"],
    "fact-run-list": ["status", "degraded"],
    "memory-list": ["domain", "agent", "session", "type", "pinned", "shared", "superseded"],
    "knowledge-entry-list": ["domain", "tag", "source"],
    "verification-list": ["verdict", "review_status", "domain", "judge", "message"],
    "paper-list": ["category", "primary_category", "doi"],
}
PAGINATION = ["limit", "offset"]


def _api_list_routes() -> dict[str, str]:
    names = [name for name in get_resolver().reverse_dict if isinstance(name, str) and name.endswith("-list")]
    routes = {}
    for name in names:
        url = reverse(name)
        if url.startswith("/api/"):
            routes[name] = url
    return routes


def _string_fields(serializer: serializers.Serializer) -> dict[str, str]:
    """Writable text fields of a serializer → the path its refusal names (a list's first item)."""
    fields = {}
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        if isinstance(field, serializers.ListField) and isinstance(field.child, serializers.CharField):
            fields[name] = f"body.{name}[0]"
        elif isinstance(field, serializers.CharField | serializers.ChoiceField):
            fields[name] = f"body.{name}"
    return fields


def test_every_api_list_route_has_its_filters_listed() -> None:
    assert set(_api_list_routes()) == set(API_FILTERS)


def test_nul_and_lone_surrogates_anywhere_on_api_get_422_and_never_reach_a_view(make_token) -> None:
    _, raw = make_token("admin")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    mismatches: list[tuple] = []
    swept = 0

    def expect(method: str, url: str, expected: tuple[str, str], **kwargs: Any) -> None:
        nonlocal swept
        swept += 1
        response = getattr(client, method)(url, **kwargs)
        if response.status_code != 422 or _error(response) != _refusal(expected):
            mismatches.append((method, url, kwargs, response.status_code, response.content[:300]))

    for name, url in _api_list_routes().items():
        for param in [*API_FILTERS[name], *PAGINATION, "unknown"]:
            expect("get", f"{url}?{param}=a%00b", (f"query.{param}", PROBLEMS["nul"]))
        expect("get", f"{url}a%00b/", ("path", PROBLEMS["nul"]))
        view = resolve(url).func
        if "post" not in getattr(view, "actions", {}):
            continue
        for field, path in _string_fields(view.cls.serializer_class()).items():
            for kind, text in BAD_TEXTS.items():
                value: Any = [text] if path.endswith("[0]") else text
                expect(
                    "post", url, (path, PROBLEMS[kind]), data={field: value}, content_type="application/json"
                )
            expect("post", url, (f"body.{field}", PROBLEMS["nul"]), data={field: NUL})  # multipart form
            expect(
                "post",
                url,
                (f"body.{field}", PROBLEMS["nul"]),
                data=f"{field}=a%00b",
                content_type="application/x-www-form-urlencoded",
            )
    assert mismatches == []
    assert swept >= 60


def test_put_and_patch_form_bodies_are_checked_too() -> None:
    """Django parses the forms of POSTs only; DRF parses those of PUT and PATCH itself."""
    client = Client()
    multipart = encode_multipart("BoUnDaRy", {"name": NUL})
    for method in ("put", "patch"):
        for data, content_type in [
            ("name=a%00b", "application/x-www-form-urlencoded"),
            (multipart, "multipart/form-data; boundary=BoUnDaRy"),
            (json.dumps({"name": SURROGATE}), "application/json"),
        ]:
            response = getattr(client, method)("/api/connectors/openalex/", data, content_type=content_type)
            problem = PROBLEMS["surrogate" if content_type == "application/json" else "nul"]
            assert response.status_code == 422, (method, content_type, response.content)
            assert _error(response) == _refusal(("body.name", problem))


@pytest.mark.parametrize(
    ("url", "message", "parameter"),
    [
        ("/api/facts/?run=not-a-uuid", "?run= takes a UUID, not 'not-a-uuid'.", "run"),
        (
            "/api/fact-runs/?status=done",
            "?status= takes one of queued, running, succeeded, degraded, failed, not 'done'.",
            "status",
        ),
        ("/api/fact-runs/?degraded=maybe", "?degraded= takes true or false, not 'maybe'.", "degraded"),
        (
            "/api/connectors/?transport=pigeon",
            "?transport= takes one of mcp, native, not 'pigeon'.",
            "transport",
        ),
        (
            "/api/verifications/?verdict=maybe",
            "?verdict= takes one of supported, contradicted, unverified, not 'maybe'.",
            "verdict",
        ),
        (
            "/api/verifications/?review_status=done",
            "?review_status= takes one of pending, not_needed, approved, rejected, corrected, not 'done'.",
            "review_status",
        ),
        ("/api/verifications/?message=m-1", "?message= takes a UUID, not 'm-1'.", "message"),
        (
            "/api/tools/?drift=sideways",
            "?drift= takes one of unsynced, in_sync, missing_upstream, schema_changed, description_changed, "
            "not 'sideways'.",
            "drift",
        ),
    ],
)
def test_bad_filter_values_on_api_get_400_naming_the_parameter(
    read_client: Client, url: str, message: str, parameter: str
) -> None:
    response = read_client.get(url)
    assert response.status_code == 400
    assert _error(response) == {
        "code": "validation_error",
        "message": message,
        "details": {"parameter": parameter},
    }


def test_a_value_the_orm_cannot_convert_is_a_400_not_a_500() -> None:
    """The safety net behind the filters: a Django ValidationError reaching DRF's handler."""
    from django.core.exceptions import ValidationError

    response = drf_exception_handler(ValidationError("“abc” is not a valid UUID."), {})
    assert response.status_code == 400
    assert response.data == {
        "error": {"code": "validation_error", "message": "“abc” is not a valid UUID.", "details": {}}
    }


def test_malformed_detail_lookups_on_api_are_404s(read_client: Client) -> None:
    for url in (
        "/api/fact-runs/not-a-uuid/",
        "/api/facts/abc/",
        "/api/events/99999999999999999999/",
        "/api/verifications/abc/",
        "/api/verifications/99999999999999999999/",
        "/api/knowledge/sec-001/",
        "/api/papers/no/such/paper/",
    ):
        response = read_client.get(url)
        assert (response.status_code, _error(response)["code"]) == (404, "not_found"), url


# --- pages -----------------------------------------------------------------------------------------


def _page_urls() -> list[str]:
    """Every page route without parameters (the APIs and the admin's own routes aside)."""
    urls = []
    for pattern in get_resolver().url_patterns:
        for inner in getattr(pattern, "url_patterns", [pattern]):
            route = (
                str(pattern.pattern) + str(inner.pattern) if inner is not pattern else str(pattern.pattern)
            )
            if "<" in route or route.startswith(("api/", "v1/", "ontology-agent/", "admin/", "^")):
                continue
            urls.append("/" + route)
    return sorted(set(urls))


def test_pages_answer_nul_with_a_400_page() -> None:
    urls = _page_urls()
    assert {"/connectors", "/facts", "/papers", "/verifications", "/events"} <= set(urls)
    client = Client()
    mismatches = []
    for url in [*urls, "/admin/", "/papers/a%00b"]:
        requests = [("get", f"{url}?q=a%00b", "query.q"), ("post", url, "body.q")]
        if url == "/papers/a%00b":
            requests = [("get", url, "path")]
        for method, target, where in requests:
            kwargs = {"data": {"q": NUL}} if method == "post" else {}
            response = getattr(client, method)(target, **kwargs)
            message = f"Strings may not contain NUL characters or unpaired surrogates; fix: {where}."
            if response.status_code != 400 or message not in response.content.decode():
                mismatches.append((method, target, response.status_code, response.content[:200]))
            elif response["Content-Type"] != "text/html; charset=utf-8":
                mismatches.append((method, target, response["Content-Type"]))
    assert mismatches == []


# --- /v1/: wrong methods and content types in the error shape --------------------------------------


def test_wrong_methods_on_v1_get_405_in_the_error_shape() -> None:
    client = Client()
    swept = 0
    for path, operations in SCHEMA["paths"].items():
        url = concrete_path(path)
        allowed = sorted(method.upper() for method in operations)
        for method in METHODS:
            if method in operations:
                continue
            swept += 1
            response = getattr(client, method)(url)
            assert response.status_code == 405, (method, url)
            assert response["Allow"] == ", ".join(allowed)
            assert _error(response) == {
                "code": "method_not_allowed",
                "message": f"{method.upper()} is not allowed on {url}; use {' or '.join(allowed)}.",
                "details": {"allowed": allowed},
            }
    assert swept >= 50


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", '{"query": "x"}'),
        ("application/x-www-form-urlencoded", "query=x"),
        ("application/xml", "<q/>"),
    ],
)
def test_non_json_bodies_on_v1_get_415_in_the_error_shape(make_token, content_type: str, body: str) -> None:
    _, raw = make_token("admin")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    # Import takes the file itself (Turtle or JSON-LD), not JSON: tests/memory/test_rdf.py checks its 415.
    posts = [
        concrete_path(path)
        for path, operations in SCHEMA["paths"].items()
        if "post" in operations and path not in RAW_BODY_PATHS
    ]
    for path in posts:
        response = client.post(path, body, content_type=content_type)
        assert response.status_code == 415, (path, response.content)
        assert _error(response) == {
            "code": "unsupported_media_type",
            "message": f"Send the body as JSON with 'Content-Type: application/json', not {content_type!r}.",
            "details": {"contentType": content_type, "accepted": ["application/json"]},
        }


@pytest.mark.usefixtures("default_registry")
def test_json_with_a_charset_is_json(make_token) -> None:
    _, raw = make_token("admin")
    response = Client(headers={"Authorization": f"Bearer {raw}"}).post(
        "/v1/agents/plan",
        json.dumps({"intent": "fact_query", "query": "Douglas Adams"}),
        content_type="application/json; charset=utf-8",
    )
    assert response.status_code == 200
    assert response.json()["query"] == "Douglas Adams"
