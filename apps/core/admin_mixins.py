"""Pieces every app's admin uses: read-only provenance and JSON shown as it is stored."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest
from django.utils.html import format_html


class ReadOnlyAdminMixin:
    """View permission only: Django then renders every field read-only and offers no save."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def pretty_json(value: Any) -> str:
    return format_html('<pre class="json">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False))
