from django.apps import AppConfig


class GroundingConfig(AppConfig):
    name = "apps.grounding"
    label = "grounding"
    verbose_name = "Grounding verification"
