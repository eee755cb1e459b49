"""Operator pages of the core app (the JSON resource API is in ``cortexweb.resources``)."""

from django.urls import path

from apps.core import views_events

app_name = "core_pages"

urlpatterns = [
    path("events", views_events.events, name="events"),
]
