"""The OAuth endpoints: thin views over ``services``."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseNotFound, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
)
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from apps.core.errors import NotFound, RateLimited
from apps.oauth import services
from apps.oauth.forms import ConsentForm
from apps.oauth.tokens import resource_is_ours


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


def cross_origin_public(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Open an endpoint that carries no ambient authority (registration, token, revocation) to
    browser-based MCP hosts such as the MCP Inspector's web UI, which run the OAuth flow from their
    own origin. ``*`` without ``Allow-Credentials`` means a browser never attaches this site's
    cookies, so nothing a signed-in user holds is reachable this way: what these endpoints accept
    is in the request itself (client metadata, a code with its PKCE verifier, a token)."""

    @wraps(view)  # keeps csrf_exempt: these endpoints take no cookie, so CSRF has nothing to forge
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "OPTIONS":  # the CORS preflight of a JSON or form POST
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "POST, OPTIONS"
            response["Access-Control-Allow-Headers"] = "Content-Type, Authorization, MCP-Protocol-Version"
            response["Access-Control-Max-Age"] = "600"
        else:
            response = view(request, *args, **kwargs)
        response["Access-Control-Allow-Origin"] = "*"
        return response

    return wrapped


@method_decorator(csrf_exempt, name="dispatch")
class ClientRegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration as DOT serves it, behind this server's rules (``services``): a limit
    per client address, and only public authorization-code clients with https or loopback
    redirect URIs. Errors are RFC 7591's ``{"error", "error_description"}``."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.content_type != "application/json":
            # RFC 7591 §3.1: the metadata is a JSON document (a form body is also unreadable twice).
            return _oauth_error("invalid_client_metadata", "Send the metadata as application/json.", 400)
        try:
            data = json.loads(request.body)
        except ValueError:
            return _oauth_error("invalid_client_metadata", "The request body must be JSON.", 400)
        try:
            metadata = services.registration_metadata(data)
        except services.RegistrationRefused as refused:
            return _oauth_error(refused.error, refused.description, 400)
        # Counted once valid: the limit guards against a flood of clients (rows), and a refused
        # request writes nothing.
        try:
            services.registration_limiter(address=request.META.get("REMOTE_ADDR", "")).check()
        except RateLimited as error:
            response = _oauth_error(
                "slow_down", f"Too many client registrations from this address; {error.message}", 429
            )
            response["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
            return response
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


class ConsentView(AuthorizationView):
    """The authorization endpoint: the signed-in user sees who asks (client name, redirect URI) for
    what (scopes), ticks the scopes to grant, and allows or denies. DOT validates the request
    (client, exact redirect URI, PKCE S256, known scopes) before the page is shown."""

    template_name = "oauth/authorize.html"
    form_class = ConsentForm
    login_url = reverse_lazy("oauth2_provider:login")

    def validate_authorization_request(self, request: HttpRequest) -> Any:
        scopes, credentials = super().validate_authorization_request(request)
        if credentials.get("code_challenge_method") != "S256":
            # DOT refuses "plain" only once the code is made, after consent: refuse it before.
            raise OAuthToolkitError(
                error=CustomOAuth2Error(
                    error="invalid_request",
                    description='code_challenge_method must be "S256".',
                    state=credentials.get("state"),
                ),
                redirect_uri=credentials["redirect_uri"],
            )
        # RFC 8707: a token is only ever for this server; a request for another resource is
        # refused before consent (invalid_target, sent back to the validated redirect URI).
        for resource in request.GET.getlist("resource"):
            if not resource_is_ours(resource):
                raise OAuthToolkitError(
                    error=CustomOAuth2Error(
                        error="invalid_target",
                        description=f"This server issues tokens only for itself, not for '{resource}'.",
                        state=credentials.get("state"),
                    ),
                    redirect_uri=credentials["redirect_uri"],
                )
        return scopes, credentials

    def get_initial(self) -> dict[str, Any]:
        initial = super().get_initial()
        initial["granted"] = initial["scope"].split()
        return initial

    def form_valid(self, form: ConsentForm) -> HttpResponse:
        if not form.cleaned_data.get("resource"):
            # A client that names no resource (RFC 8707 is newer than some hosts) gets a token for
            # the MCP endpoint: every token here is audience-restricted.
            form.cleaned_data["resource"] = f"{_origin(self.request)}{services.MCP_PATH}"
        return super().form_valid(form)

    def render_to_response(self, context: dict[str, Any], **response_kwargs: Any) -> HttpResponse:
        response = super().render_to_response(context, **response_kwargs)
        application, form = context.get("application"), context.get("form")
        redirect_uri = context.get("redirect_uri") or (form["redirect_uri"].value() if form else "")
        policy = settings.CORTEX_CONTENT_SECURITY_POLICY
        # Only a redirect URI registered for this client may become a form target (a re-shown form
        # carries the URI the browser posted back).
        if (
            policy
            and application is not None
            and redirect_uri
            and application.redirect_uri_allowed(redirect_uri)
        ):
            response["Content-Security-Policy"] = services.consent_page_policy(policy, redirect_uri)
        return response

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        descriptions = dict(services.OAUTH_SCOPES_DESCRIBED)
        form = context.get("form")
        if form is not None:
            requested = str(form["scope"].value() or "").split()
            form.fields["granted"].choices = [(scope, descriptions.get(scope, scope)) for scope in requested]
        return context


class LoginView(auth_views.LoginView):
    """Sign-in for the consent page, with any active Django account (the admin's login is for staff)."""

    template_name = "oauth/login.html"
    redirect_authenticated_user = False


@login_required(login_url=reverse_lazy("oauth2_provider:login"))
@require_http_methods(["GET", "POST"])
def my_grants(request: HttpRequest) -> HttpResponse:
    """The signed-in user's OAuth grants (the MCP hosts they authorized), each revocable."""
    if request.method == "POST":
        try:
            grant_id = int(request.POST.get("grant", ""))
            revoked = services.user_grant_revoke(user=request.user, grant_id=grant_id)
        except ValueError:
            return HttpResponseBadRequest("Say which grant to revoke: grant=<id>.")
        except NotFound as error:
            return HttpResponseNotFound(error.message)
        messages.success(request, f"Access revoked ({revoked} tokens); the application must ask you again.")
        return redirect("oauth2_provider:my_grants")
    return render(request, "oauth/grants.html", {"grants": services.user_grants(user=request.user)})
