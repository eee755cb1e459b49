"""The operators' pages of agent memory: ``/memories`` (every token's memories, filtered, or ranked for
a question with each component shown) and ``/memories/<id>`` (one memory, its chain, its access
history and its decay outlook), with pin and forget.

Staff only (docs/security.md): reading needs ``memory.view_memory`` (or ``memory.change_memory``);
pinning and fading need ``memory.change_memory``, removing ``memory.delete_memory``. Operators see
every token's memories. Asking on the page ranks exactly as an agent's ``ask`` would but does **not**
reinforce what it finds: an operator browsing must not change what agents are shown.

Pin and forget count against the user's page-submission limit (429 with ``Retry-After``). For HTMX
they answer the memory's actions fragment (always 200, with any refusal in it: htmx does not swap
error responses); otherwise they go back where the form was (303), or show the memory's page with
the reason (400/429). An unknown id is the site's 404 page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from uuid import UUID

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import prefetch_related_objects
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import ApplicationError, NotFound
from apps.core.pages import (
    HtmxHttpRequest,
    page_role_granted,
    page_submission_refusal,
    permission_page,
    render_page_or_fragment,
)
from apps.memory import charts, selectors, services
from apps.memory.forms import ForgetForm, MemoryBrowseForm, PinForm
from apps.memory.models import Memory, MemorySettings, MemoryType

VIEW_PERMISSION = "memory.view_memory"
CHANGE_PERMISSION = "memory.change_memory"
DELETE_PERMISSION = "memory.delete_memory"
PAGE_SIZE = 25
RANKED_LIMIT = 20
OUTLOOK_DAYS = 30
ACCESS_HISTORY = 50
COMPONENT_HELP = {
    "domain": "the question names its domain, or shares its concepts",
    "temporal": "decay factor · exp(−λ · age in days)",
    "semantic": "cosine similarity to the question",
    "frequency": "how often it was retrieved, times its importance",
}


def _roles(request: HttpRequest) -> dict[str, bool]:
    return {
        "can_change": page_role_granted(request.user, (CHANGE_PERMISSION,)),
        "can_remove": page_role_granted(request.user, (DELETE_PERMISSION,)),
    }


def _operator(request: HttpRequest) -> AbstractBaseUser:
    """The signed-in user (``permission_page`` let only staff through)."""
    if not isinstance(request.user, AbstractBaseUser):
        raise PermissionDenied
    return request.user


def _safe_next(request: HttpRequest, candidate: str, default: str) -> str:
    """Where to go back after pin or forget: a local URL only."""
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return default


# --- /memories -----------------------------------------------------------------------------------


@require_GET
@permission_page(VIEW_PERMISSION, CHANGE_PERMISSION)
def memory_list(request: HtmxHttpRequest) -> HttpResponse:
    """Without a question: every token's memories, newest first, 25 a page. With one: the memories
    (current and unexpired, as ``ask`` sees them) ranked for it, each with its components."""
    form = MemoryBrowseForm(request.GET)
    form.is_valid()
    filters = form.filters()
    question = form.question()
    memories = selectors.memories_browse(filters=filters)
    config = MemorySettings.current()
    context: dict[str, Any] = {
        "form": form,
        "filters": filters,
        "question": question,
        "list_url": reverse("memory:memory_list"),
        "next_url": request.get_full_path(),
        "types": MemoryType.choices,
        "legend": [
            {"name": name, "weight": config.weights[name], "help": COMPONENT_HELP[name]}
            for name in selectors.COMPONENTS
        ],
        "threshold": config.relevance_threshold,
        **selectors.memory_facets(),
        **_roles(request),
    }
    if question:
        hits = selectors.memories_rank(
            memories=memories.current().live(),
            question=question,
            domain=filters.domain or None,
            limit=RANKED_LIMIT,
            threshold=config.relevance_threshold,
            weights=config.weights,
            config=config,
        )
        # The scope column shows each memory's token: one query for all of them.
        prefetch_related_objects([hit.memory for hit in hits], "token")
        context["hits"] = [
            {
                "memory": hit.memory,
                "bar": charts.relevance_bar(components=hit.components, weights=config.weights),
            }
            for hit in hits
        ]
    else:
        context["page"] = Paginator(memories, PAGE_SIZE).get_page(request.GET.get("page"))
    return render_page_or_fragment(
        request, "memory/memories.html", "memory/partials/_memory_results.html", context
    )


# --- /memories/<id> -------------------------------------------------------------------------------


def _memory_or_404(memory_id: UUID) -> Memory:
    memory = selectors.memory_find(memory_id=memory_id)
    if memory is None:
        raise Http404(f"No memory {memory_id}.")
    return memory


@require_GET
@permission_page(VIEW_PERMISSION, CHANGE_PERMISSION)
def memory_detail(request: HttpRequest, memory_id: UUID) -> HttpResponse:
    """One memory: content, scope, lifecycle state, supersession chain, access history, decay outlook."""
    memory = _memory_or_404(memory_id)
    return render(request, "memory/memory_detail.html", _detail_context(request, memory))


def _detail_context(request: HttpRequest, memory: Memory, *, error: str = "") -> dict[str, Any]:
    config = MemorySettings.current()
    now = timezone.now()
    expires_in = (memory.expires_at - now).total_seconds() / 86400.0 if memory.expires_at else None
    outlook = selectors.memory_decay_outlook(memory=memory, config=config, now=now, days=OUTLOOK_DAYS)
    accesses = selectors.memory_accesses_recent(memory=memory, limit=ACCESS_HISTORY)
    return {
        "memory": memory,
        "metadata_json": json.dumps(memory.metadata, ensure_ascii=False, indent=2, sort_keys=True)
        if memory.metadata
        else "",
        "expired": memory.expires_at is not None and memory.expires_at <= now,
        "chain": selectors.supersession_chain(memory=memory),
        "accesses": accesses,
        "access_history": ACCESS_HISTORY,
        "access_history_days": config.access_history_days,
        "chart": charts.decay_chart(
            points=outlook, days=OUTLOOK_DAYS, expires_in_days=None if memory.pinned else expires_in
        ),
        "config": config,
        "cycle_hours": f"{config.decay_interval_hours:g}",
        "temporal_now": outlook[0].temporal,
        "next_url": reverse("memory:memory_detail", args=[memory.pk]),
        "error": error,
        **_roles(request),
    }


# --- Pin and forget -------------------------------------------------------------------------------


@require_POST
@permission_page(CHANGE_PERMISSION)
def memory_pin(request: HtmxHttpRequest, memory_id: UUID) -> HttpResponse:
    """Pin (never expires) or unpin a memory of any token."""
    memory = _memory_or_404(memory_id)
    form = PinForm(request.POST)

    def act(data: dict[str, Any]) -> str:
        pinned = services.memory_pin_by_operator(
            memory_id=memory.pk, pinned=data["pinned"], operator=request.user.get_username()
        )
        return "Pinned: it never expires." if pinned.pinned else "Unpinned."

    return _submission(request, memory, form, act)


@require_POST
@permission_page(CHANGE_PERMISSION, DELETE_PERMISSION)
def memory_forget(request: HtmxHttpRequest, memory_id: UUID) -> HttpResponse:
    """Fade (decay to the floor, unpinned: ``memory.change_memory``) or remove (``memory.delete_memory``)."""
    needed = DELETE_PERMISSION if request.POST.get("mode") == "remove" else CHANGE_PERMISSION
    if not page_role_granted(request.user, (needed,)):
        raise PermissionDenied
    memory = _memory_or_404(memory_id)
    form = ForgetForm(request.POST)

    def act(data: dict[str, Any]) -> str:
        services.memory_forget_by_operator(
            memory_id=memory.pk, mode=data["mode"], operator=request.user.get_username()
        )
        return (
            "Removed." if data["mode"] == "remove" else "Faded: its decay is at the floor and it is unpinned."
        )

    return _submission(request, memory, form, act)


def _submission(
    request: HtmxHttpRequest, memory: Memory, form: PinForm | ForgetForm, act: Callable[[dict[str, Any]], str]
) -> HttpResponse:
    """Count the submission, validate the form, act, and answer as the module docstring says."""
    error, status, retry_after = page_submission_refusal(_operator(request))
    notice = ""
    if not error:
        if form.is_valid():
            try:
                notice = act(form.cleaned_data)
            except NotFound as missing:  # removed meanwhile
                raise Http404(str(missing.message)) from missing
            except ApplicationError as failure:
                error, status = failure.message, failure.status_code
        else:
            error = "; ".join(
                f"{name}: {' '.join(map(str, messages))}" for name, messages in form.errors.items()
            )
    removed = not error and form.cleaned_data.get("mode") == "remove"
    current = None if removed else selectors.memory_find(memory_id=memory.pk)
    if request.htmx:
        context = {
            "memory": current,
            "memory_id": memory.pk,
            "notice": notice,
            "error": error,
            "next_url": request.POST.get("next", ""),
            **_roles(request),
        }
        response = render(request, "memory/partials/_memory_actions.html", context)
        patch_vary_headers(response, ["HX-Request"])
    elif error:
        response = render(
            request,
            "memory/memory_detail.html",
            _detail_context(request, current or memory, error=error),
            status=status,
        )
    else:
        detail_url = reverse("memory:memory_detail", args=[memory.pk])
        default = reverse("memory:memory_list") if removed else detail_url
        next_url = _safe_next(request, request.POST.get("next", ""), default)
        if removed and next_url.split("?")[0] == detail_url:
            next_url = reverse("memory:memory_list")
        response = HttpResponseRedirect(next_url, status=303)
    if retry_after:
        response["Retry-After"] = retry_after
    return response
