"""Request middleware: correlation ids, and the edge every request passes before any view.

The edge refuses what no endpoint could handle, once for all of them: oversized API bodies (413),
NUL characters and lone surrogates anywhere in the path, query string or body (422 on the APIs, a
400 page elsewhere), and it turns a database or Redis outage into a 503 with ``Retry-After``
(``DependencyOutageMiddleware`` for the pages; the two APIs do it in their exception handlers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import escape
from http import HTTPStatus
from io import BytesIO
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, QueryDict
from django.http.multipartparser import MultiPartParser

from apps.core.errors import (
    ApplicationError,
    BadRequest,
    MethodNotAllowed,
    PayloadTooLarge,
    dependency_outage,
    error_response,
    log_dependency_outage,
)
from apps.core.logging import accept_or_generate_correlation_id, reset_correlation_id, set_correlation_id
from apps.core.text import printable, text_problem, unstorable_paths, unstorable_text_error

CORRELATION_HEADER = "X-Request-ID"
API_PREFIXES = ("/v1/", "/api/", "/ontology-agent/")
AGENT_API_PREFIX = ("/v1/", "/ontology-agent/")
RESOURCE_API_PREFIX = "/api/"
FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
_JSON_MEDIA_TYPE = re.compile(r"^application/(?:[\w.+-]+\+)?json$", re.IGNORECASE)
# Bytes that can put NUL or a surrogate into a parsed JSON document: a \u escape, a raw NUL, or a
# UTF-8-encoded surrogate (json.loads decodes bytes with 'surrogatepass'). Bodies without any skip parsing.
_JSON_SUSPECT = re.compile(rb"\\u|\x00|\xed[\xa0-\xbf]")


def is_json_media_type(content_type: str) -> bool:
    """``application/json`` or a ``+json`` type (parameters already split off)."""
    return bool(_JSON_MEDIA_TYPE.match(content_type.strip()))


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIXES)


def _error_page(status: int, title: str, message: str, headers: dict[str, str] | None = None) -> HttpResponse:
    """A self-contained HTML error page: no template, no context processors, so it renders even when
    the database (sessions, the user) is what failed."""
    response = HttpResponse(
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)} · CortexWeb'
        f"</title></head>\n<body><h1>{escape(title)}</h1><p>{escape(message)}</p></body></html>\n",
        status=status,
        content_type="text/html; charset=utf-8",
    )
    for header, value in (headers or {}).items():
        response[header] = value
    return response


def _edge_error(request: HttpRequest, error: ApplicationError) -> HttpResponse:
    """The error shape on the APIs; a small HTML page with the same message elsewhere."""
    if _is_api(request):
        return error_response(error)
    status = 400 if 400 <= error.status_code < 500 else error.status_code
    return _error_page(status, HTTPStatus(status).phrase, error.message, error.headers())


class CorrelationIdMiddleware:
    """Takes ``X-Request-ID`` (or generates one), binds it for logs and tasks, echoes it back."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        correlation_id = accept_or_generate_correlation_id(request.headers.get(CORRELATION_HEADER))
        request.correlation_id = correlation_id  # type: ignore[attr-defined]
        token = set_correlation_id(correlation_id)
        try:
            response = self.get_response(request)
        finally:
            reset_correlation_id(token)
        response[CORRELATION_HEADER] = correlation_id
        return response


class RequestBodyLimitMiddleware:
    """Refuse oversized API bodies with 413 in the error shape, before anything parses them."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIXES):
            limit = settings.CORTEX_MAX_BODY_BYTES
            raw_length = request.META.get("CONTENT_LENGTH")
            if not raw_length and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
                # A chunked body has no Content-Length. The ASGI server has already received it, so
                # measure it and say how long it was: DRF reads only Content-Length bytes (it saw an
                # empty body), and the limit applies as to any other body (Django checks the
                # buffered size against DATA_UPLOAD_MAX_MEMORY_SIZE, which is this limit).
                try:
                    raw_length = str(len(request.body))
                except RequestDataTooBig:
                    return error_response(
                        PayloadTooLarge(
                            f"The chunked request body is larger than the limit of {limit} bytes.",
                            details={"limitBytes": limit},
                        )
                    )
                request.META["CONTENT_LENGTH"] = raw_length
            try:
                length = int(raw_length or "0")
            except ValueError:
                return error_response(BadRequest("Content-Length must be a whole number of bytes."))
            if length > limit:
                return error_response(
                    PayloadTooLarge(
                        f"The request body is {length} bytes; the limit is {limit} bytes.",
                        details={"limitBytes": limit, "receivedBytes": length},
                    )
                )
        return self.get_response(request)


def json_nested_too_deep(document: bytes | str, limit: int) -> bool:
    """Whether a JSON text nests arrays and objects more than ``limit`` levels deep.

    Parsers and validators recurse on nesting, so a 10,000-level document exhausts the stack
    (RecursionError) wherever it is read. Cheap for ordinary bodies: one with at most ``limit``
    brackets cannot be deeper, and is never parsed here. A text that is not JSON is not too deep
    (the endpoint says what is wrong with it), unless parsing it already ran out of stack.
    """
    opening = ("[", "{") if isinstance(document, str) else (b"[", b"{")
    if sum(document.count(bracket) for bracket in opening) <= limit:  # type: ignore[arg-type]
        return False
    try:
        parsed = json.loads(document)
    except RecursionError:
        return True
    except ValueError:
        return False
    # Iterative, for the same reason: (value, its depth) of every array and object still to visit.
    stack: list[tuple[Any, int]] = [(parsed, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _nesting_error(limit: int, path: str) -> BadRequest:
    """``path`` as the other edge errors name places: ``body``, ``body.<form field>``."""
    return BadRequest(
        f"The JSON in {path} is nested more than {limit} levels deep; send a flatter document.",
        details={"maxDepth": limit, "path": path},
    )


class JsonNestingLimitMiddleware:
    """JSON nested deeper than ``CORTEX_MAX_JSON_DEPTH`` is refused here, once, with a 400 saying the
    limit: a JSON body on any path, and on ``/api/`` each form field (DRF parses JSONField values
    sent in forms).

    It also reads the body of every API request before anything parses its form: once Django has
    read a multipart form from the stream, ``request.body`` can no longer be read, and ninja reads it
    to refuse a non-JSON body with 415 (``RawPostDataException``, a 500, otherwise). API bodies are
    already bounded by ``RequestBodyLimitMiddleware``.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.limit = settings.CORTEX_MAX_JSON_DEPTH

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            if _is_api(request):
                request.body  # noqa: B018 - cached, so that the form parser and request.body both work
            content_type = request.content_type or ""
            if is_json_media_type(content_type) and json_nested_too_deep(request.body, self.limit):
                return _edge_error(request, _nesting_error(self.limit, "body"))
            if request.path.startswith(RESOURCE_API_PREFIX) and content_type in FORM_MEDIA_TYPES:
                for name, values in _form(request, content_type).lists():
                    if any(json_nested_too_deep(value, self.limit) for value in values):
                        return _edge_error(request, _nesting_error(self.limit, f"body.{printable(name)}"))
        return self.get_response(request)


def _querydict_problems(data: QueryDict, where: str) -> list[tuple[str, str]]:
    problems = []
    for key, values in data.lists():
        name = f"{where}.{printable(key)}"
        if problem := text_problem(key):
            problems.append((name, f"its name {problem}"))
        problems += [(name, problem) for value in values if (problem := text_problem(value))]
        # A form field may carry JSON (DRF's JSONField parses a multipart part or a value as JSON):
        # its escapes decode to the characters checked here.
        for value in values:
            problems += _json_problems(value.encode("utf-8", "surrogatepass"), name)
    return problems


def _json_problems(body: bytes, where: str = "body") -> list[tuple[str, str]]:
    if not _JSON_SUSPECT.search(body):
        return []
    try:
        document: Any = json.loads(body)  # as ninja parses it; DRF decodes stricter still
    except (ValueError, RecursionError):
        return []  # not JSON at all: the endpoint answers that
    return unstorable_paths(document, where)


def request_text_problems(request: HttpRequest) -> list[tuple[str, str]]:
    """``(where, problem)`` for every NUL or lone surrogate in the path, the query string (names and
    values) and a JSON or form body (names and values; uploaded files are data, not text)."""
    problems = []
    if problem := text_problem(request.path_info):
        problems.append(("path", problem))
    problems += _querydict_problems(request.GET, "query")
    content_type = request.content_type or ""
    if request.method in ("POST", "PUT", "PATCH", "DELETE"):
        if is_json_media_type(content_type):
            problems += _json_problems(request.body)
        elif content_type in FORM_MEDIA_TYPES and not request.path.startswith(AGENT_API_PREFIX):
            # The JSON APIs read no forms (a form body is a 415 there): parsing one here could only
            # fail first (a multipart body without a boundary is a 400) or check text nothing reads.
            problems += _querydict_problems(_form(request, content_type), "body")
    return problems


def _form(request: HttpRequest, content_type: str) -> QueryDict:
    """The form fields of the body. Django parses forms of POSTs only; DRF parses those of PUT and
    PATCH itself, so those are parsed here the same way."""
    if request.method == "POST":
        return request.POST
    if content_type == "application/x-www-form-urlencoded":
        return QueryDict(request.body, encoding=request.encoding)
    parser = MultiPartParser(request.META, BytesIO(request.body), request.upload_handlers, request.encoding)
    return parser.parse()[0]


class UnstorableTextMiddleware:
    """NUL characters and lone surrogates are refused here, once, for every endpoint and page.

    Postgres cannot store NUL in text and a lone surrogate cannot be encoded, so past this point
    either one would become a 500 somewhere deep in a view. The APIs answer 422 in the error shape
    naming each field (``details.fields``, as the MCP server does for tool arguments); the pages a
    400 page.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problems = request_text_problems(request)
        if problems:
            return _edge_error(request, unstorable_text_error(problems))
        return self.get_response(request)


class AgentApiErrorShapeMiddleware:
    """On ``/v1/`` every error is in the error shape, including the few answered below ninja's
    exception handlers: its plain-text 405 for a wrong method, Django's own 400 page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code < 400
            or not request.path.startswith(AGENT_API_PREFIX)
            or is_json_media_type(response.get("Content-Type", "").split(";")[0])
        ):
            return response
        if response.status_code == 405:
            allowed = sorted(
                method.strip() for method in response.get("Allow", "").split(",") if method.strip()
            )
            error: ApplicationError = MethodNotAllowed(
                f"{request.method} is not allowed on {printable(request.path)}; "
                f"use {' or '.join(allowed) or 'another method'}.",
                allowed=allowed,
            )
        else:
            error = ApplicationError(HTTPStatus(response.status_code).phrase + ".")
            error.status_code = response.status_code
            error.code = "bad_request" if response.status_code == 400 else "http_error"
        shaped = error_response(error)
        for header in ("Retry-After", "WWW-Authenticate"):
            if header in response:
                shaped[header] = response[header]
        return shaped


class DependencyOutageMiddleware:
    """A view that finds the database, Redis or the broker down (or stalled past its timeout)
    answers 503 with ``Retry-After`` instead of a 500: a page to browsers, the error shape on the
    API paths (where the APIs' own handlers normally answer first)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        outage = dependency_outage(exception)
        if outage is None:
            return None
        log_dependency_outage(exception, outage)
        return _edge_error(request, outage)


class ContentSecurityPolicyMiddleware:
    """Every response carries ``CORTEX_CONTENT_SECURITY_POLICY`` (unless a view set its own): the
    pages, the admin and the API docs load scripts and styles only from this origin, run no inline
    script, and cannot be framed. An empty setting sends no header."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy = settings.CORTEX_CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response
