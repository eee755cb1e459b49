from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "apps.knowledge"
    label = "knowledge"
    verbose_name = "Knowledge"

    def ready(self) -> None:
        from apps.core.default_data import default_data_loader_register

        default_data_loader_register(loader="apps.knowledge.services.knowledge_load_default_if_empty")
