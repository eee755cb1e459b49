from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from apps.core import checks, signals  # noqa: F401 - registers system checks and signal handlers
        from apps.core.logging import configure_structlog

        configure_structlog()
