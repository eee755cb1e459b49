from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "apps.memory"
    label = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from apps.core.services import api_token_rotated
        from apps.memory.receivers import memories_follow_rotated_token

        api_token_rotated.connect(memories_follow_rotated_token, dispatch_uid="memory.follow_rotated_token")
