"""Pages of Wikidata facts: ask a question, its run, and one fact's provenance."""

from django.urls import path

from apps.wikidata import views

app_name = "wikidata"

urlpatterns = [
    path("facts", views.fact_home, name="fact_home"),
    path("facts/runs/<uuid:run_id>", views.run_detail, name="run_detail"),
    path("facts/runs/<uuid:run_id>/prov.ttl", views.run_prov, {"fmt": "turtle"}, name="run_prov_turtle"),
    path("facts/runs/<uuid:run_id>/prov.jsonld", views.run_prov, {"fmt": "json-ld"}, name="run_prov_jsonld"),
    path("facts/<int:fact_id>", views.fact_detail, name="fact_detail"),
]
