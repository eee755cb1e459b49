"""The DRF resource API behind ``/api/``: one router with each app's viewsets, and its OpenAPI
document at ``/api/openapi.json`` (error responses documented by ``apps.core.openapi``)."""

from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONOpenAPIRenderer
from rest_framework.routers import DefaultRouter
from rest_framework.schemas import get_schema_view

from apps.arxiv.api_views import PaperViewSet
from apps.connectors.api_views import ConnectorViewSet, RemoteToolViewSet
from apps.core.api_views import EventViewSet
from apps.grounding.api_views import VerificationViewSet
from apps.knowledge.api_views import KnowledgeEntryViewSet
from apps.memory.api_views import MemoryViewSet
from apps.wikidata.api_views import FactRunViewSet, FactViewSet


class ResourceRootView(DefaultRouter.APIRootView):
    """The index of ``/api/``: any staff session may read it (what it lists, each resource decides)."""

    session_read_perms = ()


class ResourceRouter(DefaultRouter):
    APIRootView = ResourceRootView


router = ResourceRouter()
router.register("events", EventViewSet, basename="event")
router.register("connectors", ConnectorViewSet, basename="connector")
router.register("tools", RemoteToolViewSet, basename="tool")
router.register("facts", FactViewSet, basename="fact")
router.register("fact-runs", FactRunViewSet, basename="fact-run")
router.register("memories", MemoryViewSet, basename="memory")
router.register("knowledge", KnowledgeEntryViewSet, basename="knowledge-entry")
router.register("verifications", VerificationViewSet, basename="verification")
router.register("papers", PaperViewSet, basename="paper")

# Public like /v1/openapi.json: the document says what exists, never what is stored.
openapi = get_schema_view(
    title="CortexWeb resource API",
    version="1",
    description="Operators' and analysts' read-mostly resources. Errors: {error: {code, message, details}}.",
    public=True,
    renderer_classes=[JSONOpenAPIRenderer],
    authentication_classes=[],
    permission_classes=[AllowAny],
)

urlpatterns = [path("openapi.json", openapi, name="openapi"), *router.urls]
