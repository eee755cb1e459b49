"""The ontology's pages: exports, the analysts' pages and the operators' review queue (views.py)."""

from django.urls import path

from apps.ontology import views

app_name = "ontology"

urlpatterns = [
    path("ontology", views.ontology_index, name="ontology_index"),
    path("ontology/export.ttl", views.ontology_export_ttl, name="export_ttl"),
    path("ontology/export.zip", views.ontology_export_zip, name="export_zip"),
    path("ontology/proposals", views.proposal_list, name="proposal_list"),
    path(
        "ontology/proposals/<uuid:proposal_id>/approve", views.proposal_approve_page, name="proposal_approve"
    ),
    path("ontology/proposals/<uuid:proposal_id>/reject", views.proposal_reject_page, name="proposal_reject"),
    path("ontology/<str:local_name>", views.ontology_class, name="class_detail"),
]
