"""The OAuth endpoints: thin views over ``services``."""

from __future__ import annotations

import json
import math
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from oauth2_provider.views import DynamicClientRegistrationManagementView, DynamicClientRegistrationView

from apps.core.errors import RateLimited
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


@method_decorator(csrf_exempt, name="dispatch")
class ClientRegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration as DOT serves it, behind this server's rules (``services``): a limit
    per client address, and only public authorization-code clients with https or loopback
    redirect URIs. Errors are RFC 7591's ``{"error", "error_description"}``."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            services.registration_limiter(address=request.META.get("REMOTE_ADDR", "")).check()
        except RateLimited as error:
            response = _oauth_error(
                "slow_down", f"Too many client registrations from this address; {error.message}", 429
            )
            response["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
            return response
        try:
            data = json.loads(request.body)
        except ValueError:
            return _oauth_error("invalid_client_metadata", "The request body must be JSON.", 400)
        try:
            metadata = services.registration_metadata(data)
        except services.RegistrationRefused as refused:
            return _oauth_error(refused.error, refused.description, 400)
        # DOT reads the body again: hand it the metadata as registered.
        request._body = json.dumps(metadata).encode()
        return super().post(request, *args, **kwargs)


def _oauth_error(error: str, description: str, status: int) -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


@method_decorator(csrf_exempt, name="dispatch")
class ClientConfigurationView(DynamicClientRegistrationManagementView):
    """RFC 7592 read and delete of a registration, with its registration access token. No update:
    a PUT would change redirect URIs past the rules ``ClientRegistrationView`` checks."""

    http_method_names = ["get", "delete"]
