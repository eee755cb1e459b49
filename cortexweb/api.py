"""The one NinjaAPI behind ``/v1/``: routers per app, one error shape.

OpenAPI at ``/v1/openapi.json``, interactive docs at ``/v1/docs``.
"""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from apps.core.errors import (
    ApplicationError,
    AuthenticationRequired,
    BadRequest,
    NotFound,
    PayloadTooLarge,
    ValidationFailed,
    error_response,
    pydantic_errors_to_details,
    sees_upstream_locations,
)

api = NinjaAPI(
    title="CortexWeb agent API",
    version="1",
    urls_namespace="v1",
    description="Grounds AI agents in knowledge they can verify. Errors: {error: {code, message, details}}.",
)


@api.exception_handler(ApplicationError)
def _application_error(request: HttpRequest, exc: ApplicationError) -> HttpResponse:
    return error_response(exc, privileged=sees_upstream_locations(request))


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return error_response(
        ValidationFailed(
            "The request has invalid fields; see details.fields for each one to fix.",
            details=pydantic_errors_to_details(list(exc.errors)),
        )
    )


@api.exception_handler(AuthenticationError)
def _authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(AuthenticationRequired("Send 'Authorization: Bearer <token>'."))


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if exc.status_code == 400:
        return error_response(BadRequest("The request body is not valid JSON."))
    error = ApplicationError(str(exc.message))
    error.status_code = exc.status_code
    error.code = {401: "authentication_required", 403: "permission_denied", 429: "rate_limited"}.get(
        exc.status_code, "http_error"
    )
    return error_response(error)


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(NotFound(str(exc) or "Not found."))


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error_response(PayloadTooLarge("The request body is larger than the server accepts."))


api.add_router("/embeddings", "apps.embeddings.api.router")
api.add_router("", "apps.connectors.api.router")
api.add_router("/arxiv", "apps.arxiv.api.router")
api.add_router("/facts", "apps.wikidata.api.router")
api.add_router("/knowledge", "apps.knowledge.api.router")
api.add_router("/grounding", "apps.grounding.api.router")
