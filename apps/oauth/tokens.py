"""An OAuth access token as CortexWeb's permission model sees it: its grant's ``ApiToken``.

``apps.core.services.api_token_authenticate`` falls back here when a bearer token is no API token,
so ``/v1/``, ``/api/`` and ``/mcp`` accept OAuth access tokens through the one code path.
"""

from __future__ import annotations

import hashlib
import secrets
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http.request import split_domain_port, validate_host
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from apps.core.errors import AuthenticationRequired
from apps.core.models import ApiToken
from apps.oauth.models import OAuthGrant
from apps.oauth.services import MCP_PATH, OAUTH_SCOPES

# The paths of this server's resources an access token may be issued for (RFC 8707): the server as a
# whole (the root metadata document) and the MCP endpoint (the path-suffixed one).
RESOURCE_PATHS = ("", "/", MCP_PATH)
UNKNOWN = "The bearer token is unknown, expired or revoked."


def resource_is_ours(resource: str) -> bool:
    """Whether ``resource`` names this server (a host it answers to, ``ALLOWED_HOSTS``) or its MCP
    endpoint: an access token whose audience is another server is not accepted here."""
    parsed = urlsplit(resource)
    domain, _port = split_domain_port(parsed.netloc)
    return (
        parsed.scheme in ("http", "https")
        and bool(domain)
        and validate_host(domain, settings.ALLOWED_HOSTS)
        and parsed.path in RESOURCE_PATHS
        and not parsed.query
    )


def _grant_token(access_token: object) -> ApiToken:
    """The ``ApiToken`` of the token's user + client, created on its first use."""
    user, application = access_token.user, access_token.application  # type: ignore[attr-defined]
    grant = OAuthGrant.objects.select_related("api_token").filter(user=user, application=application).first()
    if grant is not None:
        return grant.api_token
    secret = secrets.token_urlsafe(32)  # never shown: the grant's token is used only through OAuth
    try:
        with transaction.atomic():
            api_token = ApiToken.objects.create(
                name=f"OAuth: {application.name or application.client_id} for {user.get_username()}"[:100],
                prefix="oauth",
                token_hash=hashlib.sha256(secret.encode()).hexdigest(),
                scopes=list(OAUTH_SCOPES),
                created_by=user,
            )
            OAuthGrant.objects.create(user=user, application=application, api_token=api_token)
    except IntegrityError:
        # Another request created it first.
        return (
            OAuthGrant.objects.select_related("api_token").get(user=user, application=application).api_token
        )
    return api_token


def oauth_token_authenticate(*, raw_token: str) -> ApiToken:
    """The grant's ``ApiToken`` for an unexpired, unrevoked OAuth access token issued for this
    server, with the access token's scopes (never ``admin``); ``AuthenticationRequired`` otherwise."""
    checksum = hashlib.sha256(raw_token.encode()).hexdigest()
    access_token = (
        get_access_token_model()
        .objects.select_related("user", "application")
        .filter(token_checksum=checksum)
        .first()
    )
    if access_token is None or access_token.expires <= timezone.now() or access_token.user is None:
        raise AuthenticationRequired(UNKNOWN)
    if not access_token.user.is_active:
        raise AuthenticationRequired("The account this OAuth token was granted by is disabled.")
    resources = list(access_token.resource or [])
    if not resources:
        raise AuthenticationRequired(
            "This OAuth access token names no resource; authorize again with "
            "resource=<this server's /mcp URL>."
        )
    if not all(resource_is_ours(resource) for resource in resources):
        raise AuthenticationRequired(
            f"This OAuth access token was issued for another resource: {', '.join(map(str, resources))}."
        )
    api_token = _grant_token(access_token)
    if not api_token.is_active:
        raise AuthenticationRequired(UNKNOWN)
    api_token.scopes = [scope for scope in access_token.scope.split() if scope in OAUTH_SCOPES]
    return api_token
