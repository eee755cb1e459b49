"""Pages of stored arXiv papers and search runs."""

from django.urls import path

from apps.arxiv import views

app_name = "arxiv"

urlpatterns = [
    path("papers", views.paper_list, name="paper_list"),
    path("papers/live", views.live_search, name="live_search"),
    path("papers/runs/<uuid:run_id>", views.run_detail, name="run_detail"),
    # Old-style ids contain a slash (hep-th/9901001), so the id is a path.
    path("papers/<path:arxiv_id>", views.paper_detail, name="paper_detail"),
]
