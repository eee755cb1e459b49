"""Reads of the verification log: the review queue and one verification."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from apps.grounding.models import Verification


def verifications_filtered(filters: dict[str, Any]) -> QuerySet[Verification]:
    """The review queue: ``filters`` holds verdict, domain, status, min/max_confidence and text."""
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
    return queryset.order_by("-created_at", "-id")


def verification_find(verification_id: int) -> Verification | None:
    return (
        Verification.objects.select_related("domain", "reviewer", "message")
        .filter(pk=verification_id)
        .first()
    )
