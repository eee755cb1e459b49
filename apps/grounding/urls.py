"""Pages of the grounding review queue: the queue, one verification, its review, and a grounded message."""

from django.urls import path

from apps.grounding import views

app_name = "grounding"

urlpatterns = [
    path("verifications", views.verification_queue, name="verification_queue"),
    path("verifications/<int:verification_id>", views.verification_detail, name="verification_detail"),
    path("verifications/<int:verification_id>/review", views.verification_review, name="verification_review"),
    path("verifications/messages/<uuid:message_id>", views.message_detail, name="message_detail"),
]
