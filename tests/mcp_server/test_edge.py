"""What the ``/mcp`` edge answers to a hostile client (issue 23): the sweep's probes (10,000-level
nesting, NUL bytes, lone surrogates, a 10 MB body, wrong content types, huge and odd ids) and every
method but POST, each with its exact status and body; never a 5xx, never an open stream.

Errors about the JSON-RPC message are JSON-RPC error objects with id null (what an MCP client
shows); errors about the HTTP exchange are the error shape REST answers."""

from __future__ import annotations

import time

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
DEEP = 10_000
NESTED = b"[" * DEEP + b"]" * DEEP


def _rpc_error(code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


def _call(name: bytes, arguments: bytes) -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "'
        + name
        + b'", "arguments": '
        + arguments
        + b"}}"
    )


# CORTEX_MAX_JSON_DEPTH, as on /v1/ and /api/ (it was a RecursionError: a text/plain 500).
TOO_DEEP = _rpc_error(
    -32600, "Invalid Request: the JSON is nested more than 64 levels deep; send a flatter document."
)
BAD_ID = _rpc_error(
    -32600,
    "Invalid Request: a request's id must be a string or an integer (not null, a fraction or a boolean).",
)
# body -> (status, JSON body) of the answer
PROBES: dict[str, tuple[bytes, int, dict]] = {
    "nested-params": (
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": ' + NESTED + b"}",
        400,
        TOO_DEEP,
    ),
    "nested-object": (
        b'{"a": ' * DEEP + b"1" + b"}" * DEEP,
        400,
        TOO_DEEP,
    ),
    "nested-65-levels": (
        _call(b"ontology_validate", b'{"axioms": ' + b"[" * 62 + b"]" * 62 + b"}"),
        400,
        TOO_DEEP,
    ),
    "nested-64-levels": (
        _call(b"ontology_validate", b'{"axioms": ' + b"[" * 61 + b"]" * 61 + b"}"),
        200,
        {},  # checked below: within the limit, the tool itself says what is wrong with its arguments
    ),
    "nested-tool-arguments": (
        _call(b"knowledge.search", b'{"query": ' + NESTED + b"}"),
        400,
        TOO_DEEP,
    ),
    # A lone surrogate in a tool name used to reach the registry's lookup (a 500 from the database).
    "surrogate-tool-name": (
        _call(b"\\ud800", b"{}"),
        400,
        _rpc_error(-32700, "Parse error: unexpected end of hex escape at line 1 column 79"),
    ),
    "surrogate-id": (
        b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}',
        400,
        _rpc_error(-32700, "Parse error: unexpected end of hex escape at line 1 column 33"),
    ),
    "nul-raw": (
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping\x00"}',
        400,
        _rpc_error(
            -32700,
            "Parse error: control character (\\u0000-\\u001F) found while parsing a string "
            "at line 1 column 44",
        ),
    ),
    "nul-escaped-method": (
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping\\u0000"}',
        200,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32601, "message": "Method not found", "data": "ping\x00"},
        },
    ),
    # Answered by the SDK as a notification (202, nothing) before: the client waited for good.
    "id-1e400": (b'{"jsonrpc": "2.0", "id": 1e400, "method": "ping"}', 400, BAD_ID),
    "id-fraction": (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', 400, BAD_ID),
    "id-nan": (b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}', 400, BAD_ID),
    "id-null": (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', 400, BAD_ID),
    "id-boolean": (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', 400, BAD_ID),
    "id-30-digits": (
        b'{"jsonrpc": "2.0", "id": ' + b"9" * 30 + b', "method": "ping"}',
        200,
        {"jsonrpc": "2.0", "id": int("9" * 30), "result": {}},
    ),
    "id-5000-digits": (
        b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "ping"}',
        400,
        _rpc_error(-32700, "Parse error: number out of range at line 1 column 4327"),
    ),
    "argument-1e400": (
        _call(b"ontology_discover", b'{"query": 1e400}'),
        200,
        {},  # checked below: an isError result naming the argument
    ),
}


@pytest.mark.parametrize("probe", PROBES)
def test_hostile_bodies_get_a_4xx_naming_the_problem(cortex_server, registry, probe) -> None:
    body, status, expected = PROBES[probe]
    response = httpx.post(cortex_server.mcp_url, content=body, headers=HEADERS, timeout=30)
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "application/json"
    if probe == "nested-64-levels":
        assert response.json()["result"]["content"][0]["text"] == (
            "validation_error: Invalid arguments for tool 'ontology_validate': axioms.0: Input should be a "
            "valid dictionary or object to extract fields from."
        )
    elif probe == "argument-1e400":
        result = response.json()["result"]
        assert result["isError"] is True
        assert result["content"][0]["text"] == (
            "validation_error: Invalid arguments for tool 'ontology_discover': query: Input should be a "
            "valid string."
        )
    else:
        assert response.json() == expected


def test_a_10_mb_body_is_refused_413_before_it_is_read(cortex_server, registry, settings) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "' + b"a" * 10_000_000 + b'"}}'
    declared = httpx.post(cortex_server.mcp_url, content=body, headers=HEADERS, timeout=30)
    assert declared.status_code == 413
    assert declared.json() == {
        "error": {
            "code": "payload_too_large",
            "message": f"The request body is {len(body)} bytes; the limit is 1048576 bytes.",
            "details": {"limitBytes": 1048576, "receivedBytes": len(body)},
        }
    }

    def chunks():  # no Content-Length: the limit stops the reading
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    chunked = httpx.post(cortex_server.mcp_url, content=chunks(), headers=HEADERS, timeout=30)
    assert chunked.status_code == 413
    assert chunked.json() == {
        "error": {
            "code": "payload_too_large",
            "message": "The request body is larger than the limit of 1048576 bytes.",
            "details": {"limitBytes": 1048576},
        }
    }


UNSUPPORTED = _rpc_error(-32600, "Unsupported Media Type: Content-Type must be application/json")


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "multipart/form-data; boundary=zz", "application/x-www-form-urlencoded", "", "text/json"],
)
def test_a_body_that_is_not_json_by_its_content_type_gets_415(cortex_server, registry, content_type) -> None:
    headers = {**HEADERS, "Content-Type": content_type}
    response = httpx.post(
        cortex_server.mcp_url, content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', headers=headers
    )
    assert (response.status_code, response.json()) == (415, UNSUPPORTED)


def test_json_with_a_charset_is_served(cortex_server, registry) -> None:
    headers = {**HEADERS, "Content-Type": "application/json; charset=utf-8"}
    response = httpx.post(
        cortex_server.mcp_url, content=b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}', headers=headers
    )
    assert (response.status_code, response.json()) == (200, {"jsonrpc": "2.0", "id": 7, "result": {}})


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
def test_every_method_but_post_gets_405_at_once(cortex_server, registry, method) -> None:
    """GET used to open an event stream that stayed open for good (a client was held 15 minutes)."""
    started = time.monotonic()
    response = httpx.request(
        method, cortex_server.mcp_url, headers={"Accept": "text/event-stream, application/json"}, timeout=5
    )
    assert time.monotonic() - started < 2
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {
        "error": {
            "code": "method_not_allowed",
            "message": f"{method} is not served: /mcp answers JSON-RPC messages sent with POST (it is "
            "stateless: no event stream, no session).",
            "details": {"allowed": ["POST"]},
        }
    }


def test_head_gets_405_without_a_body(cortex_server, registry) -> None:
    response = httpx.head(cortex_server.mcp_url, timeout=5)
    assert (response.status_code, response.headers["Allow"], response.content) == (405, "POST", b"")
