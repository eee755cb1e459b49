"""DRF resource view of stored arXiv papers (``/api/papers/``), read-only: papers are stored by the
runs that saw them. Searching arXiv is ``POST /v1/arxiv/search``."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import viewsets

from apps.arxiv.models import Paper
from apps.arxiv.serializers import PaperSerializer


class PaperViewSet(viewsets.ReadOnlyModelViewSet):
    """Stored papers by base arXiv id (``/api/papers/2401.01234/``), newest first; filters
    ``?category=`` (any of the paper's categories), ``?primary_category=``, ``?doi=``."""

    serializer_class = PaperSerializer
    lookup_field = "arxiv_id"
    # New-style ids have a dot ("2401.01234"), old-style ones a slash ("hep-th/9901001").
    lookup_value_regex = r".+"
    session_read_perms = ()  # any staff (the /papers pages are public)

    def get_queryset(self) -> QuerySet[Paper]:
        queryset = Paper.objects.all()
        params = self.request.query_params
        if params.get("category"):
            queryset = queryset.filter(categories__contains=[params["category"]])
        if params.get("primary_category"):
            queryset = queryset.filter(primary_category=params["primary_category"])
        if params.get("doi"):
            queryset = queryset.filter(doi=params["doi"])
        return queryset.order_by("-published", "arxiv_id")
