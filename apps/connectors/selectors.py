"""Reads of the connector registry: the signed service map (cached) and the tool catalogue."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from django.conf import settings
from django.db import connection
from django.db.models import Prefetch
from redis.exceptions import RedisError
from ulid import ULID

from apps.connectors.adapters import adapter_input_schema, shaped_input_schema
from apps.connectors.environment import connector_endpoint_in_effect
from apps.connectors.models import Connector, RemoteTool, ToolAlias, connectors_switched_off
from apps.connectors.registry_watch import watch
from apps.connectors.services import REGISTRY_VERSION_KEY
from apps.core.errors import NotFound
from apps.core.redis import get_redis
from apps.core.signing import sign

SERVICE_MAP_CACHE_KEY = "cortex:connectors:service-map:{version}"
T = TypeVar("T")


def connector_endpoint(connector: Connector) -> str:
    """Where calls go: the connector's endpoint variable when it is set (and the connector may read
    it), else the stored URL. Never published: the map and the pages show the stored URL."""
    return connector_endpoint_in_effect(
        connector.slug, endpoint=connector.endpoint, endpoint_env=connector.endpoint_env
    )


# A tool whose arguments nobody declared (and no sync has recorded) still gets an object schema:
# any object, which its upstream then judges.
UNDECLARED_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": True,
    "description": "Arguments not declared in the registry; the upstream checks them.",
}


def input_schema_published(
    *, name: str, upstream: dict[str, Any] | None, declared: dict[str, Any] | None
) -> dict[str, Any]:
    """The input schema agents see for a tool (``/v1/tools`` and MCP ``tools/list``; never the service
    map, whose tool entries are seed 000's strict ``ConnectorRemoteToolSchema``).

    The upstream's own once a sync recorded it; for a native tool, the schema of the model its
    adapter validates with (derived, never copied); else the manifest's declared one; else
    :data:`UNDECLARED_INPUT_SCHEMA`. Never ``None``. A tool with a registered call shape (seed 000's
    ``qids`` for ``wikidata.get_claims``) publishes it too.
    """
    schema = upstream or adapter_input_schema(name) or declared
    return shaped_input_schema(name, dict(schema)) if schema else dict(UNDECLARED_INPUT_SCHEMA)


def tool_input_schema(tool: RemoteTool) -> dict[str, Any]:
    """:func:`input_schema_published` of a ``RemoteTool``."""
    return input_schema_published(
        name=tool.name, upstream=tool.upstream_input_schema, declared=tool.declared_input_schema
    )


def _published_tool(name: str, description: str, tags: list[str], scopes: list[str]) -> dict[str, Any]:
    """A service-map tool entry: exactly seed 000's ``ConnectorRemoteToolSchema`` (``.strict()``: name,
    and description, tags and scopes only when set). A consumer parsing strictly rejects the whole
    map over one extra key, so input schemas stay on ``/v1/tools`` and MCP ``tools/list``."""
    entry: dict[str, Any] = {"name": name}
    if description:
        entry["description"] = description
    if tags:
        entry["tags"] = tags
    if scopes:
        entry["scopes"] = scopes
    return entry


def service_map_payload(*, generated_at: datetime | None = None) -> dict[str, Any]:
    """The unsigned service map: every connector as agents see it; internals (aliases, variable
    names, values from the environment) never published.

    Reads plain column values (two queries, no model instances): the map of a large
    registry must build in well under 50 ms.
    """
    brand = settings.CORTEX_BRAND
    tools: dict[int, list[dict[str, Any]]] = {}
    switched_off = connectors_switched_off()
    tool_rows = (
        RemoteTool.objects.exclude(connector__slug__in=switched_off)
        .order_by("connector_id", "position", "name")
        .values_list("connector_id", "name", "description", "tags", "scopes")
    )
    for connector_id, name, description, tags, scopes in tool_rows:
        tools.setdefault(connector_id, []).append(_published_tool(name, description, tags, scopes))
    entries = []
    connector_rows = (
        Connector.objects.switched_on()
        .order_by("position", "slug")
        .values(
            "pk",
            "slug",
            "version",
            "endpoint",
            "auth_type",
            "scopes",
            "ttl_seconds",
            "enabled",
            "metadata",
        )
    )
    for row in connector_rows:
        entry: dict[str, Any] = {
            "id": row["slug"],
            "version": row["version"],
            # The stored URL, never a value from the environment (an endpoint variable may point
            # inside the network, or be misnamed to hold a secret).
            "endpoint": row["endpoint"],
            "auth": {"type": row["auth_type"]},
            "scopes": row["scopes"],
            "ttlSeconds": row["ttl_seconds"],
            "enabled": row["enabled"],
            "metadata": {**row["metadata"], "brand": brand},
        }
        if row["pk"] in tools:
            entry["remoteTools"] = tools[row["pk"]]
        entries.append(entry)
    generated_at = generated_at or datetime.now(UTC)
    return {
        "id": str(ULID()),
        "brand": brand,
        "generatedAt": generated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ttlSeconds": settings.CORTEX_SERVICE_MAP_TTL,
        "connectors": entries,
    }


@dataclass(frozen=True)
class SignedServiceMap:
    body: bytes
    etag: str
    version: str
    expires_at: float
    generation: int | None = None  # the registry watch's generation it was cached under


def service_map_signed() -> SignedServiceMap:
    """Build and sign a fresh map (uncached)."""
    payload = service_map_payload()
    signature = sign(payload, key=settings.CORTEX_SIGNING_KEY)
    body = json.dumps({**payload, "signature": signature}, ensure_ascii=False).encode("utf-8")
    return SignedServiceMap(
        body=body, etag=f'"{signature}"', version="", expires_at=time.time() + settings.CORTEX_SERVICE_MAP_TTL
    )


_process_cache: dict[str, SignedServiceMap] = {}


def process_caches_clear() -> None:
    """Forget this process's copies (tests; the registry version makes them safe otherwise)."""
    _process_cache.clear()
    _per_version_cache.clear()


def _flags_suffix() -> str:
    switched_off = connectors_switched_off()
    return f"-off:{','.join(switched_off)}" if switched_off else "-on"


def registry_version() -> str:
    """The registry's version in Redis, plus the feature flags in effect (they change what is published)."""
    return f"{int(get_redis().get(REGISTRY_VERSION_KEY) or 0)}{_flags_suffix()}"


def service_map_cached() -> SignedServiceMap:
    """The current signed map, shared by all processes until the registry changes or it expires.

    While this process is subscribed to registry changes (``registry_watch``) a cached copy
    is served without touching Redis; otherwise one Redis read (the registry version) decides.
    The map itself is kept in this process and in Redis, where the first process to build a
    version publishes it so every process serves the same id, signature and ETag.
    """
    generation = watch.trusted_generation()  # read before anything that could be stale
    local = _process_cache.get("map")
    now = time.time()
    if (
        local
        and generation is not None
        and local.generation == generation
        and local.version.endswith(_flags_suffix())
        and local.expires_at > now
    ):
        return local
    version = registry_version()
    if local and local.version == version and local.expires_at > now:
        _process_cache["map"] = replace(local, generation=generation)
        return local
    redis = get_redis()
    key = SERVICE_MAP_CACHE_KEY.format(version=version)
    stored = cast("bytes | None", redis.get(key))
    if stored is None:
        fresh = service_map_signed()
        ttl_ms = max(1, round((fresh.expires_at - time.time()) * 1000))
        packed = b"\n".join([fresh.etag.encode(), repr(fresh.expires_at).encode(), fresh.body])
        # NX: when processes race to build one version, the first one's map is everyone's.
        redis.set(key, packed, nx=True, px=ttl_ms)
        stored = cast("bytes | None", redis.get(key)) or packed
    etag, expires_at, body = stored.split(b"\n", 2)
    document = SignedServiceMap(
        body=body, etag=etag.decode(), version=version, expires_at=float(expires_at), generation=generation
    )
    _process_cache["map"] = document
    return document


@dataclass(frozen=True)
class ToolSpec:
    """What planning needs of a published tool, kept in memory per registry version."""

    name: str
    connector: str
    tags: frozenset[str]
    scopes: frozenset[str]


_per_version_cache: dict[str, tuple[str, Any]] = {}


def per_registry_version(name: str, build: Callable[[], T]) -> T:
    """``build()``, computed once per registry version in this process and kept under ``name``.

    For what every caller sees alike and only a registry change (or a feature flag, part of the
    version) can change. Built afresh, and not kept, in two cases: inside a transaction, which may
    hold registry changes the version does not count yet (it moves on commit); and without Redis,
    where there is no version to trust (the caller keeps working through the outage as uncached).
    """
    if connection.in_atomic_block:
        return build()
    try:
        version = registry_version()
    except RedisError:
        return build()
    cached = _per_version_cache.get(name)
    if cached is not None and cached[0] == version:
        return cast("T", cached[1])
    value = build()
    _per_version_cache[name] = (version, value)
    return value


def published_tool_index() -> tuple[ToolSpec, ...]:
    """Published tools as ``ToolSpec``s, read from Postgres once per registry version per process
    (:func:`per_registry_version`: read afresh inside a transaction and while Redis is down)."""
    return per_registry_version("connectors.published_tool_index", _tool_index_read)


def _tool_index_read() -> tuple[ToolSpec, ...]:
    rows = RemoteTool.objects.published().values_list("name", "connector__slug", "tags", "scopes")
    return tuple(
        ToolSpec(name=name, connector=slug, tags=frozenset(tags), scopes=frozenset(scopes))
        for name, slug, tags, scopes in rows.order_by("name")
    )


def tools_filtered(*, tags: list[str] | None = None, scopes: list[str] | None = None) -> list[RemoteTool]:
    """Published tools carrying every given tag and every given scope, in catalogue order."""
    wanted_tags, wanted_scopes = set(tags or ()), set(scopes or ())
    return [
        tool
        for tool in RemoteTool.objects.published().order_by(
            "connector__position", "connector__slug", "position"
        )
        if wanted_tags <= set(tool.tags) and wanted_scopes <= set(tool.scopes)
    ]


def tool_resolve(*, name: str) -> RemoteTool:
    """A tool by canonical name or alias, with its connector; ``NotFound`` naming the name."""
    tool = RemoteTool.objects.select_related("connector").filter(name=name).first()
    if tool is None:
        alias = ToolAlias.objects.select_related("tool__connector").filter(name=name).first()
        tool = alias.tool if alias else None
    if tool is None:
        raise NotFound(
            f"No tool is called {name!r}; GET /v1/tools lists the tools and their names.",
            details={"name": name},
        )
    return tool


@dataclass
class CatalogueEntry:
    connector: Connector
    tools: list[RemoteTool]
    health: Any = None  # apps.connectors.health.Health, set by the page (computed from calls and probes)


def catalogue_entries(
    *, tags: list[str], scopes: list[str]
) -> tuple[list[CatalogueEntry], set[str], set[str]]:
    """The operators' catalogue: every connector with its tools carrying all ``tags`` and ``scopes``,
    plus every tag and scope in use (for the filter chips). Filtering hides connectors with no
    matching tool; unfiltered, every connector shows, disabled ones and drift included."""
    connectors = Connector.objects.order_by("position", "slug").prefetch_related(
        Prefetch("tools", queryset=RemoteTool.objects.order_by("position", "name"))
    )
    wanted_tags, wanted_scopes = set(tags), set(scopes)
    entries: list[CatalogueEntry] = []
    all_tags: set[str] = set()
    all_scopes: set[str] = set()
    for connector in connectors:
        tools = list(connector.tools.all())
        for tool in tools:
            all_tags.update(tool.tags)
            all_scopes.update(tool.scopes)
        matching = [
            tool for tool in tools if wanted_tags <= set(tool.tags) and wanted_scopes <= set(tool.scopes)
        ]
        if matching or not (tags or scopes):
            entries.append(CatalogueEntry(connector, matching))
    return entries, all_tags, all_scopes
