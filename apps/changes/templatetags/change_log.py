"""``{% object_change_log object as log %}``: an object's latest change log entries, for its admin
history page (``templates/admin/object_history.html``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from auditlog.registry import auditlog
from django import template
from django.urls import reverse

from apps.changes import selectors

register = template.Library()


@register.simple_tag
def object_change_log(instance: Any) -> dict[str, Any]:
    """``tracked`` (whether the log records this model), ``rows`` (the latest entries, newest first)
    and ``url`` (all of them on ``/changes``)."""
    if instance is None or not auditlog.contains(type(instance)):
        return {"tracked": False, "rows": [], "url": ""}
    query = urlencode({"model": instance._meta.label_lower, "object": str(instance.pk)})
    return {
        "tracked": True,
        "rows": [selectors.entry_row(entry) for entry in selectors.object_changes(instance)],
        "url": f"{reverse('changes:change_log')}?{query}",
    }
