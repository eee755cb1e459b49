from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "apps.connectors"
    label = "connectors"
    verbose_name = "Connectors"

    def ready(self) -> None:
        from apps.connectors import checks, signals  # noqa: F401 - registers system checks and cache receivers
        from apps.core.default_data import default_data_loader_register

        default_data_loader_register(loader="apps.connectors.services.manifest_load_default_if_empty")
