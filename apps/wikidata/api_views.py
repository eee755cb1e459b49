"""DRF resource views of stored facts and fact runs (``/api/``), read-only."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import viewsets

from apps.core.errors import ValidationFailed
from apps.wikidata.models import Fact, FactRun, FactRunStatus
from apps.wikidata.serializers import FactRunSerializer, FactSerializer


class FactViewSet(viewsets.ReadOnlyModelViewSet):
    """Stored facts, newest first; filters ``?qid=``, ``?pid=``, ``?claim_guid=``, ``?rank=``, ``?run=``."""

    serializer_class = FactSerializer

    def get_queryset(self) -> QuerySet[Fact]:
        queryset = Fact.objects.order_by("-created_at", "-id")
        params = self.request.query_params
        for field in ("qid", "pid", "claim_guid", "rank"):
            if params.get(field):
                queryset = queryset.filter(**{field: params[field]})
        if params.get("run"):
            queryset = queryset.filter(run_id=params["run"])
        return queryset


class FactRunViewSet(viewsets.ReadOnlyModelViewSet):
    """Fact runs, newest first; filter with ``?status=`` and ``?degraded=true|false``."""

    serializer_class = FactRunSerializer

    def get_queryset(self) -> QuerySet[FactRun]:
        queryset = FactRun.objects.all()
        params = self.request.query_params
        if status := params.get("status"):
            if status not in FactRunStatus.values:
                raise ValidationFailed(
                    f"?status= takes one of {', '.join(FactRunStatus.values)}, not {status!r}.",
                    details={"parameter": "status"},
                )
            queryset = queryset.filter(status=status)
        if degraded := params.get("degraded"):
            if degraded not in ("true", "false"):
                raise ValidationFailed(
                    f"?degraded= takes true or false, not {degraded!r}.", details={"parameter": "degraded"}
                )
            queryset = queryset.filter(degraded=degraded == "true")
        return queryset
