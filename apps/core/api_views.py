"""DRF resource views of core data (``/api/``)."""

from rest_framework import viewsets

from apps.core.models import Event
from apps.core.serializers import EventSerializer


class EventViewSet(viewsets.ReadOnlyModelViewSet):
    """Stored events, newest first; filter with ``?name=`` and ``?correlation_id=``."""

    serializer_class = EventSerializer
    session_read_perms = ()  # any staff, as the /events page

    def get_queryset(self):
        queryset = Event.objects.all()
        for field in ("name", "correlation_id"):
            value = self.request.query_params.get(field)
            if value:
                queryset = queryset.filter(**{field: value})
        return queryset
