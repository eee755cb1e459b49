"""DRF serializers of verifications (``/api/verifications/``) and of a review of one."""

from typing import Any

from rest_framework import serializers

from apps.grounding.models import ReviewDecision, Verdict, Verification


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
            "reviewed_verdict", "leaning", "queue_reason", "degraded", "degraded_reason", "sources_note",
            "fact_run", "created_at",
        ]  # fmt: skip


class ReviewSerializer(serializers.Serializer):
    """``POST /api/verifications/{id}/review/``: what the review form sends, named for scripts. Whether
    the combination makes a review (a verdict to reject with, a corrected text) is the service's rule."""

    decision = serializers.ChoiceField(choices=ReviewDecision.values)
    verdict = serializers.ChoiceField(choices=Verdict.values, required=False, allow_blank=True)
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    corrected_text = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    entry = serializers.CharField(required=False, allow_blank=True, max_length=32)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # A misspelt field ("action", "correction") would otherwise be ignored and the review saved
        # without it.
        unknown = (
            sorted(set(self.initial_data) - set(self.fields)) if isinstance(self.initial_data, dict) else []
        )
        if unknown:
            raise serializers.ValidationError(
                {name: [f"Unknown field; send only {', '.join(self.fields)}."] for name in unknown}
            )
        return attrs
