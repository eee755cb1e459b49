"""Change sets: the writes of one request, one manifest import or one command, grouped in the change log.

django-auditlog writes one ``LogEntry`` per changed object from model signals and stamps it with a
correlation id (``cid``) taken from ``settings.AUDITLOG_CID_GETTER``, which is :func:`change_set_id`
here. A change set is opened by :class:`apps.changes.middleware.ChangeSetMiddleware` for every
request and by :func:`change_set` (or :func:`recorded_as_change_set`) around a service such as the
manifest import; the innermost one is in effect, so an import made from an admin request is a
change set of its own. Outside any change set the request's or task's correlation id groups entries.

A tool's aliases are logged as the tool's ``aliases`` field, old → new, not as rows of their own:
imports and the resource API recreate them with ``bulk_create`` (which sends no signal), and an
operator reads aliases as part of the tool anyway. The change set remembers each touched tool's
aliases before the first write and compares them when it closes.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from auditlog.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db.models.signals import pre_delete
from django.http import HttpRequest

from apps.connectors.models import RemoteTool, ToolAlias
from apps.core.logging import current_correlation_id
from apps.core.models import ApiToken

P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class ChangeSet:
    """What every entry of one change set shares: its id, what made it, and who."""

    id: str
    label: str
    request: HttpRequest | None = None
    actor_name: str = ""
    parent: ChangeSet | None = None
    # Aliases of each tool touched in this change set, as they were before its first write.
    aliases_before: dict[int, list[str]] = field(default_factory=dict)

    def user(self) -> Any:
        """The signed-in user who made the change (read when an entry is written: DRF and ninja
        authenticate inside the view), inherited by a change set opened within a request."""
        if self.request is not None:
            user = getattr(self.request, "user", None)
            if user is not None and user.is_authenticated:
                return user
            return None
        return self.parent.user() if self.parent is not None else None

    def actor_description(self) -> str:
        """Who, when it is not a user: the API token of the request, or what the caller named."""
        if self.actor_name:
            return self.actor_name
        if self.request is not None:
            token = getattr(self.request, "auth", None)
            return f"token {token}" if isinstance(token, ApiToken) else ""
        return self.parent.actor_description() if self.parent is not None else ""


_current: ContextVar[ChangeSet | None] = ContextVar("change_set", default=None)


def current_change_set() -> ChangeSet | None:
    return _current.get()


def change_set_id() -> str | None:
    """``AUDITLOG_CID_GETTER``: the change set in effect, else the request's or task's correlation id."""
    current = _current.get()
    return current.id if current is not None else current_correlation_id()


@contextmanager
def change_set(
    *, label: str, actor_name: str = "", request: HttpRequest | None = None
) -> Iterator[ChangeSet]:
    """Record every write inside as one change set. On success the aliases of touched tools are
    compared and logged; on an exception nothing more is written (the caller's transaction rolls
    back what was)."""
    opened = ChangeSet(
        id=uuid.uuid4().hex, label=label, request=request, actor_name=actor_name, parent=_current.get()
    )
    token = _current.set(opened)
    try:
        yield opened
        _log_alias_changes(opened)
    finally:
        _current.reset(token)


def recorded_as_change_set(label: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a service so each call is one change set; its ``actor`` keyword (a name, such as the
    command that ran it) is recorded when no user is signed in."""

    def decorator(service: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(service)
        def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
            with change_set(label=label, actor_name=str(kwargs.get("actor") or "")):
                return service(*args, **kwargs)

        return wrapped

    return decorator


# --- Stamping each entry ------------------------------------------------------------------------


def log_entry_stamped(sender: type, instance: LogEntry, **kwargs: Any) -> None:
    """``pre_save`` of ``LogEntry``: the change set's user, label and non-user actor."""
    current = _current.get()
    if current is None or instance.pk is not None:
        return
    user = current.user()
    if instance.actor_id is None and user is not None:
        instance.actor = user
        instance.actor_email = getattr(user, "email", None) or None
    additional = dict(instance.additional_data or {})
    additional.setdefault("changeSet", current.label)
    description = current.actor_description()
    if description:
        additional.setdefault("actor", description)
    instance.additional_data = additional


# --- Aliases as the tool's field ------------------------------------------------------------------


def _remember_aliases(current: ChangeSet, tool_id: int | None) -> None:
    if tool_id is None or tool_id in current.aliases_before:
        return
    current.aliases_before[tool_id] = sorted(
        ToolAlias.objects.filter(tool_id=tool_id).values_list("name", flat=True)
    )


def alias_touched(sender: type, instance: ToolAlias, **kwargs: Any) -> None:
    """``pre_save``/``pre_delete`` of an alias (a queryset delete sends every ``pre_delete`` before
    its SQL runs, so the tool's aliases are still all there)."""
    current = _current.get()
    if current is None:
        return
    _remember_aliases(current, instance.tool_id)
    if instance.pk is not None and kwargs.get("signal") is not pre_delete:
        # An alias moved to another tool changes the tool it leaves too.
        previous = ToolAlias.objects.filter(pk=instance.pk).values_list("tool_id", flat=True).first()
        _remember_aliases(current, previous)


def tool_touched(sender: type, instance: RemoteTool, **kwargs: Any) -> None:
    """``pre_save`` of a tool: writes of its aliases usually follow (the admin's inline, imports)."""
    current = _current.get()
    if current is not None and instance.pk is not None:
        _remember_aliases(current, instance.pk)


def tool_created(sender: type, instance: RemoteTool, created: bool = False, **kwargs: Any) -> None:
    current = _current.get()
    if current is not None and created:
        current.aliases_before.setdefault(instance.pk, [])


def _log_alias_changes(current: ChangeSet) -> None:
    """One ``aliases`` change per tool whose aliases differ, merged into the tool's own entry of this
    change set when it has one, so each object appears once with every changed field."""
    if not current.aliases_before:
        return
    after: dict[int, list[str]] = {tool_id: [] for tool_id in current.aliases_before}
    for tool_id, name in ToolAlias.objects.filter(tool_id__in=after).values_list("tool_id", "name"):
        after[tool_id].append(name)
    tools = RemoteTool.objects.in_bulk(list(after))
    content_type = ContentType.objects.get_for_model(RemoteTool)
    for tool_id, before in current.aliases_before.items():
        names = sorted(after[tool_id])
        tool = tools.get(tool_id)
        if tool is None or names == before:
            continue  # a deleted tool's entry says so; its aliases went with it
        entry = (
            LogEntry.objects.filter(
                cid=current.id,
                content_type=content_type,
                object_pk=str(tool_id),
                action__in=[LogEntry.Action.CREATE, LogEntry.Action.UPDATE],
            )
            .order_by("-timestamp", "-pk")
            .first()
        )
        if entry is not None:
            entry.changes = {**(entry.changes or {}), "aliases": [before, names]}
            entry.save(update_fields=["changes"])
        else:
            LogEntry.objects.log_create(
                tool, action=LogEntry.Action.UPDATE, changes={"aliases": [before, names]}
            )
