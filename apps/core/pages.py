"""Pieces every app's HTMX pages use (DESIGN §6: one view per URL, page or fragment)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth import REDIRECT_FIELD_NAME
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails

from apps.core.errors import RateLimited
from apps.core.services import page_submission_check


class HtmxHttpRequest(HttpRequest):
    """A request as ``HtmxMiddleware`` leaves it (for type checking: ``request.htmx``)."""

    htmx: HtmxDetails


def render_page_or_fragment(
    request: HtmxHttpRequest, page: str, fragment: str, context: dict, status: int = 200
) -> HttpResponse:
    """The page, or for HTMX only its fragment (always 200 so htmx swaps it in)."""
    if request.htmx:
        response = render(request, fragment, context)
    else:
        response = render(request, page, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


def web_url(url: Any) -> str:
    """Only http(s) links are rendered as links: stored URLs come from upstream feeds, Wikidata's
    editors and imported files."""
    return url if isinstance(url, str) and url.startswith(("https://", "http://")) else ""


def login_redirect(request: HtmxHttpRequest) -> HttpResponse:
    """To the admin login, and back to this page afterwards. An HTMX request (a poll or a fragment)
    gets ``HX-Redirect`` to the page it came from, so the whole page goes to the login instead of the
    login form landing inside a fragment."""
    back = request.get_full_path()
    if request.htmx and request.htmx.current_url_abs_path:
        back = request.htmx.current_url_abs_path
    login_url = f"{reverse('admin:login')}?{urlencode({REDIRECT_FIELD_NAME: back})}"
    if request.htmx:
        return HttpResponse(status=204, headers={"HX-Redirect": login_url})
    return HttpResponseRedirect(login_url)


def page_submission_refusal(user: Any) -> tuple[str, int, str | None]:
    """Count one page submission (``services.page_submission_check``): ``("", 400, None)`` when it
    may go on, else the refusal's message, status (429) and ``Retry-After`` for a page that shows
    the refusal itself instead of raising it."""
    try:
        page_submission_check(user=user)
    except RateLimited as refusal:
        return refusal.message, refusal.status_code, refusal.headers().get("Retry-After")
    return "", 400, None


def page_role_granted(user: Any, perms: tuple[str, ...]) -> bool:
    """Whether ``user`` holds a page role: active staff with one of ``perms`` (any staff when none is
    named). Superusers hold every permission. The roles are listed in docs/security.md."""
    if not (user.is_authenticated and user.is_active and user.is_staff):
        return False
    return not perms or any(user.has_perm(perm) for perm in perms)


def permission_page(*perms: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """The one rule of every protected page: active staff holding one of ``perms`` (any active staff
    when none is named). Anonymous visitors go to the admin login and come back (an HTMX request gets
    ``HX-Redirect`` so the whole page goes); a signed-in user without the role gets 403."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return login_redirect(request)
            if not page_role_granted(request.user, perms):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapped

    return decorator
