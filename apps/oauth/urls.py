"""OAuth endpoints at the well-known paths (RFC 8615); included at the site root."""

from django.urls import path

from apps.oauth import services, views

app_name = "oauth"

urlpatterns = [
    path(
        ".well-known/oauth-protected-resource",
        views.protected_resource_metadata,
        name="protected_resource_metadata",
    ),
    path(
        ".well-known/oauth-protected-resource/mcp",
        views.protected_resource_metadata,
        {"resource_path": services.MCP_PATH},
        name="protected_resource_metadata_mcp",
    ),
]
