"""DRF resource view of verifications (``/api/verifications/``), read-only: reviews go through the
review queue (``/verifications``)."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import viewsets

from apps.core.filters import filter_choice, filter_uuid
from apps.core.security import REVIEWER, VERIFICATION_READER
from apps.grounding.models import ReviewStatus, Verdict, Verification
from apps.grounding.serializers import VerificationSerializer


class VerificationViewSet(viewsets.ReadOnlyModelViewSet):
    """Verifications, newest first; filters ``?verdict=``, ``?review_status=``, ``?domain=`` (a domain
    name), ``?judge=``, ``?message=`` (a grounded message's id)."""

    serializer_class = VerificationSerializer
    session_read_perms = (VERIFICATION_READER, REVIEWER)

    def get_queryset(self) -> QuerySet[Verification]:
        queryset = Verification.objects.select_related("domain", "reviewer")
        params = self.request.query_params
        if verdict := filter_choice(params, "verdict", Verdict.values):
            queryset = queryset.filter(verdict=verdict)
        if review_status := filter_choice(params, "review_status", ReviewStatus.values):
            queryset = queryset.filter(review_status=review_status)
        if params.get("domain"):
            queryset = queryset.filter(domain__name=params["domain"])
        if params.get("judge"):
            queryset = queryset.filter(judge=params["judge"])
        if message := filter_uuid(params, "message"):
            queryset = queryset.filter(message_id=message)
        return queryset.order_by("-created_at", "-id")
