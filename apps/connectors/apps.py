from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "apps.connectors"
    label = "connectors"
    verbose_name = "Connectors"

    def ready(self) -> None:
        from apps.connectors import signals  # noqa: F401 - registers the cache invalidation receivers
