from django.contrib import admin
from django.urls import include, path

from apps.core import views as core_views
from apps.oauth import urls as oauth_urls
from cortexweb.api import api, ontology_api

admin.site.site_header = "CortexWeb operations"
admin.site.site_title = "CortexWeb"
# The app list beside every admin page takes a quarter of a 1280 px screen from the changelists; the home
# page and the breadcrumbs lead everywhere it does.
admin.site.enable_nav_sidebar = False

urlpatterns = [
    path("healthz", core_views.healthz, name="healthz"),
    path("readyz", core_views.readyz, name="readyz"),
    path("metrics", core_views.metrics, name="metrics"),
    path("favicon.ico", core_views.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("", include("apps.oauth.urls")),
    path("oauth/", include((oauth_urls.authorization_server_patterns, "oauth2_provider"))),
    path("v1/", api.urls),
    path("ontology-agent/", ontology_api.urls),
    path("api/", include("cortexweb.resources")),
    path("", include("apps.dashboard.urls")),
    path("", include("apps.connectors.urls")),
    path("", include("apps.arxiv.urls")),
    path("", include("apps.wikidata.urls")),
    path("", include("apps.grounding.urls")),
    path("", include("apps.grounding.knowledge_urls")),
    path("", include("apps.memory.urls")),
    path("", include("apps.ontology.urls")),
    path("", include("apps.core.urls_pages")),
    path("", include("apps.changes.urls")),
]

handler400 = "apps.core.views.bad_request"
handler403 = "apps.core.views.permission_denied"
handler404 = "apps.core.views.not_found"
handler500 = "apps.core.views.server_error"
