from rest_framework import serializers

from apps.core.models import Event


class EventSerializer(serializers.ModelSerializer):
    class Meta:
        model = Event
        fields = ["id", "name", "correlation_id", "payload", "created_at"]
