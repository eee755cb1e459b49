"""DRF resource view of verifications (``/api/verifications/``): read, and review one
(``POST /api/verifications/{id}/review/``, an ``admin`` token or a reviewer's session) as the review
queue (``/verifications``) does."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.core.errors import ValidationFailed
from apps.core.filters import filter_boolean, filter_choice, filter_uuid
from apps.core.models import ApiToken
from apps.core.openapi import ErrorDocumentingAutoSchema
from apps.core.security import REVIEWER, VERIFICATION_READER
from apps.grounding import services
from apps.grounding.models import ReviewStatus, Verdict, Verification
from apps.grounding.serializers import ReviewSerializer, VerificationSerializer

# The service's field names, as this endpoint calls them.
_API_FIELDS = {"action": "decision", "correction": "corrected_text", "entry_id": "entry"}


class _ReviewSchema(ErrorDocumentingAutoSchema):
    """The review's document: a ``Review`` in, the updated verification out with 200 (not DRF's 201)."""

    def __init__(self) -> None:
        super().__init__(operation_id_base="Verification")

    def get_response_serializer(self, path: str, method: str) -> Any:
        return VerificationSerializer()

    def get_responses(self, path: str, method: str) -> dict[str, Any]:
        responses = super().get_responses(path, method)
        if "201" in responses:
            responses["200"] = responses.pop("201")
            responses["200"]["description"] = "The verification, reviewed."
        return dict(sorted(responses.items()))


class VerificationViewSet(viewsets.ReadOnlyModelViewSet):
    """Verifications, newest first; filters ``?verdict=``, ``?review_status=``, ``?domain=`` (a domain
    name), ``?judge=``, ``?message=`` (a grounded message's id), ``?degraded=true|false`` (a source
    could not be reached)."""

    serializer_class = VerificationSerializer
    session_read_perms = (VERIFICATION_READER, REVIEWER)
    # The one write (``review``): an ``admin`` token (the default ``write_scope``), or a reviewer's session.
    session_write_perms = (REVIEWER,)

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
        if (degraded := filter_boolean(params, "degraded")) is not None:
            queryset = queryset.filter(degraded=degraded)
        return queryset.order_by("-created_at", "-id")

    @action(detail=True, methods=["post"], serializer_class=ReviewSerializer, schema=_ReviewSchema())
    def review(self, request: Request, pk: str | None = None) -> Response:
        """Approve, reject or correct the verification (``services.verification_review``); the answer is
        the updated verification."""
        verification = self.get_object()
        payload = ReviewSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        token = request.auth if isinstance(request.auth, ApiToken) else None
        reviewer = token.created_by if token is not None else request.user
        try:
            services.verification_review(
                verification=verification,
                reviewer=reviewer,
                # A token's review is cited by the token's name (and its owner's, when it has one).
                reviewer_name=_token_reviewer(token) if token is not None else "",
                action=data["decision"],
                verdict=data.get("verdict", ""),
                note=data.get("note", ""),
                correction=data.get("corrected_text", ""),
                entry_id=data.get("entry", ""),
            )
        except ValidationFailed as failure:
            # Refused like the payload's own bad fields: 400, under the field this endpoint names.
            field = str((failure.details or {}).get("field", ""))
            raise serializers.ValidationError(
                {_API_FIELDS.get(field, field) or "non_field_errors": [failure.message]}
            ) from failure
        return Response(VerificationSerializer(self.get_queryset().get(pk=verification.pk)).data)


def _token_reviewer(token: ApiToken) -> str:
    owner = token.created_by.get_username() if token.created_by else ""
    return f"{owner} (token “{token.name}”)" if owner else f"token “{token.name}”"
