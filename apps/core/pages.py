"""Pieces every app's HTMX pages use (DESIGN §6: one view per URL, page or fragment)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers


def render_page_or_fragment(
    request: HttpRequest, page: str, fragment: str, context: dict, status: int = 200
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
