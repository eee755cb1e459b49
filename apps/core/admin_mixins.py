"""Pieces every app's admin uses: read-only provenance, JSON shown as collapsible blocks, booleans whose
"yes" is bad shown as warnings, long text cut with its whole in a title, links between related rows,
and counts per status above a changelist."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Count, Model, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.templatetags.static import static
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString


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


JSON_OPEN_LINES = 12  # a block this short is shown open; a longer one starts folded


def _json_summary(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(list(map(str, value))[:6]) + (", …" if len(value) > 6 else "")
        return f"{len(value)} key{'s' if len(value) != 1 else ''}: {keys}"
    if isinstance(value, list):
        return f"{len(value)} item{'s' if len(value) != 1 else ''}"
    return "value"


# An empty JSON value in words: a reader sees "none", never a raw null or [].
JSON_EMPTY = {"null": "none", "[]": "none (an empty list)", "{}": "none (an empty object)", '""': "none"}


def pretty_json(value: Any) -> str:
    """A JSON value as a collapsible, wrapped block (``static/css/admin.css``): what it holds in the
    summary, indented JSON inside; short blocks open; an empty value in words. Escaped: stored JSON
    comes from agents."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if text in JSON_EMPTY:
        return format_html('<span class="flag-quiet">{}</span>', JSON_EMPTY[text])
    opened = " open" if text.count("\n") < JSON_OPEN_LINES else ""
    return format_html(
        '<details class="json-block"{}><summary>{}</summary><pre class="json">{}</pre></details>',
        opened,
        _json_summary(value),
        text,
    )


def json_display(field: str, description: str) -> Callable[[Any, Model], str]:
    """A read-only admin field showing ``field`` (a JSONField) with :func:`pretty_json`:
    ``plan_json = json_display("plan", "Plan")``, then ``"plan_json"`` in ``fields``."""

    @admin.display(description=description)
    def show(model_admin: Any, obj: Model) -> str:
        return pretty_json(getattr(obj, field))

    show.__name__ = f"{field}_json"
    return show


class JsonTextarea(forms.Textarea):
    """An editable JSON field as a collapsible block: indented JSON in a monospace area sized to it,
    what it holds in the summary; an unset value is an empty area (saved as null), never "null"."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"class": "json-input", "spellcheck": "false", **(attrs or {})})

    def format_value(self, value: Any) -> str | None:
        # forms.JSONField hands over compact JSON text (or the text as typed, when the form is invalid).
        try:
            data = json.loads(value) if isinstance(value, str) else value
        except json.JSONDecodeError:
            return super().format_value(value)
        if data is None:
            return ""
        return json.dumps(data, indent=2, ensure_ascii=False)

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        lines = (context["widget"]["value"] or "").count("\n") + 1
        context["widget"]["attrs"]["rows"] = min(max(lines, 2), 24)
        return context

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        text = self.format_value(value) or ""
        try:
            summary = _json_summary(json.loads(text)) if text else "none: empty"
        except json.JSONDecodeError:
            summary = "not valid JSON yet"
        opened = " open" if text.count("\n") < JSON_OPEN_LINES else ""
        return format_html(
            '<details class="json-block json-edit"{}><summary>{}</summary>{}</details>',
            opened,
            summary,
            super().render(name, value, attrs, renderer),
        )


JSON_WIDGETS = {models.JSONField: {"widget": JsonTextarea}}  # a ModelAdmin's or inline's formfield_overrides


def warning_flag(value: bool | None) -> str:
    """A boolean whose "yes" is bad (degraded, revoked, drift): yes is a warning, no is quiet."""
    if value:
        return format_html(
            '<span class="flag-warning"><img src="{}" alt="" width="13" height="13"> yes</span>',
            static("admin/img/icon-alert.svg"),
        )
    return format_html('<span class="flag-quiet">{}</span>', "no" if value is not None else "—")


def warning_display(
    field: str, description: str, *, ordering: str | None = None
) -> Callable[[Any, Model], str]:
    """A column or read-only field showing the boolean ``field`` with :func:`warning_flag`."""

    @admin.display(description=description, ordering=ordering or field)
    def show(model_admin: Any, obj: Model) -> str:
        return warning_flag(getattr(obj, field))

    show.__name__ = f"{field}_flag"
    return show


def truncated(text: Any, length: int = 60) -> str:
    """``text`` cut to ``length`` characters for a changelist cell, the whole of it in the title."""
    text = "" if text is None else str(text)
    if len(text) <= length:
        return text
    return format_html('<span class="cut" title="{}">{}…</span>', text, text[: length - 1].rstrip())


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


@dataclass(frozen=True)
class SummaryField:
    """A field counted above a changelist; ``warn`` lists the values shown as warnings."""

    field: str
    label: str
    warn: tuple[Any, ...] = ()


class ChangelistSummaryMixin:
    """Counts per value of each ``summary_fields`` over the rows the changelist lists (its filters and
    search applied), above the list (``templates/admin/change_list.html``); each count links to the
    list filtered on that value. One grouped query per field."""

    summary_fields: tuple[SummaryField, ...] = ()
    model: Any

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().changelist_view(request, extra_context)  # type: ignore[misc]
        if isinstance(response, TemplateResponse) and response.context_data and "cl" in response.context_data:
            response.context_data["cortex_summary"] = self.changelist_summary(response.context_data["cl"])
        return response

    def changelist_summary(self, changelist: Any) -> list[dict[str, Any]]:
        groups = []
        for summary in self.summary_fields:
            model_field = self.model._meta.get_field(summary.field)
            choices = dict(model_field.flatchoices)
            parameter = f"{summary.field}__exact"
            rows = (
                changelist.queryset.order_by()
                .values_list(summary.field)
                .annotate(total=Count("pk"))
                .order_by(summary.field)
            )
            active = changelist.params.get(parameter)
            counts = []
            for value, total in rows:
                if model_field.get_internal_type() == "BooleanField":
                    label, query_value = ("yes" if value else "no"), ("1" if value else "0")
                else:
                    label, query_value = str(choices.get(value, value)), value
                counts.append(
                    {
                        "label": label,
                        "count": total,
                        "url": changelist.get_query_string({parameter: query_value}, [f"{summary.field}__"]),
                        "active": active is not None and str(active) == str(query_value),
                        "warning": value in summary.warn,
                    }
                )
            groups.append({"label": summary.label, "counts": counts})
        return groups
