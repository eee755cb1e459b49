"""Every request is one change set: what one admin save, page form or API call changed, by whom."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from apps.changes.services import change_set


class ChangeSetMiddleware:
    """Opens a change set around the view (after ``AuthenticationMiddleware``: the user is read
    when an entry is written, so the APIs' token authentication inside the view counts too)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with change_set(label=f"{request.method} {request.path}"[:200], request=request):
            return self.get_response(request)
