"""DRF serializer of knowledge entries (``/api/knowledge/``)."""

from rest_framework import serializers

from apps.knowledge.models import KnowledgeEntry


class KnowledgeEntrySerializer(serializers.ModelSerializer):
    domain = serializers.CharField(source="domain.name", read_only=True)
    knowledge_source = serializers.CharField(source="knowledge_source.name", read_only=True, allow_null=True)

    class Meta:
        model = KnowledgeEntry
        fields = [
            "entry_id", "domain", "knowledge_source", "topic", "content", "source", "url", "related", "tags",
            "confidence", "last_verified", "created_at", "updated_at",
        ]  # fmt: skip
