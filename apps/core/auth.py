"""``Authorization: Bearer …`` authentication for ninja (/v1/) and DRF (/api/).

Both resolve the same hashed ``ApiToken`` through ``api_token_authenticate``
and check scopes the same way.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.security import HttpBearer
from rest_framework import authentication, permissions

from apps.core.errors import ApplicationError, AuthenticationRequired, DrfApplicationError, PermissionDenied
from apps.core.models import ApiToken, TokenScope
from apps.core.services import api_token_authenticate


def bearer_token(header: str) -> str:
    """The raw token of an ``Authorization: Bearer …`` header; ``AuthenticationRequired`` saying what
    to send when it is missing or not of that form."""
    if not header:
        raise AuthenticationRequired("Send 'Authorization: Bearer <token>'.")
    if not header.lower().startswith("bearer ") or not header[7:].strip():
        raise AuthenticationRequired("The Authorization header must be 'Bearer <token>'.")
    return header[7:].strip()


def _require_scope(token: ApiToken, scope: str) -> None:
    if not token.has_scope(scope):
        raise PermissionDenied(
            f"This operation needs a token with the '{scope}' scope.",
            details={"required": scope, "granted": token.scopes},
        )


class BearerToken(HttpBearer):
    """ninja auth: a valid token with ``scope``; ``request.auth`` is the ApiToken."""

    def __init__(self, scope: str = TokenScope.READ) -> None:
        super().__init__()
        self.scope = scope

    def __call__(self, request: HttpRequest) -> Any:
        return self.authenticate(request, bearer_token(request.headers.get("Authorization", "")))

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:
        api_token = api_token_authenticate(raw_token=token)
        _require_scope(api_token, self.scope)
        return api_token


# One auth object per scope; an endpoint names the one its operation needs (docs/security.md).
read_token = BearerToken(TokenScope.READ)
upstream_token = BearerToken(TokenScope.UPSTREAM)
verify_token = BearerToken(TokenScope.VERIFY)
write_token = BearerToken(TokenScope.WRITE)
propose_token = BearerToken(TokenScope.PROPOSE)
admin_token = BearerToken(TokenScope.ADMIN)


class DrfBearerTokenAuthentication(authentication.BaseAuthentication):
    """DRF auth: ``request.user`` stays anonymous, ``request.auth`` is the ApiToken."""

    def authenticate(self, request: Any) -> tuple[None, ApiToken] | None:
        header = request.headers.get("Authorization", "")
        if not header:
            return None
        try:
            return None, api_token_authenticate(raw_token=bearer_token(header))
        except ApplicationError as error:
            # As a DRF exception, so DRF marks the request unauthenticated before it re-raises: code
            # that reads ``request.auth`` afterwards (the exception handler) does not authenticate again.
            raise DrfApplicationError(error) from error

    def authenticate_header(self, request: Any) -> str:
        return 'Bearer realm="cortexweb"'


class DrfSessionAuthentication(authentication.SessionAuthentication):
    """DRF auth for ``/api/`` in a browser: the Django session of the admin login, tried after the bearer
    token (which always wins when sent). DRF checks the CSRF token of every unsafe request it
    authenticates this way; who may do what is ``DrfTokenScopePermission``'s session rule."""


# What a session's unsafe method needs: the Django model permission, as for the admin.
SESSION_WRITE_ACTIONS = {"POST": "add", "PUT": "change", "PATCH": "change", "DELETE": "delete"}


def session_allowed(user: Any, view: Any, method: str) -> bool:
    """A session's rule (``security.session_outcome``): active staff; a safe method needs one of the
    view's ``session_read_perms`` (``()``: any staff; a view that declares none is for superusers),
    an unsafe one the model's add/change/delete permission; superusers hold every permission."""
    if not (user.is_active and user.is_staff):
        return False
    if user.is_superuser:
        return True
    if method in permissions.SAFE_METHODS:
        declared = getattr(view, "session_read_perms", None)
        if declared is None:
            return False
        needs = tuple(declared)
    elif getattr(view, "session_write_perms", None) is not None:
        # A view whose only writes are not the model's add/change/delete (a review) names its own.
        needs = tuple(view.session_write_perms)
    else:
        opts = view.get_queryset().model._meta
        needs = (f"{opts.app_label}.{SESSION_WRITE_ACTIONS[method]}_{opts.model_name}",)
    return not needs or any(user.has_perm(perm) for perm in needs)


class DrfTokenScopePermission(permissions.BasePermission):
    """A token: safe methods need ``read``, writes the view's ``write_scope`` (default ``admin``).
    A session (no token): ``session_allowed``."""

    def has_permission(self, request: Any, view: Any) -> bool:
        token = request.auth
        if request.method in permissions.SAFE_METHODS:
            scope = getattr(view, "read_scope", TokenScope.READ)
        else:
            scope = getattr(view, "write_scope", TokenScope.ADMIN)
        try:
            if isinstance(token, ApiToken):
                _require_scope(token, scope)
            elif request.user is not None:
                if not session_allowed(request.user, view, request.method):
                    raise PermissionDenied("Your account does not have the permission this operation needs.")
            else:
                raise AuthenticationRequired("Send 'Authorization: Bearer <token>', or sign in as staff.")
        except ApplicationError as error:
            raise DrfApplicationError(error) from error
        return True


# --- /metrics -----------------------------------------------------------------------------------

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks_parse(entries: Iterable[str]) -> tuple[list[IPNetwork], list[str]]:
    """The networks among ``entries`` (CIDR or a single address) and the entries that are neither."""
    networks: list[IPNetwork] = []
    invalid: list[str] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            invalid.append(entry)
    return networks, invalid


@functools.lru_cache(maxsize=8)
def _metrics_networks(entries: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    # An invalid entry allows nothing (the system check cortex.E030 names it).
    return tuple(networks_parse(entries)[0])


def address_in_networks(address: str, networks: Iterable[IPNetwork]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == network.version and ip in network for network in networks)


def metrics_access_check(request: HttpRequest) -> None:
    """``/metrics`` answers a peer in ``CORTEX_METRICS_ALLOW_NETWORKS`` (default: loopback) without a
    token; anyone else needs a bearer token with the ``read`` scope (``admin`` implies it).

    The peer is the connection's address (``REMOTE_ADDR``), never a forwarded header a client could
    write itself. Raises ``AuthenticationRequired`` (401) or ``PermissionDenied`` (403).
    """
    networks = _metrics_networks(tuple(settings.CORTEX_METRICS_ALLOW_NETWORKS))
    if address_in_networks(request.META.get("REMOTE_ADDR", ""), networks):
        return
    token = api_token_authenticate(raw_token=bearer_token(request.headers.get("Authorization", "")))
    _require_scope(token, TokenScope.READ)
