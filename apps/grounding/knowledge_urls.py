"""Pages of the knowledge base (served by grounding, which reads both the entries and the verifications
that cite them): search and browse entries, and one entry with what cited it."""

from django.urls import path

from apps.grounding import knowledge_views as views

app_name = "knowledge"

urlpatterns = [
    path("knowledge", views.knowledge_index, name="knowledge_index"),
    path("knowledge/<str:entry_id>", views.entry_detail, name="entry_detail"),
]
