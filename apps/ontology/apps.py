from django.apps import AppConfig


class OntologyConfig(AppConfig):
    name = "apps.ontology"
    label = "ontology"
    verbose_name = "Ontology"

    def ready(self) -> None:
        from apps.core.default_data import default_data_loader_register

        default_data_loader_register(loader="apps.ontology.services.ontology_load_default_if_empty")
