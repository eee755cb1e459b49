"""DRF resource view of knowledge entries (``/api/knowledge/``), read-only; entries are written by
imports (``knowledge add``, the admin) and reviews. Searching is ``POST /v1/knowledge/search``."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import viewsets

from apps.knowledge.models import KnowledgeEntry
from apps.knowledge.serializers import KnowledgeEntrySerializer


class KnowledgeEntryViewSet(viewsets.ReadOnlyModelViewSet):
    """Knowledge entries by entry id (``/api/knowledge/SEC-001/``), in entry-id order; filters
    ``?domain=`` (a domain name), ``?tag=``, ``?source=`` (the authoritative source, exact)."""

    serializer_class = KnowledgeEntrySerializer
    lookup_field = "entry_id"
    session_read_perms = ()  # any staff, as the /knowledge pages

    def get_queryset(self) -> QuerySet[KnowledgeEntry]:
        queryset = KnowledgeEntry.objects.defer("embedding").select_related("domain", "knowledge_source")
        params = self.request.query_params
        if params.get("domain"):
            queryset = queryset.filter(domain__name=params["domain"])
        if params.get("tag"):
            queryset = queryset.filter(tags__contains=[params["tag"]])
        if params.get("source"):
            queryset = queryset.filter(source=params["source"])
        return queryset.order_by("entry_id")
