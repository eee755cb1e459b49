"""Request middleware: correlation ids and the API body-size limit."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from apps.core.errors import BadRequest, PayloadTooLarge, error_response
from apps.core.logging import accept_or_generate_correlation_id, reset_correlation_id, set_correlation_id

CORRELATION_HEADER = "X-Request-ID"
API_PREFIXES = ("/v1/", "/api/")


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
            raw_length = request.META.get("CONTENT_LENGTH") or "0"
            try:
                length = int(raw_length)
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
