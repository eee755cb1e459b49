"""OAuth 2.1 for ``/mcp`` as the MCP authorization specification has it: CortexWeb is the protected
resource (RFC 9728 metadata, the ``WWW-Authenticate`` challenge that points to it).

A resource is named by an absolute URL on the server's own origin: ``<origin>/mcp`` for the MCP
endpoint (the path-suffixed metadata document), ``<origin>`` for the server as a whole (the root
document). The origin comes from the request, as Django builds absolute URLs (``Host``, checked
against ``ALLOWED_HOSTS``, and ``SECURE_PROXY_SSL_HEADER`` behind a TLS proxy), so the metadata
names the URL the client actually reached.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from apps.core.errors import NotFound
from apps.core.models import ApiToken, TokenScope
from apps.core.ratelimit import RateLimiter
from apps.oauth.models import OAuthGrant

# What an OAuth client may ask for. Never ``admin`` (operators create admin tokens by hand) and not
# ``propose`` (the ontology agent's own scope): the scopes an MCP host's user can sensibly grant.
OAUTH_SCOPES: tuple[str, ...] = (TokenScope.READ, TokenScope.WRITE, TokenScope.UPSTREAM, TokenScope.VERIFY)

# What the consent page says each scope lets the client do.
OAUTH_SCOPES_DESCRIBED: tuple[tuple[str, str], ...] = (
    (TokenScope.READ, "read: search knowledge, facts and papers, and read your memories"),
    (TokenScope.WRITE, "write: write memories and propose ontology changes"),
    (TokenScope.UPSTREAM, "upstream: start work against upstream sources (arXiv, Wikidata)"),
    (TokenScope.VERIFY, "verify: verify claims against the knowledge base"),
)

PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"


def resource_metadata_url(origin: str, resource_path: str = MCP_PATH) -> str:
    """Where the metadata of the resource at ``origin + resource_path`` is (RFC 9728 §3.1: the
    well-known path inserted between the origin and the resource's path)."""
    return f"{origin}{PROTECTED_RESOURCE_METADATA_PATH}{resource_path}"


def protected_resource_metadata(origin: str, resource_path: str = "") -> dict[str, Any]:
    """The RFC 9728 document of the resource ``origin + resource_path``. The authorization server
    is this same Django project, so its issuer is the origin."""
    return {
        "resource": f"{origin}{resource_path}",
        "authorization_servers": [origin],
        "scopes_supported": [str(scope) for scope in OAUTH_SCOPES],
        "bearer_methods_supported": ["header"],
        "resource_name": "CortexWeb MCP" if resource_path == MCP_PATH else "CortexWeb",
    }


# --- Dynamic client registration (RFC 7591) ------------------------------------------------------

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


class RegistrationRefused(Exception):
    """A registration request this server does not accept: the RFC 7591 error and what to fix."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def redirect_uri_problem(uri: str) -> str | None:
    """Why ``uri`` may not be a redirect URI, None when it may: ``https`` anywhere, or ``http`` on a
    loopback host (a native MCP host's local listener, any port: RFC 8252 §7.3). No fragment (RFC
    6749 §3.1.2), no credentials in the URL, no other scheme (``javascript:``, custom schemes)."""
    try:
        parsed = urlsplit(uri)
        parsed.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return f"'{uri}' is not a URL."
    problems = (
        (bool(parsed.fragment) or "#" in uri, "has a fragment; a redirect URI may not."),
        (parsed.username is not None or parsed.password is not None, "carries credentials; it may not."),
        (not parsed.hostname, "has no host."),
        (
            not (parsed.scheme == "https" or (parsed.scheme == "http" and parsed.hostname in LOOPBACK_HOSTS)),
            "must be https, or http on a loopback address (127.0.0.1, [::1], localhost).",
        ),
    )
    return next((f"'{uri}' {problem}" for failed, problem in problems if failed), None)


def registration_metadata(data: Any) -> dict[str, Any]:
    """The client metadata to register from a request's ``data``: a public client (PKCE, no secret:
    RFC 7591 §2 lets the server replace what a client asked for, and the response says what was
    registered) of the authorization-code grant, with checked redirect URIs and only OAuth scopes.
    ``RegistrationRefused`` otherwise."""
    if not isinstance(data, dict):
        raise RegistrationRefused("invalid_client_metadata", "The request body must be a JSON object.")
    redirect_uris = data.get("redirect_uris")
    uris_ok = isinstance(redirect_uris, list) and all(isinstance(uri, str) for uri in redirect_uris)
    if not (uris_ok and redirect_uris):
        raise RegistrationRefused("invalid_redirect_uri", "redirect_uris must be a non-empty array of URLs.")
    for uri in redirect_uris:
        if problem := redirect_uri_problem(uri):
            raise RegistrationRefused("invalid_redirect_uri", problem)
    grant_types = data.get("grant_types", ["authorization_code", "refresh_token"])
    if not isinstance(grant_types, list) or set(grant_types) - {"authorization_code", "refresh_token"}:
        raise RegistrationRefused(
            "invalid_client_metadata", "grant_types may only be authorization_code and refresh_token."
        )
    response_types = data.get("response_types", ["code"])
    if response_types != ["code"]:
        raise RegistrationRefused("invalid_client_metadata", "response_types may only be ['code'].")
    scope = data.get("scope")
    if scope is not None:
        unknown = set(str(scope).split()) - set(OAUTH_SCOPES)
        if unknown:
            raise RegistrationRefused(
                "invalid_client_metadata",
                f"Unknown or not grantable scopes: {', '.join(sorted(unknown))}; "
                f"the scopes are {', '.join(OAUTH_SCOPES)}.",
            )
    client_name = data.get("client_name", "")
    if not isinstance(client_name, str) or len(client_name) > 255:
        raise RegistrationRefused(
            "invalid_client_metadata", "client_name must be text of at most 255 characters."
        )
    return {
        **data,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "client_name": client_name or "Unnamed MCP client",
    }


def registration_limiter(*, address: str) -> RateLimiter:
    """Registrations from one client address: ``CORTEX_OAUTH_REGISTRATIONS_PER_MINUTE``, shared by
    every process through Redis (registration is open, so this is what stops a flood of clients)."""
    per_minute = max(settings.CORTEX_OAUTH_REGISTRATIONS_PER_MINUTE, 1)
    return RateLimiter(f"oauth:register:{address}", interval=60.0 / per_minute, burst=per_minute)


def is_grant_token(token: ApiToken) -> bool:
    """Whether ``token`` is an OAuth grant's (its holder got it through consent, and may ask again)."""
    return ApiToken.objects.filter(pk=token.pk, oauth_grant__isnull=False).exists()


# --- The consent page's Content-Security-Policy ---------------------------------------------------

# A CSP source expression for an origin: scheme, host (a name, IPv4 or bracketed IPv6) and port.
_ORIGIN_SOURCE = re.compile(r"^(https|http)://([a-z0-9.-]+|\[[0-9a-f:.]+\])(:[0-9]{1,5})?$")


def consent_page_policy(policy: str, redirect_uri: str) -> str:
    """``policy`` with the origin of ``redirect_uri`` (a URI registered for the client) allowed as a
    ``form-action``. Browsers apply ``form-action`` to the redirects that follow a form's submission
    too (CSP 3 §6.3.1), so with ``form-action 'self'`` alone the Allow and Deny buttons could never
    send the person back to the host. Only that one origin is added, and only when the policy
    restricts form targets and the origin is a plain source expression (nothing that could end the
    directive)."""
    parts = urlsplit(redirect_uri)
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    directives = [directive.strip() for directive in policy.split(";")]
    if not _ORIGIN_SOURCE.match(origin) or not any(d.split(" ")[0] == "form-action" for d in directives):
        return policy
    return "; ".join(
        f"{directive} {origin}" if directive.split(" ")[0] == "form-action" else directive
        for directive in directives
        if directive
    )


# --- A user's own grants -------------------------------------------------------------------------


def user_grants(*, user: Any) -> list[OAuthGrant]:
    """The user's grants, newest first, each with ``live_tokens``: its unexpired access tokens."""
    return list(
        OAuthGrant.objects.filter(user=user)
        .select_related("application")
        .annotate(
            live_tokens=Count(
                "application__accesstoken",
                filter=Q(
                    application__accesstoken__user=user, application__accesstoken__expires__gt=timezone.now()
                ),
            )
        )
        .order_by("-created_at")
    )


def user_grant_revoke(*, user: Any, grant_id: int) -> int:
    """End one of the user's grants: its access and refresh tokens go (the client must ask again);
    the grant and its memories stay. Returns how many tokens went; ``NotFound`` for a grant that
    is not the user's."""
    grant = OAuthGrant.objects.filter(pk=grant_id, user=user).first()
    if grant is None:
        raise NotFound("You have no such OAuth grant.")
    revoked = 0
    for model in (get_refresh_token_model(), get_access_token_model()):
        revoked += model.objects.filter(user=user, application=grant.application).delete()[0]
    return revoked
