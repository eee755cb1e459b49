from django.urls import path

from apps.changes import views

app_name = "changes"

urlpatterns = [
    path("changes", views.change_log, name="change_log"),
]
