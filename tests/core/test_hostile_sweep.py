"""The hostile sweep (issue #23): every write route of ``/v1/``, ``/ontology-agent/`` and ``/api/``,
every page route (as a signed-in superuser, with CSRF enforced) and ``/mcp`` get the probes a
hostile tester sends — NUL bytes, lone surrogates, a 10 MB body, 10,000-level nesting, wrong or
odd content types, huge and odd numbers — and none answers a 5xx.

Every 4xx of the APIs is in the error shape ``{"error": {"code", "message", "details"}}``; a page's
4xx is an HTML page (or a re-rendered form). The routes are read from the three live OpenAPI
documents and the URL resolver, so a route added later is swept without editing this file.

Each request runs in a savepoint rolled back after it: one probe's writes (or a failed statement)
never change what the next probe meets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from django import forms
from django.apps import apps as django_apps
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from apps.grounding.models import ReviewStatus, Verdict, Verification
from tests.conftest import make_user
from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401 - rows to write to

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
HUGE_ID = "99999999999999999999"  # past bigint
DOCUMENTS = ("/v1/openapi.json", "/ontology-agent/openapi.json", "/api/openapi.json")
BODY_METHODS = ("post", "put", "patch")
TEN_MB = 10 * 1024 * 1024
NUMBERS = ["1e400", "-1e400", str(10**30), f"-{10**30}", "-0", "NaN", "Infinity", "-Infinity", "1e-400"]

# (name, raw body, content type): what is sent to every write route, whatever it expects.
RAW_PROBES: list[tuple[str, bytes, str | None]] = [
    ("nul escape", b'{"a": "x\\u0000y"}', "application/json"),
    ("raw nul", b'{"a": "x\x00y"}', "application/json"),
    ("lone surrogate escape", b'{"a": "\\ud800"}', "application/json"),
    ("raw surrogate", '{"a": "\udead"}'.encode("utf-8", "surrogatepass"), "application/json"),
    ("invalid utf-8", b'{"a": "\xff\xfe"}', "application/json"),
    ("10 MB", b'{"a": "' + b"a" * TEN_MB + b'"}', "application/json"),
    ("10k arrays", b"[" * 10_000 + b"]" * 10_000, "application/json"),
    ("10k objects", b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "application/json"),
    ("10k unclosed", b"[" * 10_000, "application/json"),
    ("multipart, bogus boundary", b'{"a": 1}', "multipart/form-data; boundary=zz"),
    ("multipart, no boundary", b'{"a": 1}', "multipart/form-data"),
    ("multipart, empty boundary", b"--\r\n", "multipart/form-data; boundary="),
    ("text/plain", b'{"a": 1}', "text/plain"),
    ("form", b"a=1&b=%00&c=%ED%A0%80", "application/x-www-form-urlencoded"),
    (
        "form, many fields",
        b"&".join(b"f%d=1" % index for index in range(5000)),
        "application/x-www-form-urlencoded",
    ),
    ("no content type", b'{"a": 1}', None),
    ("odd content type", b'{"a": 1}', "application/json; charset=klingon"),
    ("empty", b"", "application/json"),
    ("not json", b"{not json", "application/json"),
    *[(f"number {number}", f'{{"a": {number}}}'.encode(), "application/json") for number in NUMBERS],
    *[(f"bare {number}", number.encode(), "application/json") for number in NUMBERS],
]


def _probe_id(probe: tuple[str, bytes, str | None]) -> str:
    return probe[0]


class Sweep:
    """Sends requests, each in a rolled-back savepoint, and collects what broke the rules."""

    class _Rollback(Exception):
        pass

    def __init__(self, client: Client, *, pages: bool = False) -> None:
        self.client = client
        self.pages = pages
        self.broken: list[tuple[Any, ...]] = []
        self.sent = 0

    def send(self, method: str, url: str, body: bytes = b"", content_type: str | None = None) -> None:
        extra: dict[str, Any] = {}
        if content_type is None:
            extra["CONTENT_TYPE"] = ""
        response = None
        try:
            with transaction.atomic():
                response = self.client.generic(
                    method.upper(), url, body, content_type=content_type or "", **extra
                )
                raise self._Rollback
        except self._Rollback:
            pass
        self.sent += 1
        problem = self.problem(response)
        if problem:
            self.broken.append((method, url, content_type, body[:80], response.status_code, problem))

    def problem(self, response) -> str | None:
        status = response.status_code
        if status >= 500:
            return f"server error: {response.content[:300]!r}"
        if status < 400:
            return None
        if self.pages:
            # A page's refusal is a page; Django's own 405 (a method the page does not take) is empty.
            is_page = response.get("Content-Type", "").startswith("text/html")
            return None if is_page or (status == 405 and not response.content) else "not a page"
        try:
            body = response.json()
        except ValueError:
            return f"not JSON: {response.content[:200]!r}"
        error = body.get("error") if isinstance(body, dict) and set(body) == {"error"} else None
        if (
            not isinstance(error, dict)
            or set(error) != {"code", "message", "details"}
            or not error["message"]
        ):
            return f"not the error shape: {body!r:.200}"
        return None


# --- the APIs ------------------------------------------------------------------------------------


def _path_value(name: str) -> str:
    """A value that reaches the body parser: an existing row where the default registry has one."""
    return {"slug": "arxiv", "name": "arxiv.search"}.get(name, ZERO_UUID)


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in schema:
            return _resolve(document, next(b for b in schema[combinator] if b.get("type") != "null"))
    return schema


def _sample(document: dict[str, Any], schema: dict[str, Any], depth: int = 0) -> Any:
    """A plausible value of every property, so a probe of one field reaches that field's validation."""
    schema = _resolve(document, schema)
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object" and depth < 4:
        return {
            name: _sample(document, child, depth + 1) for name, child in schema.get("properties", {}).items()
        }
    if kind == "array" and depth < 4:
        return [_sample(document, schema.get("items", {"type": "string"}), depth + 1)]
    return {"integer": 1, "number": 0.5, "boolean": False, "object": {}, "array": []}.get(kind, "x")


def _numeric_paths(
    document: dict[str, Any], schema: dict[str, Any], path: tuple = (), depth: int = 0
) -> list:
    schema = _resolve(document, schema)
    kind = schema.get("type")
    if kind in ("integer", "number"):
        return [path]
    if kind == "object" and depth < 4:
        return [
            found
            for name, child in schema.get("properties", {}).items()
            for found in _numeric_paths(document, child, (*path, name), depth + 1)
        ]
    if kind == "array" and depth < 4:
        return _numeric_paths(document, schema.get("items", {}), (*path, 0), depth + 1)
    return []


def _with_number(sample: Any, path: tuple, number: str) -> bytes:
    """``sample`` as JSON with the value at ``path`` replaced by ``number`` written literally."""
    marker = "__NUMBER__"
    document = json.loads(json.dumps(sample))
    target = document
    for key in path[:-1]:
        target = target[key]
    if path:
        target[path[-1]] = marker
    else:
        document = marker
    return json.dumps(document).replace(f'"{marker}"', number).encode()


def _api_write_operations(client: Client) -> Iterator[tuple[str, str, dict, dict]]:
    """(method, url, operation, document) of every body-taking operation of the three documents."""
    for document_url in DOCUMENTS:
        document = client.get(document_url).json()
        for path, methods in document["paths"].items():
            url = re.sub(r"\{(\w+)\}", lambda match: _path_value(match.group(1)), path)
            for method, operation in methods.items():
                if method in BODY_METHODS:
                    yield method, url, operation, document


@pytest.fixture
def api_sweep(make_token, settings, default_registry) -> Sweep:  # noqa: F811 - the fixture imported above
    settings.ARXIV_WAIT_SECONDS = 0  # upstream work answers 202 at once: no worker runs here
    settings.CORTEX_TOKEN_REQUESTS_PER_MINUTE = 0  # a thousand requests from one token
    _, raw = make_token("admin")
    return Sweep(Client(headers={"Authorization": f"Bearer {raw}"}, raise_request_exception=False))


@pytest.mark.django_db
def test_every_api_write_route_survives_every_probe(api_sweep: Sweep) -> None:
    operations = list(_api_write_operations(api_sweep.client))
    routes = {(method, url) for method, url, *_ in operations}
    assert {
        ("post", "/v1/memory/tell"),
        ("post", "/ontology-agent/discover"),
        ("post", "/api/connectors/"),
    } <= routes
    assert {("put", "/api/connectors/arxiv/"), ("patch", "/api/tools/arxiv.search/")} <= routes
    for method, url in sorted(routes):
        for _, body, content_type in RAW_PROBES:
            api_sweep.send(method, url, body, content_type)
    assert api_sweep.broken == []
    assert api_sweep.sent == len(routes) * len(RAW_PROBES)


@pytest.mark.django_db
def test_huge_and_odd_numbers_in_every_numeric_field_get_a_4xx_or_an_answer(api_sweep: Sweep) -> None:
    swept_fields = 0
    for method, url, operation, document in _api_write_operations(api_sweep.client):
        content = operation.get("requestBody", {}).get("content", {})
        schema = content.get("application/json", {}).get("schema")
        if schema is None:
            continue
        sample = _sample(document, schema)
        for path in _numeric_paths(document, schema):
            swept_fields += 1
            for number in NUMBERS:
                api_sweep.send(method, url, _with_number(sample, path, number), "application/json")
    assert api_sweep.broken == []
    assert swept_fields >= 10


@pytest.mark.django_db
def test_huge_ids_and_paging_numbers_in_api_urls(api_sweep: Sweep) -> None:
    for document_url in DOCUMENTS:
        document = api_sweep.client.get(document_url).json()
        for path, methods in document["paths"].items():
            for method in methods:
                if method not in ("get", "delete"):
                    continue
                url = re.sub(r"\{(\w+)\}", HUGE_ID, path)
                api_sweep.send(method, url)
                if method == "get":
                    for number in [HUGE_ID, "-1", "1e400", "NaN", "false", "0x10", "1_0"]:
                        for name in ("limit", "offset", "page"):
                            api_sweep.send("get", f"{url}?{name}={number}")
    assert api_sweep.broken == []


# --- the pages -----------------------------------------------------------------------------------


def _page_routes(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    """Every page route (the APIs, the admin and the static aside), its parameters filled in."""
    routes = []
    for pattern in (resolver or get_resolver()).url_patterns:
        route = prefix + str(pattern.pattern)
        # /readyz answers 503 by design while no worker runs (as here), and waits for its ping.
        if route.startswith(("api/", "v1/", "ontology-agent/", "admin/", "^", "static/", "readyz")):
            continue
        # OAuth's JSON endpoints answer the RFCs' {"error", "error_description"}: tests/oauth sweeps them.
        if route.startswith((".well-known/oauth-", "oauth/register/", "oauth/token/", "oauth/revoke/")):
            continue
        if isinstance(pattern, URLResolver):
            routes += _page_routes(pattern, route)
        elif isinstance(pattern, URLPattern):
            routes.append("/" + route)
    return sorted(set(routes))


def _form_field_names() -> list[str]:
    """The fields of every form the pages post (each app's forms module)."""
    names = {"next", "action", "mode", "note", "q", "query", "page"}
    for config in django_apps.get_app_configs():
        module = getattr(__import__(f"{config.name}", fromlist=["forms"]), "forms", None)
        if module is None or not config.name.startswith("apps."):
            continue
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, forms.BaseForm)
                and value.__module__ == module.__name__
            ):
                names |= set(value.base_fields)
    return sorted(names)


@pytest.fixture
def page_sweep(db) -> tuple[Sweep, dict[str, str]]:
    verification = Verification.objects.create(
        claim="Water boils at 100 C at sea level.",
        verdict=Verdict.UNVERIFIED,
        confidence=0.5,
        sources=[],
        latency_ms=1.0,
        review_status=ReviewStatus.PENDING,
    )
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.force_login(make_user("sweeper", is_superuser=True))
    client.get("/connectors")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    client.defaults["HTTP_X_CSRFTOKEN"] = token
    values = {
        "verification_id": str(verification.pk),
        "int": HUGE_ID,
        "uuid": ZERO_UUID,
    }
    return Sweep(client, pages=True), values


def _filled(route: str, values: dict[str, str]) -> list[str]:
    """The route with each parameter filled: a real row where there is one, and a huge or odd value."""
    if "<" not in route:
        return [route]
    real = re.sub(
        r"<(?:(\w+):)?(\w+)>",
        lambda m: values.get(m.group(2)) or values.get(m.group(1) or "str") or "x",
        route,
    )
    huge = re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: HUGE_ID if m.group(1) == "int" else "zz-none", route)
    return sorted({real, huge})


def test_every_page_route_survives_every_probe_as_a_signed_in_superuser(page_sweep) -> None:
    sweep, values = page_sweep
    routes = _page_routes()
    assert {"/facts", "/papers/live", "/knowledge", "/verifications/<int:verification_id>/review"} <= set(
        routes
    )
    fields = _form_field_names()
    assert {"claim", "query", "action", "corrected_text"} <= set(fields) or len(fields) > 10
    for route in routes:
        for url in _filled(route, values):
            for _, body, content_type in RAW_PROBES:
                sweep.send("post", url, body, content_type)
            for value in [*NUMBERS, "\x00", "\ud800", "a" * 100_000]:
                quoted = quote(value.encode("utf-8", "surrogatepass"))
                form = "&".join(f"{name}={quoted}" for name in fields).encode()
                sweep.send("post", url, form, "application/x-www-form-urlencoded")
                sweep.send("get", f"{url}?page={quoted}&q={quoted}&limit={quoted}")
    assert sweep.broken == [], "\n".join(map(str, sweep.broken))
    assert sweep.sent > 1000


# --- /mcp ----------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_mcp_survives_every_probe(cortex_server, make_token, default_registry) -> None:  # noqa: F811
    """/mcp is served beside Django (cortexweb/asgi.py), so it is probed over a real server."""
    _, raw = make_token("admin")
    broken = []
    with httpx.Client(timeout=30) as client:
        for name, body, content_type in RAW_PROBES:
            headers = {"Authorization": f"Bearer {raw}", "Accept": "application/json, text/event-stream"}
            if content_type is not None:
                headers["Content-Type"] = content_type
            response = client.post(cortex_server.mcp_url, content=body, headers=headers)
            if response.status_code >= 500:
                broken.append((name, response.status_code, response.text[:200]))
    assert broken == []
