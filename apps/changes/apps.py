from django.apps import AppConfig


class ChangesConfig(AppConfig):
    """The change log: who changed what and when, on django-auditlog (docs/operations.md "Change log")."""

    name = "apps.changes"
    label = "changes"
    verbose_name = "Change log"

    def ready(self) -> None:
        from apps.changes import registration

        registration.register()
