"""The one NinjaAPI behind ``/v1/``: routers per app, one error shape.

OpenAPI at ``/v1/openapi.json``, interactive docs at ``/v1/docs``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from apps.core.errors import (
    OUTAGE_DEPENDENCIES,
    ApplicationError,
    AuthenticationRequired,
    BadRequest,
    NotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationFailed,
    dependency_outage,
    error_response,
    log_dependency_outage,
    pydantic_errors_to_details,
    sees_upstream_locations,
)
from apps.core.middleware import is_json_media_type
from apps.core.openapi import DocumentedNinjaAPI


class JsonBodyParser(Parser):
    """Every /v1/ body is JSON: another declared content type is a 415, not a guess at its parsing."""

    def parse_body(self, request: HttpRequest) -> Any:
        content_type = request.content_type or ""
        if not is_json_media_type(content_type):
            raise UnsupportedMediaType(
                "Send the body as JSON with 'Content-Type: application/json', "
                f"not {content_type or 'none'!r}.",
                details={"contentType": content_type, "accepted": ["application/json"]},
            )
        return super().parse_body(request)


api = DocumentedNinjaAPI(
    title="CortexWeb agent API",
    version="1",
    urls_namespace="v1",
    description="Grounds AI agents in knowledge they can verify. Errors: {error: {code, message, details}}.",
    parser=JsonBodyParser(),
)


def _application_error(request: HttpRequest, exc: ApplicationError) -> HttpResponse:
    return error_response(exc, privileged=sees_upstream_locations(request))


def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return error_response(
        ValidationFailed(
            "The request has invalid fields; see details.fields for each one to fix.",
            details=pydantic_errors_to_details(list(exc.errors)),
        )
    )


def _authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(AuthenticationRequired("Send 'Authorization: Bearer <token>'."))


def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, ApplicationError):  # ninja wraps what the body parser raised
        return error_response(exc.__cause__)
    if exc.status_code == 400:
        return error_response(BadRequest("The request body is not valid JSON."))
    error = ApplicationError(str(exc.message))
    error.status_code = exc.status_code
    error.code = {401: "authentication_required", 403: "permission_denied", 429: "rate_limited"}.get(
        exc.status_code, "http_error"
    )
    return error_response(error)


def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(NotFound(str(exc) or "Not found."))


def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error_response(PayloadTooLarge("The request body is larger than the server accepts."))


def _dependency_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    outage = dependency_outage(exc)
    if outage is None:  # cannot happen: registered for exactly the exceptions it knows
        raise exc
    log_dependency_outage(exc, outage)
    return error_response(outage)


def error_handling_add(target: DocumentedNinjaAPI) -> None:
    """Every error of ``target`` in the one error shape (``/v1/`` and ``/ontology-agent/``)."""
    target.add_exception_handler(ApplicationError, _application_error)
    target.add_exception_handler(ValidationError, _validation_error)
    target.add_exception_handler(AuthenticationError, _authentication_error)
    target.add_exception_handler(HttpError, _http_error)
    target.add_exception_handler(Http404, _not_found)
    target.add_exception_handler(RequestDataTooBig, _too_big)
    # A database, Redis or broker outage (or a stall past its timeout) is a 503 with Retry-After, never a 500.
    for outage in OUTAGE_DEPENDENCIES:
        target.add_exception_handler(outage, _dependency_unavailable)


error_handling_add(api)


api.add_router("/embeddings", "apps.embeddings.api.router")
api.add_router("", "apps.connectors.api.router")
api.add_router("/arxiv", "apps.arxiv.api.router")
api.add_router("/facts", "apps.wikidata.api.router")
api.add_router("/knowledge", "apps.knowledge.api.router")
# POST /v1/knowledge/verify creates a verification for the review queue: grounding's, under its old URL.
api.add_router("/knowledge", "apps.grounding.api.knowledge_router")
api.add_router("/grounding", "apps.grounding.api.router")
api.add_router("/memory", "apps.memory.api.router")

# The ontology tools (seed 003) keep VisionClaw's paths, /ontology-agent/…, so its clients work
# unchanged: their own NinjaAPI, same errors, OpenAPI at /ontology-agent/openapi.json.
ontology_api = DocumentedNinjaAPI(
    title="CortexWeb ontology agent API",
    version="1",
    urls_namespace="ontology-agent",
    description="VisionClaw's ontology tools over CortexWeb's ontology: reads are anonymous, propose needs "
    "a token. Requests in camelCase, responses in snake_case. Errors: {error: {code, message, details}}.",
    parser=JsonBodyParser(),
)
error_handling_add(ontology_api)
ontology_api.add_router("", "apps.ontology.api.router")
