"""Pages of the connector registry."""

from django.urls import path

from apps.connectors import views

app_name = "connectors"

urlpatterns = [
    path("connectors", views.catalogue, name="catalogue"),
]
