"""The home page and its dashboard panels."""

from django.urls import path

from apps.dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("dashboard/<slug:panel>", views.dashboard_panel, name="panel"),
]
