"""Reads of the verification log: the review queue, its counts per verdict, one verification, the
verifications that cite a knowledge entry, and a grounded message."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db.models import Case, Count, IntegerField, Prefetch, QuerySet, Value, When

from apps.grounding.models import GroundingMessage, GroundingSettings, ReviewStatus, Verdict, Verification


def verifications_filtered(filters: dict[str, Any]) -> QuerySet[Verification]:
    """The review queue: ``filters`` holds verdict, domain, status, min/max_confidence and text. Pending
    verifications come in ``queue_ordered``'s order, the others newest first."""
    queryset = Verification.objects.select_related("domain", "reviewer")
    if filters["verdict"]:
        queryset = queryset.filter(verdict=filters["verdict"])
    if filters["domain"]:
        queryset = queryset.filter(domain__name=filters["domain"])
    if filters["status"]:
        queryset = queryset.filter(review_status=filters["status"])
    if filters["min_confidence"] is not None:
        queryset = queryset.filter(confidence__gte=filters["min_confidence"])
    if filters["max_confidence"] is not None:
        queryset = queryset.filter(confidence__lte=filters["max_confidence"])
    if filters["text"]:
        queryset = queryset.filter(claim__icontains=filters["text"])
    if filters["status"] == ReviewStatus.PENDING:
        return queue_ordered(queryset)
    return queryset.order_by("-created_at", "-id")


def queue_ordered(queryset: QuerySet[Verification]) -> QuerySet[Verification]:
    """What waits for review, the verdicts most likely to change first: the confidence is how likely a
    verdict is right, so the lowest first; at equal confidence an abstention that leans one way (a
    person can likely decide it) before one that does not; then the newest."""
    leans = Case(
        When(leaning__in=[Verdict.SUPPORTED, Verdict.CONTRADICTED], then=Value(0)),
        default=Value(1),
        output_field=IntegerField(),
    )
    return queryset.annotate(leans=leans).order_by("confidence", "leans", "-created_at", "-id")


def verification_find(verification_id: int) -> Verification | None:
    return (
        Verification.objects.select_related("domain", "reviewer", "message")
        .filter(pk=verification_id)
        .first()
    )


def verdict_counts(filters: dict[str, Any]) -> dict[str, int]:
    """How many verifications of each verdict match ``filters`` apart from the verdict (one query)."""
    queryset = verifications_filtered({**filters, "verdict": ""}).order_by()
    rows = dict(queryset.values_list("verdict").annotate(count=Count("id")))
    return {verdict: rows.get(verdict, 0) for verdict in Verdict.values}


def verifications_citing(*, entry_id: str, limit: int = 50) -> tuple[list[Verification], int]:
    """The newest verifications that cite ``entry_id`` among their sources, and how many there are.

    ``sources`` is ``[{entry_id, …}]``: jsonb containment (``@>``), served by the GIN index on it."""
    queryset = Verification.objects.filter(sources__contains=[{"entry_id": entry_id}])
    total = queryset.count()
    rows = list(queryset.select_related("domain", "message").order_by("-created_at", "-id")[:limit])
    return rows, total


def message_find(message_id: UUID | str) -> GroundingMessage | None:
    """A grounded message with its verifications (claims in the order they were made)."""
    verifications = Prefetch(
        "verifications", queryset=Verification.objects.select_related("domain").order_by("id")
    )
    return GroundingMessage.objects.prefetch_related(verifications).filter(pk=message_id).first()


def review_threshold() -> float:
    """Below this confidence a verdict goes to the review queue (``GroundingSettings``)."""
    return GroundingSettings.current().confidence_threshold
