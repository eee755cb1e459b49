"""DRF resource views of stored facts and fact runs (``/api/``), read-only."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import viewsets

from apps.core.filters import filter_boolean, filter_choice, filter_uuid
from apps.core.security import FACT_ASKER, FACT_READER
from apps.wikidata.models import Fact, FactRun, FactRunPurpose, FactRunStatus
from apps.wikidata.serializers import FactRunSerializer, FactSerializer


class FactViewSet(viewsets.ReadOnlyModelViewSet):
    """Stored facts, newest first; filters ``?qid=``, ``?pid=``, ``?claim_guid=``, ``?rank=``, ``?run=``."""

    serializer_class = FactSerializer
    session_read_perms = (FACT_READER, FACT_ASKER)  # as the /facts pages

    def get_queryset(self) -> QuerySet[Fact]:
        queryset = Fact.objects.order_by("-created_at", "-id")
        params = self.request.query_params
        for field in ("qid", "pid", "claim_guid", "rank"):
            if params.get(field):
                queryset = queryset.filter(**{field: params[field]})
        if run := filter_uuid(params, "run"):
            queryset = queryset.filter(run_id=run)
        return queryset


class FactRunViewSet(viewsets.ReadOnlyModelViewSet):
    """Fact runs, newest first; filter with ``?status=``, ``?degraded=true|false`` and ``?purpose=``
    (``question``, or ``verification``: made on a grounding verification's behalf)."""

    serializer_class = FactRunSerializer
    session_read_perms = (FACT_READER, FACT_ASKER)  # as the /facts pages

    def get_queryset(self) -> QuerySet[FactRun]:
        queryset = FactRun.objects.all()
        params = self.request.query_params
        if status := filter_choice(params, "status", FactRunStatus.values):
            queryset = queryset.filter(status=status)
        if (degraded := filter_boolean(params, "degraded")) is not None:
            queryset = queryset.filter(degraded=degraded)
        if purpose := filter_choice(params, "purpose", FactRunPurpose.values):
            queryset = queryset.filter(purpose=purpose)
        return queryset
