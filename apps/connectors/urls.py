"""Pages of the connector registry."""

from django.urls import path

from apps.connectors import views

app_name = "connectors"

urlpatterns = [
    path("connectors", views.catalogue, name="catalogue"),
    # Tool names are global (``connector.tool``), so a tool's page does not sit under its connector's.
    path("connectors/tools/<str:name>", views.tool_detail, name="tool_detail"),
    path("connectors/tools/<str:name>/try", views.tool_try, name="tool_try"),
    path("connectors/<slug:slug>", views.connector_detail, name="connector_detail"),
    path("connectors/<slug:slug>/sync", views.connector_sync, name="connector_sync"),
]
