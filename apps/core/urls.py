"""The DRF resource API under ``/api/``; each app registers its viewsets here."""

from rest_framework.routers import DefaultRouter

from apps.connectors.api_views import ConnectorViewSet, RemoteToolViewSet
from apps.core.api_views import EventViewSet
from apps.wikidata.api_views import FactRunViewSet, FactViewSet

router = DefaultRouter()
router.register("events", EventViewSet, basename="event")
router.register("connectors", ConnectorViewSet, basename="connector")
router.register("tools", RemoteToolViewSet, basename="tool")
router.register("facts", FactViewSet, basename="fact")
router.register("fact-runs", FactRunViewSet, basename="fact-run")

urlpatterns = router.urls
