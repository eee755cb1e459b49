"""DRF serializer of verifications (``/api/verifications/``)."""

from rest_framework import serializers

from apps.grounding.models import Verification


class VerificationSerializer(serializers.ModelSerializer):
    domain = serializers.CharField(source="domain.name", read_only=True, allow_null=True)
    message = serializers.UUIDField(source="message_id", read_only=True, allow_null=True)
    reviewer = serializers.CharField(source="reviewer.get_username", read_only=True, allow_null=True)

    class Meta:
        model = Verification
        fields = [
            "id", "claim", "domain", "verdict", "confidence", "sources", "correction", "signals", "wikidata",
            "judge", "basis", "rests_on", "confidence_note", "judge_note", "judge_latency_ms", "latency_ms",
            "message", "review_status", "reviewer", "reviewed_at", "review_note", "corrected_entry",
            "created_at",
        ]  # fmt: skip
