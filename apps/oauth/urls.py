"""OAuth endpoints: the well-known metadata (RFC 8615) at the site root, the authorization server's
endpoints under ``/oauth/``. The authorization-server routes keep DOT's namespace
(``oauth2_provider``): its metadata document reverses them by those names."""

from django.urls import path
from oauth2_provider import views as dot_views

from apps.oauth import services, views

app_name = "oauth"

# Only what the MCP flow needs: no introspection, device flow, OIDC or application-management pages.
authorization_server_patterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("grants/", views.my_grants, name="my_grants"),
    path("authorize/", views.ConsentView.as_view(), name="authorize"),
    path("token/", views.cross_origin_public(dot_views.TokenView.as_view()), name="token"),
    path("revoke/", views.cross_origin_public(dot_views.RevokeTokenView.as_view()), name="revoke-token"),
    path("register/", views.cross_origin_public(views.ClientRegistrationView.as_view()), name="dcr-register"),
    path(
        "register/<str:client_id>/", views.ClientConfigurationView.as_view(), name="dcr-register-management"
    ),
]

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
    path(
        ".well-known/oauth-authorization-server",
        dot_views.OAuthServerMetadataView.as_view(),
        name="authorization_server_metadata",
    ),
]
