"""The site's own 404, 403 and 500 pages (``templates/404.html``, ``403.html``, ``500.html``): the
navigation, a search box and the pages most visitors look for, instead of Django's bare "Not Found".

``apps.core.views``' handlers call these for every path that is not an API's (the APIs answer in the
error shape). The 500 page is rendered without a request, as Django's own is: the error may have
come from the session, the user or the database, so it reads none of them.
"""

from __future__ import annotations

import difflib

from django.http import Http404, HttpRequest, HttpResponse
from django.template import loader
from django.urls import reverse

# The pages a mistyped address most likely meant, by the words a visitor would type: the navigation's
# pages (the dashboard is the home page) and a few names the product uses for them.
_PAGE_WORDS = {
    "dashboard": "dashboard:home",
    "home": "dashboard:home",
    "connectors": "connectors:catalogue",
    "tools": "connectors:catalogue",
    "papers": "arxiv:paper_list",
    "arxiv": "arxiv:paper_list",
    "facts": "wikidata:fact_home",
    "wikidata": "wikidata:fact_home",
    "verifications": "grounding:verification_queue",
    "knowledge": "knowledge:knowledge_index",
    "memories": "memory:memory_list",
    "memory": "memory:memory_list",
    "ontology": "ontology:ontology_index",
    "events": "core_pages:events",
    "admin": "admin:index",
}
_PAGE_LABELS = {
    "dashboard:home": "the dashboard",
    "connectors:catalogue": "Connectors",
    "arxiv:paper_list": "Papers",
    "wikidata:fact_home": "Facts",
    "grounding:verification_queue": "Verifications",
    "knowledge:knowledge_index": "Knowledge",
    "memory:memory_list": "Memories",
    "ontology:ontology_index": "Ontology",
    "core_pages:events": "Events",
    "admin:index": "Admin",
}


def page_suggestion(path: str) -> dict[str, str] | None:
    """The page ``path`` most likely meant (``/conectors`` → Connectors), judged on its first segment;
    ``None`` when nothing is close (difflib ratio 0.75: one or two letters wrong in a page's name)."""
    first = path.strip("/").split("/", 1)[0].lower()
    if not first:
        return None
    close = difflib.get_close_matches(first, _PAGE_WORDS, n=1, cutoff=0.75)
    if not close:
        return None
    name = _PAGE_WORDS[close[0]]
    return {"url": reverse(name), "label": _PAGE_LABELS[name]}


def _reason(exception: Exception | None) -> str:
    """The message a view gave its ``Http404`` (``No memory …``); none for an unmatched URL, whose
    exception carries the resolver's internals."""
    if type(exception) is not Http404 or not exception.args:
        return ""
    message = exception.args[0]
    return message if isinstance(message, str) else ""


def not_found_page(request: HttpRequest, exception: Exception | None) -> HttpResponse:
    context = {
        "request_path": request.path,
        "reason": _reason(exception),
        "suggestion": page_suggestion(request.path),
    }
    return HttpResponse(loader.render_to_string("404.html", context, request), status=404)


def forbidden_page(request: HttpRequest, exception: Exception | None) -> HttpResponse:
    return HttpResponse(loader.render_to_string("403.html", {}, request), status=403)


def server_error_page() -> HttpResponse:
    return HttpResponse(loader.render_to_string("500.html", {}), status=500)
