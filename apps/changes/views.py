"""``/changes``: the change log, newest first, grouped by change set, with filters (staff only)."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.changes import selectors
from apps.changes.forms import ChangeFilterForm
from apps.core.pages import HtmxHttpRequest, permission_page, render_page_or_fragment

PAGE_SIZE = 50


@require_GET
@never_cache
@permission_page()
def change_log(request: HtmxHttpRequest) -> HttpResponse:
    """Any active staff: the diffs show connector settings, knowledge and reviews, not secrets
    (tokens' hashes are never recorded). A bad filter is a 400 naming it; the others still apply."""
    form = ChangeFilterForm(request.GET)
    valid = form.is_valid()
    filters = form.filters()
    page = Paginator(selectors.changes_filtered(filters), PAGE_SIZE).get_page(request.GET.get("page"))
    context: dict[str, Any] = {
        "form": form,
        "filters": filters,
        "page": page,
        "groups": selectors.change_set_groups(list(page.object_list)),
        "models": selectors.tracked_models(),
        "actors": selectors.change_actors(),
        "list_url": reverse("changes:change_log"),
        "filtered": any(vars(filters).values()),
    }
    return render_page_or_fragment(
        request,
        "changes/changes.html",
        "changes/partials/_changes.html",
        context,
        status=200 if valid else 400,
    )
