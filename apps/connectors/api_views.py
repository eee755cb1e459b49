"""DRF resource views of the connector registry (``/api/connectors/``, ``/api/tools/``).

Reads need a ``read`` token, writes an ``admin`` token (``DrfTokenScopePermission``);
writes go through the services.
"""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import viewsets

from apps.connectors.models import Connector, DriftState, RemoteTool, Transport
from apps.connectors.serializers import ConnectorSerializer, RemoteToolSerializer
from apps.connectors.services import connector_delete, connector_save, tool_delete, tool_save
from apps.core.filters import filter_boolean, filter_choice
from apps.core.models import TokenScope
from apps.core.schemas import comma_separated


class ConnectorViewSet(viewsets.ModelViewSet):
    """Connectors by id (slug); filter with ``?transport=``, ``?enabled=``, ``?scopes=a,b``."""

    serializer_class = ConnectorSerializer
    session_read_perms = ()  # any staff (the catalogue page is public); writes: the model permissions
    lookup_field = "slug"
    lookup_value_regex = "[^/]+"
    read_scope = TokenScope.READ
    write_scope = TokenScope.ADMIN

    def get_queryset(self) -> QuerySet[Connector]:
        queryset = Connector.objects.prefetch_related("tools").order_by("position", "slug")
        params = self.request.query_params
        if transport := filter_choice(params, "transport", Transport.values):
            queryset = queryset.filter(transport=transport)
        if (enabled := filter_boolean(params, "enabled")) is not None:
            queryset = queryset.filter(enabled=enabled)
        if scopes := comma_separated(params.get("scopes")):
            queryset = queryset.filter(scopes__contains=scopes)
        return queryset

    def perform_create(self, serializer: ConnectorSerializer) -> None:
        serializer.instance = connector_save(data=serializer.validated_data)

    def perform_update(self, serializer: ConnectorSerializer) -> None:
        serializer.instance = connector_save(instance=serializer.instance, data=serializer.validated_data)

    def perform_destroy(self, instance: Connector) -> None:
        connector_delete(connector=instance)


class RemoteToolViewSet(viewsets.ModelViewSet):
    """Tools by canonical name; filter with ``?connector=``, ``?tags=a,b``, ``?scopes=a,b``
    (every listed tag and scope must match), ``?drift=``."""

    serializer_class = RemoteToolSerializer
    session_read_perms = ()  # any staff (the catalogue page is public); writes: the model permissions
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    read_scope = TokenScope.READ
    write_scope = TokenScope.ADMIN

    def get_queryset(self) -> QuerySet[RemoteTool]:
        queryset = (
            RemoteTool.objects.select_related("connector")
            .prefetch_related("aliases")
            .order_by("connector__position", "connector__slug", "position", "name")
        )
        params = self.request.query_params
        if params.get("connector"):
            queryset = queryset.filter(connector__slug=params["connector"])
        if tags := comma_separated(params.get("tags")):
            queryset = queryset.filter(tags__contains=tags)
        if scopes := comma_separated(params.get("scopes")):
            queryset = queryset.filter(scopes__contains=scopes)
        if drift := filter_choice(params, "drift", DriftState.values):
            queryset = queryset.filter(drift=drift)
        return queryset

    def perform_create(self, serializer: RemoteToolSerializer) -> None:
        serializer.instance = tool_save(data=serializer.validated_data)

    def perform_update(self, serializer: RemoteToolSerializer) -> None:
        serializer.instance = tool_save(instance=serializer.instance, data=serializer.validated_data)

    def perform_destroy(self, instance: RemoteTool) -> None:
        tool_delete(tool=instance)
