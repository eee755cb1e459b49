"""The OAuth endpoints: thin views over ``services``."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from apps.oauth import services


def _origin(request: HttpRequest) -> str:
    return f"{request.scheme}://{request.get_host()}"


@require_GET
def protected_resource_metadata(request: HttpRequest, resource_path: str = "") -> JsonResponse:
    """RFC 9728 §3: the root document (the server) or the path-suffixed one (``/mcp``)."""
    response = JsonResponse(services.protected_resource_metadata(_origin(request), resource_path))
    # Public, and fetched cross-origin by browser-based MCP hosts (the MCP Inspector) before they
    # have any credential: RFC 9728 documents are meant to be read by anyone.
    response["Access-Control-Allow-Origin"] = "*"
    return response
