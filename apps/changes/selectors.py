"""Reads of the change log: filtered entries, the filters' choices, and entries shaped for display."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from auditlog.models import LogEntry
from auditlog.registry import auditlog
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Q, QuerySet
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

ACTION_LABELS = {
    LogEntry.Action.CREATE: "created",
    LogEntry.Action.UPDATE: "changed",
    LogEntry.Action.DELETE: "deleted",
    LogEntry.Action.ACCESS: "read",
}
# Values longer than this are shown folded (a knowledge entry's content, a JSON schema).
FOLD_CHARS = 120


@dataclass(frozen=True)
class ChangeFilters:
    """``GET /changes``' filters; empty means any."""

    model: str = ""  # "app_label.model", as tracked_models() lists them
    object_pk: str = ""  # with ``model``: one object's history (the admin's history page links here)
    actor: str = ""  # a username, or the name of a token or command
    since: date | None = None
    until: date | None = None  # inclusive
    change_set: str = ""


def tracked_models() -> list[tuple[str, str]]:
    """``(app_label.model, "Verbose name")`` of every model the change log records, by name."""
    models = sorted(auditlog.get_models(), key=lambda model: str(model._meta.verbose_name))
    return [(model._meta.label_lower, str(model._meta.verbose_name).capitalize()) for model in models]


def change_actors() -> list[str]:
    """Everyone who appears in the log: usernames, then tokens and commands, each once."""
    users = (
        LogEntry.objects.filter(actor__isnull=False)
        .order_by()
        .values_list("actor__username", flat=True)
        .distinct()
    )
    others = (
        LogEntry.objects.filter(actor__isnull=True, additional_data__has_key="actor")
        .order_by()
        .values_list("additional_data__actor", flat=True)
        .distinct()
    )
    return sorted(set(users)) + sorted({str(name) for name in others} - set(users))


def changes_filtered(filters: ChangeFilters) -> QuerySet[LogEntry]:
    """Entries matching ``filters``, newest first (a change set's entries stay together)."""
    entries = LogEntry.objects.select_related("content_type", "actor").order_by("-timestamp", "-pk")
    if filters.model:
        app_label, _, model = filters.model.partition(".")
        entries = entries.filter(content_type__app_label=app_label, content_type__model=model)
        if filters.object_pk:
            entries = entries.filter(object_pk=filters.object_pk)
    if filters.actor:
        entries = entries.filter(
            Q(actor__username=filters.actor) | Q(actor__isnull=True, additional_data__actor=filters.actor)
        )
    if filters.since:
        entries = entries.filter(timestamp__gte=_day_start(filters.since))
    if filters.until:
        entries = entries.filter(timestamp__lt=_day_start(filters.until + timedelta(days=1)))
    if filters.change_set:
        entries = entries.filter(cid=filters.change_set)
    return entries


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def object_changes(instance: Any, *, limit: int = 20) -> list[LogEntry]:
    """The latest entries of one object (its admin history page)."""
    if not auditlog.contains(type(instance)):
        return []
    return list(
        LogEntry.objects.get_for_object(instance)
        .select_related("content_type", "actor")
        .order_by("-timestamp", "-pk")[:limit]
    )


# --- Display ------------------------------------------------------------------------------------


@dataclass
class FieldChange:
    """One field of an entry, old → new, as text (auto-escaped where it is shown)."""

    name: str
    old: str
    new: str
    folded: bool = False


@dataclass
class EntryRow:
    entry: LogEntry
    model: str
    action: str
    object_url: str
    changes: list[FieldChange]


@dataclass
class ChangeSetGroup:
    """Consecutive entries of one change set on a page of the log."""

    id: str
    cid: str
    timestamp: datetime
    actor: str
    label: str
    rows: list[EntryRow] = field(default_factory=list)


def shown(value: Any) -> str:
    """A stored value as text: empty for none, JSON (sorted keys) for lists and objects."""
    if value is None or value == "":
        return ""
    if isinstance(value, dict | list):
        if not value:
            return "[]" if isinstance(value, list) else "{}"
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return ", ".join(value)
        return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _field_name(model: Any, name: str) -> str:
    try:
        return str(model._meta.get_field(name).verbose_name)
    except (FieldDoesNotExist, AttributeError):
        return name


def entry_row(entry: LogEntry) -> EntryRow:
    model = entry.content_type.model_class()
    changes = []
    for name, values in sorted((entry.changes or {}).items()):
        old, new = [*values, None, None][:2] if isinstance(values, list) else (None, values)
        old_text, new_text = shown(old), shown(new)
        folded = max(len(old_text), len(new_text)) > FOLD_CHARS or "\n" in old_text + new_text
        changes.append(FieldChange(_field_name(model, name), old_text, new_text, folded))
    return EntryRow(
        entry=entry,
        model=str(model._meta.verbose_name).capitalize() if model else entry.content_type.model,
        action=ACTION_LABELS.get(entry.action, str(entry.action)),
        object_url=_admin_url(entry) if entry.action != LogEntry.Action.DELETE else "",
        changes=changes,
    )


def _admin_url(entry: LogEntry) -> str:
    content_type: ContentType = entry.content_type
    try:
        return reverse(f"admin:{content_type.app_label}_{content_type.model}_change", args=[entry.object_pk])
    except NoReverseMatch:
        return ""


def actor_of(entry: LogEntry) -> str:
    if entry.actor is not None:
        return entry.actor.get_username()
    return str((entry.additional_data or {}).get("actor") or "system")


def change_set_groups(entries: list[LogEntry]) -> list[ChangeSetGroup]:
    """Entries (newest first) in groups of consecutive entries sharing a change set."""
    groups: list[ChangeSetGroup] = []
    for entry in entries:
        key = entry.cid or f"entry-{entry.pk}"
        if not groups or groups[-1].id != key:
            groups.append(
                ChangeSetGroup(
                    id=key,
                    cid=entry.cid or "",
                    timestamp=entry.timestamp,
                    actor=actor_of(entry),
                    label=str((entry.additional_data or {}).get("changeSet") or ""),
                )
            )
        groups[-1].rows.append(entry_row(entry))
    return groups
