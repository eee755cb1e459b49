"""Pages of agent memory for operators: the memories (filtered or ranked), one memory, pin and forget."""

from django.urls import path

from apps.memory import views

app_name = "memory"

urlpatterns = [
    path("memories", views.memory_list, name="memory_list"),
    path("memories/<uuid:memory_id>", views.memory_detail, name="memory_detail"),
    path("memories/<uuid:memory_id>/pin", views.memory_pin, name="memory_pin"),
    path("memories/<uuid:memory_id>/forget", views.memory_forget, name="memory_forget"),
]
