"""DRF resource view of memories (``/api/memories/``), read-only and scoped like ``/v1/memory/``:
a token lists the memories it told, and those an operator shared domain-wide. Whatever its scopes
(``admin`` included), a token never lists another token's private memories. A staff session (the
browsable API, memory readers and editors) lists every memory, as the ``/memories`` page does."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from rest_framework import viewsets

from apps.core.filters import filter_boolean, filter_choice
from apps.core.models import ApiToken
from apps.core.security import MEMORY_EDITOR, MEMORY_READER
from apps.memory.models import Memory, MemoryType
from apps.memory.serializers import MemorySerializer


class MemoryViewSet(viewsets.ReadOnlyModelViewSet):
    """The token's memories (and shared ones), newest first; filters ``?domain=``, ``?type=``,
    ``?agent=``, ``?session=``, ``?pinned=``, ``?shared=``, ``?superseded=true|false``."""

    serializer_class = MemorySerializer
    session_read_perms = (MEMORY_READER, MEMORY_EDITOR)  # as the /memories pages

    def get_queryset(self) -> QuerySet[Memory]:
        queryset = Memory.objects.defer("embedding")
        if isinstance(self.request.auth, ApiToken):
            queryset = queryset.filter(Q(token=self.request.auth) | Q(shared=True))
        params = self.request.query_params
        for field in ("domain", "agent", "session"):
            if params.get(field):
                queryset = queryset.filter(**{field: params[field]})
        if memory_type := filter_choice(params, "type", MemoryType.values):
            queryset = queryset.filter(type=memory_type)
        for field in ("pinned", "shared"):
            if (value := filter_boolean(params, field)) is not None:
                queryset = queryset.filter(**{field: value})
        if (superseded := filter_boolean(params, "superseded")) is not None:
            queryset = queryset.filter(valid_until__isnull=not superseded)
        return queryset.order_by("-created_at", "id")
