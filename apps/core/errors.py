"""One error hierarchy, rendered in one shape by both APIs.

Every error a client can see is an ``ApplicationError`` (or is translated into
one at the edge) and is rendered as::

    {"error": {"code": "...", "message": "...", "details": {...}}}

with the status its class names. The ninja API (``/v1/``) and DRF (``/api/``)
both route their exceptions through :func:`error_payload`, so a client sees
one shape whichever API it calls, and a bad request never becomes a 500.
"""

from __future__ import annotations

import math
import re
from typing import Any

from django.db import InterfaceError as DatabaseInterfaceError
from django.db import OperationalError as DatabaseOperationalError
from django.http import JsonResponse
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rest_framework.exceptions import APIException

from apps.core.logging import get_logger

logger = get_logger(__name__)


class ApplicationError(Exception):
    """Base of every error CortexWeb reports to a client."""

    status_code = 500
    code = "internal_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def headers(self) -> dict[str, str]:
        return {}


class ValidationFailed(ApplicationError):
    """The request is malformed: wrong fields, types or values."""

    status_code = 422
    code = "validation_error"


class BadRequest(ApplicationError):
    """The request cannot be read at all (not JSON, wrong content type)."""

    status_code = 400
    code = "bad_request"


class InvalidParameter(ApplicationError):
    """A query parameter (a filter of the resource API) has a value it cannot take: 400, as DRF
    answers invalid fields."""

    status_code = 400
    code = "validation_error"


class AuthenticationRequired(ApplicationError):
    """No valid bearer token was presented."""

    status_code = 401
    code = "authentication_required"

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": 'Bearer realm="cortexweb"'}


class PermissionDenied(ApplicationError):
    """The token is valid but lacks the scope this operation needs."""

    status_code = 403
    code = "permission_denied"


class NotFound(ApplicationError):
    status_code = 404
    code = "not_found"


class Conflict(ApplicationError):
    status_code = 409
    code = "conflict"


class MethodNotAllowed(ApplicationError):
    status_code = 405
    code = "method_not_allowed"

    def __init__(self, message: str, *, allowed: list[str]) -> None:
        super().__init__(message, details={"allowed": allowed})
        self.allowed = allowed

    def headers(self) -> dict[str, str]:
        return {"Allow": ", ".join(self.allowed)}


class PayloadTooLarge(ApplicationError):
    status_code = 413
    code = "payload_too_large"


class UnsupportedMediaType(ApplicationError):
    status_code = 415
    code = "unsupported_media_type"


class RateLimited(ApplicationError):
    """A limiter refused the call: waiting would pass the caller's deadline."""

    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: float, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details={"retryAfter": round(retry_after, 3), **(details or {})})
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(max(1, math.ceil(self.retry_after)))}


class FeatureDisabled(ApplicationError):
    """A capability is switched off by a feature flag."""

    status_code = 503
    code = "feature_disabled"


class UpstreamError(ApplicationError):
    """An upstream service (Wikidata, arXiv, an MCP server) failed.

    ``retryable`` separates transient failures (429, 503, timeouts, connection
    errors) that are worth retrying within a bound from terminal ones (other
    4xx, malformed data) that fail fast.
    """

    status_code = 502
    code = "upstream_error"

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, details=details)
        self.retryable = retryable
        self.retry_after = retry_after


class DeadlineReached(UpstreamError):
    """A request to an upstream that was not sent: the caller's deadline (a run's) had passed.

    Terminal — retrying cannot bring time back — and raised before any limiter slot or connection
    is taken, so a run past its deadline starts no request (issue #23)."""

    def __init__(self, *, upstream: str, name: str) -> None:
        super().__init__(
            f"the deadline passed before a request to {name} could start",
            details={"upstream": upstream, "reason": "deadline", "retryable": False},
            retryable=False,
        )


class UpstreamUnreachable(UpstreamError):
    """A request to an upstream that was not sent: its breaker is open, because it could not be
    reached just now (``apps.core.breaker``).

    Retryable — the upstream may be back when the window ends (``retry_after``) — but never retried
    within a call: every attempt before the window ends would be refused unsent too. Its ``code``
    stays ``upstream_error`` (agents handle that already); ``details.reason`` says ``unreachable``."""


def error_type(error: ApplicationError) -> str:
    """How a failure is filed on runs and in metrics: the upstream's ``reason`` (timeout, connection,
    configuration …) when it gave one, else ``retryable`` or ``terminal``."""
    reason = error.details.get("reason") if isinstance(error.details, dict) else None
    return str(reason or ("retryable" if getattr(error, "retryable", False) else "terminal"))


class ServiceUnavailable(ApplicationError):
    status_code = 503
    code = "service_unavailable"


# How long a client is asked to wait after a dependency failed to answer within its timeout.
OUTAGE_RETRY_AFTER_SECONDS = 5


class DependencyUnavailable(ServiceUnavailable):
    """Postgres, Redis or the Celery broker did not answer within its configured timeout; the
    request may be retried (what it wrote in a transaction was rolled back)."""

    def __init__(self, dependency: str) -> None:
        super().__init__(
            f"The {dependency} is not answering; retry in {OUTAGE_RETRY_AFTER_SECONDS} s.",
            details={"dependency": dependency, "retryAfter": OUTAGE_RETRY_AFTER_SECONDS},
        )

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(OUTAGE_RETRY_AFTER_SECONDS)}


# The exceptions that say a dependency is down or stalled past its timeout, and which one: Postgres
# connection failures and timeouts (a statement_timeout cancellation is an OperationalError too),
# Redis's, and the Celery broker's when a task is sent.
OUTAGE_DEPENDENCIES: dict[type[Exception], str] = {
    DatabaseOperationalError: "database",
    DatabaseInterfaceError: "database",
    RedisConnectionError: "Redis server",
    RedisTimeoutError: "Redis server",
    BrokerOperationalError: "task broker",
}


def dependency_outage(exc: BaseException) -> DependencyUnavailable | None:
    """The 503 an exception means when it says a dependency is down or stalled, else None. Every
    edge (ninja's and DRF's exception handlers, the pages' middleware) asks this one function."""
    for kind, dependency in OUTAGE_DEPENDENCIES.items():
        if isinstance(exc, kind):
            return DependencyUnavailable(dependency)
    return None


def log_dependency_outage(exc: BaseException, outage: DependencyUnavailable) -> None:
    """One warning per refused request: the outage is an operations matter, not a bug (no traceback)."""
    logger.warning(
        "dependency.unavailable",
        dependency=outage.details["dependency"],
        error=f"{type(exc).__name__}: {exc}".strip()[:300],
    )


def error_payload(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


# Where an upstream lives (its URL, endpoint, host or address) is for operators: upstream errors show
# these fields, and any other field whose value is a URL, only to admin-scope tokens and staff users.
UPSTREAM_LOCATION_KEYS = frozenset({"url", "endpoint", "sparqlEndpoint", "host", "address"})
_URL_VALUE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def sees_upstream_locations(request: Any) -> bool:
    """Whether the caller may see upstream URLs: a token with the ``admin`` scope, or a staff user."""
    try:
        token = getattr(request, "auth", None)  # DRF authenticates on first access: it may raise
    except (ApplicationError, APIException):
        return False
    has_scope = getattr(token, "has_scope", None)
    if callable(has_scope) and has_scope("admin"):
        return True
    user = getattr(request, "user", None)
    return bool(getattr(user, "is_staff", False) and getattr(user, "is_active", False))


def _without_locations(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: _without_locations(item)
            for key, item in value.items()
            if key not in UPSTREAM_LOCATION_KEYS and not (isinstance(item, str) and _URL_VALUE.match(item))
        }
    if isinstance(value, list):
        return [_without_locations(item) for item in value]
    return value


def visible_details(error: ApplicationError, *, privileged: bool) -> dict[str, Any]:
    """``error.details`` as this caller may see them: upstream locations only for the privileged.

    What is withheld is logged (with the correlation id), so operators can still find it.
    """
    if privileged or not isinstance(error, UpstreamError):
        return error.details
    visible = _without_locations(error.details)
    if visible != error.details:
        logger.info("upstream_error.locations_withheld", message=error.message, details=error.details)
    return visible


def error_response(error: ApplicationError, *, privileged: bool = False) -> JsonResponse:
    """The error in the one shape; an upstream error's locations only when ``privileged``."""
    details = visible_details(error, privileged=privileged)
    response = JsonResponse(error_payload(error.code, error.message, details), status=error.status_code)
    for header, value in error.headers().items():
        response[header] = value
    return response


def pydantic_errors_to_details(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """Turn ninja/pydantic error lists into ``{"fields": [{"path", "message", "type"}]}``.

    The path is dotted (``body.payload.topK``) so a client can point at the field to fix.
    """
    fields = []
    for error in errors:
        location = [str(part) for part in error.get("loc", ())]
        fields.append(
            {
                "path": ".".join(location),
                "message": str(error.get("msg", "invalid value")),
                "type": str(error.get("type", "value_error")),
            }
        )
    return {"fields": fields}


class DrfApplicationError(APIException):
    """An ``ApplicationError`` carried through DRF code that only expects DRF's own exceptions
    (the browsable API probes permissions to decide which forms to show)."""

    def __init__(self, error: ApplicationError) -> None:
        super().__init__(detail=error.message, code=error.code)
        self.status_code = error.status_code
        self.error = error


def drf_exception_handler(exc: Exception, context: dict[str, Any]):
    """DRF's EXCEPTION_HANDLER: every error in the one shape."""
    from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
    from django.core.exceptions import ValidationError as DjangoValidationError
    from django.http import Http404
    from rest_framework import exceptions as drf
    from rest_framework.response import Response

    if isinstance(exc, DrfApplicationError):
        exc = exc.error
    if outage := dependency_outage(exc):
        log_dependency_outage(exc, outage)
        exc = outage
    elif isinstance(exc, DjangoValidationError):
        # A value the ORM could not convert (a malformed UUID in a filter): the client's mistake.
        exc = InvalidParameter("; ".join(exc.messages) or "A parameter has an invalid value.")
    if isinstance(exc, ApplicationError):
        # Only an upstream error has locations to withhold. Asking who the caller is means
        # authenticating again (DRF's request.auth), which must not happen when authentication is
        # what failed: a second wait on a stalled database, or the same error raised in here.
        privileged = isinstance(exc, UpstreamError) and sees_upstream_locations(context.get("request"))
        visible = visible_details(exc, privileged=privileged)
        response = Response(error_payload(exc.code, exc.message, visible), status=exc.status_code)
        for header, value in exc.headers().items():
            response[header] = value
        return response
    if isinstance(exc, Http404):
        exc = drf.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    if not isinstance(exc, drf.APIException):
        return None  # a real bug: let Django log it and answer 500

    codes = {
        drf.NotAuthenticated: AuthenticationRequired.code,
        drf.AuthenticationFailed: AuthenticationRequired.code,
        drf.PermissionDenied: PermissionDenied.code,
        drf.NotFound: NotFound.code,
        drf.ValidationError: ValidationFailed.code,
        drf.ParseError: BadRequest.code,
        drf.Throttled: RateLimited.code,
    }
    code = next((value for kind, value in codes.items() if isinstance(exc, kind)), str(exc.default_code))
    if isinstance(exc, drf.ValidationError):
        message = "The request has invalid fields; see details."
        details: dict[str, Any] = {"fields": exc.detail}
    else:
        message = str(exc.detail)
        details = {}
    response = Response(error_payload(code, message, details), status=exc.status_code)
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        response.status_code = 401
        response["WWW-Authenticate"] = 'Bearer realm="cortexweb"'
    if getattr(exc, "wait", None):
        response["Retry-After"] = str(math.ceil(exc.wait))
    return response
