from django.apps import AppConfig


class GroundingConfig(AppConfig):
    name = "apps.grounding"
    label = "grounding"
    verbose_name = "Grounding verification"

    def ready(self) -> None:
        from apps.core.default_data import default_data_loader_register

        # After knowledge's loader (INSTALLED_APPS order): the agents name its domains.
        default_data_loader_register(loader="apps.grounding.services.grounding_agents_load_default_if_empty")
