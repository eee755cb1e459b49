"""Pieces every app's admin uses: read-only provenance and JSON shown as it is stored."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html


class ReadOnlyAdminMixin:
    """View permission only: Django then renders every field read-only and offers no save."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class SingletonAdminMixin:
    """A one-row configuration model (``Model.current()`` creates it with its defaults): the list goes
    straight to the row; no second row (it would not be the one used), no delete."""

    model: Any

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        row = self.model.current()
        opts = self.model._meta
        return HttpResponseRedirect(
            reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
        )


def pretty_json(value: Any) -> str:
    return format_html('<pre class="json">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False))


def change_link(model: type[Model], pk: Any, text: Any = None) -> str:
    """A link to the admin change page of ``model`` row ``pk`` (showing ``text``, else the pk); "—" when
    there is no row."""
    if pk is None:
        return "—"
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])
    return format_html('<a href="{}">{}</a>', url, pk if text is None else text)


class ImportLinkMixin:
    """A changelist that shows its "Import" link to those who may import (``_can_import``)."""

    def _can_import(self, request: HttpRequest) -> bool:
        raise NotImplementedError  # each admin says who may import

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra_context = {**(extra_context or {}), "can_import": self._can_import(request)}
        return super().changelist_view(request, extra_context)  # type: ignore[misc]


class YesNoFilter(admin.SimpleListFilter):
    """A list filter with two choices: rows matching :meth:`condition`, or the others."""

    yes_label = "Yes"
    no_label = "No"

    def condition(self) -> Q:
        raise NotImplementedError  # each filter says what "yes" means

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", self.yes_label), ("no", self.no_label)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(self.condition())
        if self.value() == "no":
            return queryset.exclude(self.condition())
        return queryset
