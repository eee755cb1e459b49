"""The DRF resource API under ``/api/``; each app registers its viewsets here."""

from rest_framework.routers import DefaultRouter

from apps.core.api_views import EventViewSet

router = DefaultRouter()
router.register("events", EventViewSet, basename="event")

urlpatterns = router.urls
