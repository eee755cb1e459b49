"""DRF serializer of memories (``/api/memories/``): everything but the embedding."""

from rest_framework import serializers

from apps.memory.models import Memory


class MemorySerializer(serializers.ModelSerializer):
    superseded_by = serializers.UUIDField(source="superseded_by_id", read_only=True, allow_null=True)

    class Meta:
        model = Memory
        fields = [
            "id", "content", "domain", "type", "concepts", "metadata", "importance", "access_count",
            "last_accessed_at", "decay_factor", "created_at", "expires_at", "pinned", "valid_from",
            "valid_until", "superseded_by", "agent", "session", "shared", "chunk_group", "chunk_index",
        ]  # fmt: skip
