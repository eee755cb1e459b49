"""DRF serializers of stored facts and fact runs (``/api/facts/``, ``/api/fact-runs/``)."""

from rest_framework import serializers

from apps.wikidata.models import Fact, FactRun


class FactSerializer(serializers.ModelSerializer):
    run = serializers.UUIDField(source="run_id", read_only=True)
    derived_from = serializers.IntegerField(source="derived_from_id", read_only=True, allow_null=True)

    class Meta:
        model = Fact
        exclude = ["embedding"]


class FactRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = FactRun
        fields = [
            "id", "question", "purpose", "scope", "top_k", "include_sparql", "include_deprecated", "language",
            "plan", "status", "degraded", "degraded_reason", "steps", "error", "error_type", "executions",
            "entities", "correlation_id", "rerun_of", "created_at", "started_at", "finished_at",
            "duration_ms",
        ]  # fmt: skip
