"""Any change to the registry, however it is made (admin, API, import, shell), drops the cached
service map in every process, once the change is committed."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from apps.connectors.models import Connector, RemoteTool, ToolAlias
from apps.connectors.services import registry_changed_on_commit


@receiver([post_save, post_delete], sender=Connector)
@receiver([post_save, post_delete], sender=RemoteTool)
@receiver([post_save, post_delete], sender=ToolAlias)
def registry_row_changed(sender, **kwargs) -> None:
    registry_changed_on_commit()
