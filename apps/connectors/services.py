"""Writes to the connector registry: manifest import and export, and cache invalidation."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Max

from apps.changes.services import recorded_as_change_set
from apps.connectors import manifest as manifest_format
from apps.connectors.models import Connector, RemoteTool, ToolAlias
from apps.connectors.registry_watch import CHANNEL as REGISTRY_CHANNEL
from apps.connectors.registry_watch import watch
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
    redis = get_redis()
    version = redis.incr(REGISTRY_VERSION_KEY)
    watch.changed()  # this process at once; the others when the message arrives
    redis.publish(REGISTRY_CHANNEL, version)


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
@recorded_as_change_set("manifest import")  # one change set in the change log
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


# --- Single-row writes (the resource API) ------------------------------------------------

CONNECTOR_WRITABLE_FIELDS = (
    "slug",
    "name",
    "version",
    "transport",
    "endpoint",
    "endpoint_env",
    "auth_type",
    "auth_secret_env",
    "auth_header",
    "scopes",
    "ttl_seconds",
    "enabled",
    "metadata",
    "rate_limit_interval",
    "rate_limit_burst",
    "timeout_seconds",
    "text_error_patterns",
    "position",
)
# What sync records upstream: shown everywhere, written only by the gateway's sync.
CONNECTOR_SYNC_FIELDS = ("undeclared_upstream_tools", "last_synced_at", "last_sync_error")
TOOL_SYNC_FIELDS = (
    "drift",
    "last_seen_upstream_at",
    "upstream_description",
    "upstream_input_schema",
    "annotations",
    # The rug-pull guard's held change (approved in the admin, never written through the API).
    "pending_changes",
    "pending_description",
    "pending_input_schema",
    "pending_since",
)
TOOL_WRITABLE_FIELDS = (
    "connector",
    "name",
    "description",
    "tags",
    "scopes",
    "position",
    "upstream_name",
    "declared_input_schema",
)


def _model_validated(instance: Connector | RemoteTool) -> None:
    """``full_clean`` (the admin's validation) as ``ValidationFailed`` naming each field."""
    try:
        instance.full_clean()
    except DjangoValidationError as error:
        raise ValidationFailed(
            "The request has invalid fields; see details.", details={"fields": error.message_dict}
        ) from error


@transaction.atomic
def connector_save(*, instance: Connector | None = None, data: dict[str, Any]) -> Connector:
    """Create a connector, or update the given fields of one; model validation applies."""
    connector = instance or Connector()
    for name in CONNECTOR_WRITABLE_FIELDS:
        if name in data:
            setattr(connector, name, data[name])
    if isinstance(connector.metadata, dict) and "brand" in connector.metadata:
        raise ValidationFailed(
            "'brand' is set by CortexWeb (CORTEX_BRAND); remove it from metadata.",
            details={"fields": {"metadata": ["'brand' is set by CortexWeb; remove it."]}},
        )
    _model_validated(connector)
    connector.save()
    return connector


def connector_delete(*, connector: Connector) -> None:
    """Delete a connector and its tools (and their aliases)."""
    connector.delete()


def _tool_connector(value: Connector | str) -> Connector:
    if isinstance(value, Connector):
        return value
    connector = Connector.objects.filter(slug=value).first()
    if connector is None:
        raise ValidationFailed(
            f"No connector has the id {value!r}.",
            details={"fields": {"connector": [f"Unknown id {value!r}."]}},
        )
    return connector


def _alias_errors(tool: RemoteTool, aliases: list[str]) -> list[str]:
    errors = []
    if len(set(aliases)) != len(aliases):
        errors.append("Each alias may appear once.")
    for alias in aliases:
        if not alias or len(alias) > 200:
            errors.append(f"{alias!r} is not a valid alias: use 1–200 characters.")
        elif alias == tool.name or RemoteTool.objects.filter(name=alias).exclude(pk=tool.pk).exists():
            errors.append(f"{alias!r} is a canonical tool name and cannot be an alias.")
    taken = ToolAlias.objects.filter(name__in=aliases).exclude(tool_id=tool.pk).select_related("tool")
    errors.extend(f"{alias.name!r} is already an alias of {alias.tool.name!r}." for alias in taken)
    return errors


@transaction.atomic
def tool_save(*, instance: RemoteTool | None = None, data: dict[str, Any]) -> RemoteTool:
    """Create a tool, or update the given fields of one; ``data["aliases"]`` replaces its aliases.

    ``data["connector"]`` is a Connector or its id. Sync-owned fields are never written here.
    """
    tool = instance or RemoteTool()
    for name in TOOL_WRITABLE_FIELDS:
        if name in data:
            value = _tool_connector(data[name]) if name == "connector" else data[name]
            setattr(tool, name, value)
    if instance is None and "position" not in data and tool.connector_id is not None:
        # A new tool goes last in its connector's list unless told otherwise.
        last = tool.connector.tools.aggregate(last=Max("position"))["last"]
        tool.position = 0 if last is None else last + 1
    _model_validated(tool)
    if ToolAlias.objects.filter(name=tool.name).exclude(tool_id=tool.pk).exists():
        raise ValidationFailed(
            f"{tool.name!r} is already an alias of another tool.",
            details={"fields": {"name": [f"{tool.name!r} is already an alias of another tool."]}},
        )
    aliases = data.get("aliases")
    if aliases is not None:
        errors = _alias_errors(tool, list(aliases))
        if errors:
            raise ValidationFailed(
                "The request has invalid fields; see details.", details={"fields": {"aliases": errors}}
            )
    tool.save()
    if aliases is not None:
        tool.aliases.exclude(name__in=aliases).delete()
        existing = set(tool.aliases.values_list("name", flat=True))
        ToolAlias.objects.bulk_create(
            ToolAlias(tool=tool, name=name) for name in aliases if name not in existing
        )
        registry_changed_on_commit()  # bulk_create sends no post_save
    return tool


def tool_delete(*, tool: RemoteTool) -> None:
    """Delete a tool and its aliases (recorded calls keep their names)."""
    tool.delete()
