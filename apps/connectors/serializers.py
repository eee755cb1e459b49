"""DRF serializers of the connector registry (``/api/connectors/``, ``/api/tools/``).

They shape and type-check input; every write goes through the services, which run the
models' own validation, so the API and the admin accept and refuse the same values.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.connectors.models import Connector, RemoteTool
from apps.connectors.services import CONNECTOR_SYNC_FIELDS, CONNECTOR_WRITABLE_FIELDS, TOOL_SYNC_FIELDS
from apps.core.serializers import JsonCharField, JsonModelSerializer


class ConnectorSerializer(JsonModelSerializer):
    tool_count = serializers.SerializerMethodField()
    tools = serializers.SerializerMethodField()

    class Meta:
        model = Connector
        fields = [
            *CONNECTOR_WRITABLE_FIELDS,
            "tool_count",
            "tools",
            *CONNECTOR_SYNC_FIELDS,
            "created_at",
            "updated_at",
        ]
        read_only_fields = [*CONNECTOR_SYNC_FIELDS, "created_at", "updated_at"]

    def get_tools(self, connector: Connector) -> list[str]:
        # The viewset prefetches the tools: no query per connector.
        return [tool.name for tool in connector.tools.all()]

    def get_tool_count(self, connector: Connector) -> int:
        return len(connector.tools.all())


class RemoteToolSerializer(JsonModelSerializer):
    connector = serializers.SlugRelatedField(slug_field="slug", queryset=Connector.objects.all())
    aliases = serializers.ListField(
        child=JsonCharField(max_length=200),
        required=False,
        write_only=True,  # read back by to_representation, from the prefetched rows
        help_text="Other names of the tool (old or current upstream names); a write replaces them all.",
    )

    class Meta:
        read_back = ("aliases",)  # write-only, yet in every answer (to_representation): OpenAPI says so
        model = RemoteTool
        fields = [
            "name",
            "connector",
            "description",
            "tags",
            "scopes",
            "position",
            "upstream_name",
            "aliases",
            "declared_input_schema",
            *TOOL_SYNC_FIELDS,
        ]
        read_only_fields = TOOL_SYNC_FIELDS

    def to_representation(self, tool: RemoteTool) -> dict[str, Any]:
        data = super().to_representation(tool)
        data["aliases"] = sorted(alias.name for alias in tool.aliases.all())
        return data
