"""Operational endpoints: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET
from django.views.defaults import bad_request as django_bad_request

from apps.core import error_pages
from apps.core.auth import metrics_access_check
from apps.core.errors import ApplicationError, BadRequest, NotFound, PermissionDenied, error_response
from apps.core.logging import get_logger
from apps.core.metrics import render_metrics
from apps.core.selectors import readiness

logger = get_logger(__name__)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive and serving; touches no dependency."""
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when Postgres (with pgvector), Redis and a Celery worker answer; 503 naming what failed."""
    checks = readiness()
    failed = sorted(name for name, result in checks.items() if not result["ok"])
    body = {"status": "ready" if not failed else "unavailable", "failed": failed, "checks": checks}
    if not failed:
        # Detail only: readiness is about this service, so an upstream that is down never makes it
        # unready (the alerts and the dashboard say so). Read only when Postgres and Redis answer.
        body["detail"] = {"upstreams": _upstreams_detail()}
    response = JsonResponse(body, status=503 if failed else 200)
    if failed:
        # Not ready is an answer, not a server error: probes poll through it at every start-up
        # (manage.py run, orchestrators). Logged as information naming what is missing; whatever
        # failed logs its own error where it failed.
        logger.info("readyz.not_ready", failed=failed)
        response._has_been_logged = True  # type: ignore[attr-defined] - Django's log_response skips it
    return response


def _upstreams_detail() -> dict[str, Any]:
    from apps.connectors.health import readiness_detail

    try:
        return readiness_detail()
    except Exception as error:  # noqa: BLE001 - a detail that cannot be read must not fail readiness
        logger.warning("readyz.upstreams_detail_failed", error=str(error))
        return {"error": f"{type(error).__name__}: {error}"}


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for on pages that link no icon (the admin's): the static
    icon, so no page logs a 404 for it."""
    response = HttpResponseRedirect(static("favicon.ico"))
    patch_cache_control(response, public=True, max_age=86400)
    return response


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text, for configured networks or a ``read`` token (``auth.metrics_access_check``)."""
    try:
        metrics_access_check(request)
    except ApplicationError as error:
        return error_response(error)
    payload, content_type = render_metrics()
    return HttpResponse(payload, content_type=content_type)


def _is_api_request(request: HttpRequest) -> bool:
    return request.path.startswith(("/v1/", "/api/"))


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """400 for a request Django itself refuses (too many fields, a broken multipart body): the error
    shape for API paths, Django's page elsewhere."""
    if _is_api_request(request):
        return error_response(
            BadRequest("The request cannot be read: its body or parameters are malformed or too many.")
        )
    return django_bad_request(request, exception)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404: the error shape for API paths, the site's own page elsewhere (``error_pages``)."""
    if _is_api_request(request):
        return error_response(NotFound(f"No endpoint at {request.path}. See /v1/docs for the agent API."))
    return error_pages.not_found_page(request, exception)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """403 (a page's ``PermissionDenied``): the error shape for API paths, the site's page elsewhere."""
    if _is_api_request(request):
        return error_response(PermissionDenied("You may not do this."))
    return error_pages.forbidden_page(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """500: the error shape for API paths (the traceback is logged, never sent), the site's page elsewhere."""
    if _is_api_request(request):
        return error_response(ApplicationError("An internal error occurred; it has been logged."))
    return error_pages.server_error_page()
