"""Writes to the connector registry: manifest import and export, and cache invalidation."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from apps.connectors import manifest as manifest_format
from apps.connectors.models import Connector, RemoteTool, ToolAlias
from apps.core.errors import ValidationFailed
from apps.core.redis import get_redis
from apps.core.services import event_emit

logger = logging.getLogger(__name__)

REGISTRY_VERSION_KEY = "cortex:connectors:registry-version"


# --- Cache invalidation ----------------------------------------------------------------


def registry_changed() -> None:
    """Move every process on to a new registry version, so cached service maps are dropped.

    Callers run it after commit: bumping earlier would let another process rebuild the
    map from rows not yet committed and cache that under the new version.
    """
    get_redis().incr(REGISTRY_VERSION_KEY)


def registry_changed_on_commit() -> None:
    transaction.on_commit(registry_changed)


# --- Export ----------------------------------------------------------------------------


def connector_manifest_entry(connector: Connector) -> dict[str, Any]:
    """One connector (with its prefetched tools and aliases) in the manifest format."""
    auth = {"type": connector.auth_type}
    if connector.auth_secret_env:
        auth["secretEnv"] = connector.auth_secret_env
    if connector.auth_header:
        auth["header"] = connector.auth_header
    entry = {
        "id": connector.slug,
        "name": connector.name,
        "version": connector.version,
        "transport": connector.transport,
        "endpoint": connector.endpoint,
        "endpointEnv": connector.endpoint_env,
        "auth": auth,
        "scopes": list(connector.scopes),
        "ttlSeconds": connector.ttl_seconds,
        "enabled": connector.enabled,
        "metadata": _sorted_keys(connector.metadata),
        "rateLimit": (
            {
                "intervalSeconds": _json_number(connector.rate_limit_interval),
                "burst": connector.rate_limit_burst,
            }
            if connector.rate_limit_interval
            else None
        ),
        "timeoutSeconds": _json_number(connector.timeout_seconds),
        "textErrorPatterns": connector.text_error_patterns,
        "remoteTools": [tool_manifest_entry(tool) for tool in connector.tools.all()],
    }
    return manifest_format.ordered(entry, manifest_format.CONNECTOR_KEYS, manifest_format.CONNECTOR_REQUIRED)


def _sorted_keys(value: Any) -> Any:
    # jsonb keeps no key order (it stores shorter keys first); sorted keys make exports stable.
    if isinstance(value, dict):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def _json_number(value: float | None) -> float | int | None:
    # Stored as float; written back as the manifest's author most likely wrote it (3, not 3.0).
    return int(value) if value is not None and float(value).is_integer() else value


def tool_manifest_entry(tool: RemoteTool) -> dict[str, Any]:
    entry = {
        "name": tool.name,
        "description": tool.description,
        "tags": list(tool.tags),
        "scopes": list(tool.scopes),
        "upstreamName": tool.upstream_name,
        "aliases": sorted(alias.name for alias in tool.aliases.all()),
        "inputSchema": _sorted_keys(tool.declared_input_schema),
    }
    return manifest_format.ordered(entry, manifest_format.TOOL_KEYS, manifest_format.TOOL_REQUIRED)


def registry_export() -> dict[str, Any]:
    """The whole registry as a manifest (what ``connectors export`` and the admin write)."""
    connectors = Connector.objects.prefetch_related("tools__aliases").order_by("position", "slug")
    return {
        "$schema": manifest_format.SCHEMA_REFERENCE,
        "connectors": [connector_manifest_entry(connector) for connector in connectors],
    }


# --- Import ----------------------------------------------------------------------------


@dataclass
class ManifestChanges:
    """What importing a manifest would do (the admin's preview) or did."""

    connectors_created: list[str] = field(default_factory=list)
    connectors_updated: dict[str, list[str]] = field(default_factory=dict)
    connectors_deleted: list[str] = field(default_factory=list)
    tools_created: list[str] = field(default_factory=list)
    tools_updated: dict[str, list[str]] = field(default_factory=dict)
    tools_deleted: list[str] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not any(vars(self).values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "connectorsCreated": self.connectors_created,
            "connectorsUpdated": self.connectors_updated,
            "connectorsDeleted": self.connectors_deleted,
            "toolsCreated": self.tools_created,
            "toolsUpdated": self.tools_updated,
            "toolsDeleted": self.tools_deleted,
        }

    def summary(self) -> str:
        return (
            f"connectors: {len(self.connectors_created)} created, {len(self.connectors_updated)} updated, "
            f"{len(self.connectors_deleted)} deleted; tools: {len(self.tools_created)} created, "
            f"{len(self.tools_updated)} updated, {len(self.tools_deleted)} deleted"
        )


def manifest_validated(*, text: str | bytes | None = None, data: Any = None) -> dict[str, Any]:
    """The manifest's data, or ``ValidationFailed`` listing every error with its JSON path."""
    if text is not None:
        data, errors = manifest_format.parse_manifest(text)
        if errors:
            raise _invalid(errors)
    errors = manifest_format.validate_manifest(data)
    if errors:
        raise _invalid(errors)
    return data


def _invalid(errors: list[manifest_format.ManifestError]) -> ValidationFailed:
    noun = "error" if len(errors) == 1 else "errors"
    return ValidationFailed(
        f"The manifest has {len(errors)} {noun}; nothing was changed.",
        details={"errors": [error.as_dict() for error in errors]},
    )


def manifest_changes(*, data: dict[str, Any]) -> ManifestChanges:
    """Compare a validated manifest with the registry, field by field (nothing is written)."""
    current = {entry["id"]: entry for entry in registry_export()["connectors"]}
    current_tools = {
        tool["name"]: tool for entry in current.values() for tool in entry.get("remoteTools", [])
    }
    tool_connector = {
        tool["name"]: entry["id"] for entry in current.values() for tool in entry.get("remoteTools", [])
    }
    changes = ManifestChanges()
    new_tools: set[str] = set()
    for entry in data["connectors"]:
        old = current.get(entry["id"])
        if old is None:
            changes.connectors_created.append(entry["id"])
        else:
            changed = _changed_keys(
                old, entry, manifest_format.CONNECTOR_KEYS, skip=frozenset({"remoteTools"})
            )
            if changed:
                changes.connectors_updated[entry["id"]] = changed
        for tool in entry.get("remoteTools", []):
            new_tools.add(tool["name"])
            old_tool = current_tools.get(tool["name"])
            if old_tool is None:
                changes.tools_created.append(tool["name"])
            else:
                changed = _changed_keys(old_tool, tool, manifest_format.TOOL_KEYS)
                if tool_connector[tool["name"]] != entry["id"]:
                    changed.append("connector")
                if changed:
                    changes.tools_updated[tool["name"]] = changed
    new_ids = {entry["id"] for entry in data["connectors"]}
    changes.connectors_deleted = [slug for slug in current if slug not in new_ids]
    changes.tools_deleted = [name for name in current_tools if name not in new_tools]
    return changes


def _changed_keys(
    old: dict, new: dict, keys: tuple[str, ...], skip: frozenset | set = frozenset()
) -> list[str]:
    return [key for key in keys if key not in skip and old.get(key) != new.get(key)]


@transaction.atomic
def manifest_import(*, data: dict[str, Any], actor: str = "") -> ManifestChanges:
    """Make the registry exactly the manifest: all or nothing.

    Sync-owned fields (upstream descriptions and schemas, drift) of tools that stay
    are kept; tools and connectors the manifest no longer lists are deleted.
    """
    data = manifest_validated(data=data)
    changes = manifest_changes(data=data)
    # Aliases move freely between tools within one manifest; recreating them all
    # avoids transient clashes with the global uniqueness of alias names.
    ToolAlias.objects.all().delete()
    keep_tools: list[str] = []
    aliases: list[ToolAlias] = []
    for position, entry in enumerate(data["connectors"]):
        connector, _ = Connector.objects.update_or_create(
            slug=entry["id"], defaults=_connector_fields(entry, position)
        )
        for tool_position, tool_entry in enumerate(entry.get("remoteTools", [])):
            tool, _ = RemoteTool.objects.update_or_create(
                name=tool_entry["name"], defaults=_tool_fields(tool_entry, connector, tool_position)
            )
            keep_tools.append(tool.name)
            aliases.extend(ToolAlias(tool=tool, name=alias) for alias in tool_entry.get("aliases", []))
    ToolAlias.objects.bulk_create(aliases)
    RemoteTool.objects.exclude(name__in=keep_tools).delete()
    Connector.objects.exclude(slug__in=[entry["id"] for entry in data["connectors"]]).delete()
    registry_changed_on_commit()
    event_emit(name="connectors.manifest.imported", payload={"actor": actor, **changes.as_dict()})
    logger.info("connector manifest imported: %s", changes.summary())
    return changes


def _connector_fields(entry: dict[str, Any], position: int) -> dict[str, Any]:
    rate_limit = entry.get("rateLimit") or {}
    return {
        "name": entry["name"],
        "version": entry["version"],
        "transport": entry["transport"],
        "endpoint": entry["endpoint"],
        "endpoint_env": entry.get("endpointEnv", ""),
        "auth_type": entry["auth"]["type"],
        "auth_secret_env": entry["auth"].get("secretEnv", ""),
        "auth_header": entry["auth"].get("header", ""),
        "scopes": entry["scopes"],
        "ttl_seconds": entry["ttlSeconds"],
        "enabled": entry["enabled"],
        "metadata": entry.get("metadata", {}),
        "rate_limit_interval": rate_limit.get("intervalSeconds"),
        "rate_limit_burst": rate_limit.get("burst", 1),
        "timeout_seconds": entry.get("timeoutSeconds"),
        "text_error_patterns": entry.get("textErrorPatterns", []),
        "position": position,
    }


def _tool_fields(entry: dict[str, Any], connector: Connector, position: int) -> dict[str, Any]:
    return {
        "connector": connector,
        "description": entry.get("description", ""),
        "tags": entry.get("tags", []),
        "scopes": entry.get("scopes", []),
        "upstream_name": entry.get("upstreamName", ""),
        "declared_input_schema": entry.get("inputSchema"),
        "position": position,
    }


def manifest_load_default_if_empty() -> ManifestChanges | None:
    """First start: load ``CORTEX_CONNECTORS_MANIFEST`` when the registry has no connectors."""
    if Connector.objects.exists():
        return None
    text = Path(settings.CORTEX_CONNECTORS_MANIFEST).read_text(encoding="utf-8")
    return manifest_import(data=manifest_validated(text=text), actor="first start")
