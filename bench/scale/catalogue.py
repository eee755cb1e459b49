"""The tool catalogue at scale (issue 27 item 4): ``python -m bench scale``, part ``catalogue``.

1. The signed service map with 10, 100 and 1000 connectors of 20 tools each
   (``BENCH_SCALE_CATALOGUE_CONNECTORS``, default ``10,100,1000``; ``BENCH_SCALE_CATALOGUE_TOOLS_EACH``,
   default 20), from ``bench.connectors.synthetic_manifest``, validated as a manifest and loaded in
   bulk in place of the registry (what ``manifest_import`` makes of it, without its row-by-row
   writes) in a transaction that is rolled back: generated uncached
   (``service_map_signed``: two queries, RFC 8785 JSON, HMAC) and the cached response
   (``GET /v1/connectors/service-map`` through Django's test client, the map served from this
   process's cache after one Redis read of the registry version). Each size moves the registry version
   so its map is cached afresh; the maps cached in Redis under those versions are deleted at the end
   and the version moved once more, so every process drops them.
2. ``tools/list`` with 1000 catalogue tools (``BENCH_SCALE_CATALOGUE_LIST_TOOLS``: what ``GET /v1/tools``
   lists) over MCP (official SDK client, streamable HTTP, one session, no client cache) against
   ``GET /v1/tools``, on ``bench.mcp``'s live uvicorn server, the two taking turns each round (its
   ``_timed``: 10 warm-up rounds, 100 timed). The uvicorn server answers from its own threads, which
   cannot see an uncommitted transaction, so the synthetic connectors that bring the catalogue to that
   size are saved for good through ``connector_save`` / ``tool_save`` beside the real ones and deleted
   (``connector_delete``) at the end, with the bench's API token and the events of its requests.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from typing import Any

from django.db import transaction
from django.test import Client as DjangoClient
from django.test import override_settings

from apps.connectors import selectors
from apps.connectors.models import Connector, RemoteTool, ToolAlias
from apps.connectors.services import (
    _connector_fields,
    _tool_fields,
    connector_delete,
    connector_save,
    manifest_validated,
    registry_changed,
    tool_save,
)
from apps.core.default_data import default_data_load
from apps.core.models import Event
from apps.core.redis import get_redis
from apps.core.services import api_token_create
from bench import timed
from bench.__main__ import percentile
from bench.connectors import synthetic_manifest
from bench.mcp import N as MCP_ROUNDS
from bench.mcp import _LiveServer, _timed, mcp_and_rest_clients
from bench.scale.table import ms, print_table, ratio

SIZES = [int(size) for size in os.environ.get("BENCH_SCALE_CATALOGUE_CONNECTORS", "10,100,1000").split(",")]
TOOLS_EACH = int(os.environ.get("BENCH_SCALE_CATALOGUE_TOOLS_EACH", "20"))
LIST_TOOLS = int(os.environ.get("BENCH_SCALE_CATALOGUE_LIST_TOOLS", "1000"))
GOAL_RATIO = 1.5
SYNTHETIC_PREFIX = "bench-scale-"
BULK_BATCH = 2000


class _Rollback(Exception):
    pass


def _p(samples: list[float]) -> str:
    return f"{ms(percentile(samples, 0.50))} / {ms(percentile(samples, 0.95))}"


def _uncached_rounds(tools: int) -> int:
    """Fewer rounds where one build takes long, so the largest size stays within the budget."""
    return 30 if tools <= 2000 else 10


def _registry_replaced(manifest: dict[str, Any]) -> None:
    """The registry made exactly ``manifest``, as ``manifest_import`` does, in bulk: the import's
    row-by-row ``update_or_create`` takes minutes at 20,000 tools, and it is not what is measured."""
    data = manifest_validated(data=manifest)
    Connector.objects.all().delete()
    connectors = Connector.objects.bulk_create(
        Connector(slug=entry["id"], **_connector_fields(entry, position))
        for position, entry in enumerate(data["connectors"])
    )
    tools: list[RemoteTool] = []
    aliases: list[ToolAlias] = []
    for connector, entry in zip(connectors, data["connectors"], strict=True):
        for position, tool_entry in enumerate(entry["remoteTools"]):
            tool = RemoteTool(name=tool_entry["name"], **_tool_fields(tool_entry, connector, position))
            tools.append(tool)
            aliases += [ToolAlias(tool=tool, name=alias) for alias in tool_entry.get("aliases", [])]
    RemoteTool.objects.bulk_create(tools, batch_size=BULK_BATCH)
    ToolAlias.objects.bulk_create(aliases, batch_size=BULK_BATCH)


def service_map_rows() -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    client = DjangoClient()
    redis = get_redis()
    cached_keys: list[str] = []
    try:
        with transaction.atomic():
            for connectors in sorted(SIZES):
                _registry_replaced(synthetic_manifest(connectors, TOOLS_EACH))
                registry_changed()  # this size's map is cached afresh (the import bumps only on commit)
                uncached = timed(selectors.service_map_signed, _uncached_rounds(connectors * TOOLS_EACH))
                first = client.get("/v1/connectors/service-map")
                assert first.status_code == 200, first.content[:200]
                cached_keys.append(
                    selectors.SERVICE_MAP_CACHE_KEY.format(version=selectors.registry_version())
                )
                cached = timed(lambda: client.get("/v1/connectors/service-map"), 200)
                rows.append(
                    (
                        f"{connectors:,}",
                        f"{connectors * TOOLS_EACH:,}",
                        f"{len(first.content) / 1024:,.0f} KiB",
                        _p(uncached),
                        _p(cached),
                        ratio(percentile(uncached, 0.5), percentile(cached, 0.5)),
                    )
                )
            raise _Rollback
    except _Rollback:
        pass
    finally:
        if cached_keys:
            redis.delete(*cached_keys)
        registry_changed()  # every process drops what it cached of the rolled-back registries
    return rows


def _catalogue_grown(target: int) -> list[Connector]:
    """Synthetic connectors saved beside the real ones until ``GET /v1/tools`` lists ``target`` tools."""
    missing = target - len(selectors.tools_filtered())
    if missing <= 0:
        return []
    position = (Connector.objects.order_by("-position").values_list("position", flat=True).first() or 0) + 1
    manifest = synthetic_manifest(-(-missing // TOOLS_EACH), TOOLS_EACH)
    saved: list[Connector] = []
    with transaction.atomic():
        for index, entry in enumerate(manifest["connectors"]):
            connector = connector_save(
                data={
                    "slug": SYNTHETIC_PREFIX + entry["id"],
                    "name": entry["name"],
                    "version": entry["version"],
                    "transport": entry["transport"],
                    "endpoint": entry["endpoint"],
                    "auth_type": entry["auth"]["type"],
                    "scopes": entry["scopes"],
                    "ttl_seconds": entry["ttlSeconds"],
                    "enabled": entry["enabled"],
                    "metadata": entry["metadata"],
                    "position": position + index,
                }
            )
            saved.append(connector)
            for tool in entry["remoteTools"][: missing - index * TOOLS_EACH]:
                tool_save(
                    data={
                        "connector": connector,
                        "name": f"{SYNTHETIC_PREFIX}{tool['name']}",
                        "description": tool["description"],
                        "tags": tool["tags"],
                        "scopes": tool["scopes"],
                        "upstream_name": tool["upstreamName"],
                        "aliases": [f"{SYNTHETIC_PREFIX}{alias}" for alias in tool["aliases"]],
                    }
                )
    return saved


async def _tools_list_timed(url: str, raw_token: str, correlation_id: str) -> dict[str, Any]:
    counts: dict[str, int] = {}
    async with mcp_and_rest_clients(url, raw_token, correlation_id) as (mcp, rest):

        async def mcp_tools_list() -> None:
            result = await mcp.list_tools(cache_mode="bypass")
            counts["mcp"] = len(result.tools)

        async def rest_tools() -> None:
            response = await rest.get("/v1/tools")
            assert response.status_code == 200, response.text
            counts["rest"] = len(response.json())

        samples = await _timed([("mcp", mcp_tools_list), ("rest", rest_tools)])
    return {**samples, "counts": counts}


def tools_list_rows() -> tuple[list[tuple[object, ...]], dict[str, int]]:
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    default_data_load()  # make run's first-start catalogue, if absent (as bench.mcp)
    token, raw_token = api_token_create(name=f"bench-scale-{uuid.uuid4().hex[:8]}", scopes=["read"])
    correlation_id = f"bench-scale-catalogue-{uuid.uuid4().hex}"
    saved: list[Connector] = []
    try:
        saved = _catalogue_grown(LIST_TOOLS)
        with override_settings(CORTEX_TOKEN_REQUESTS_PER_MINUTE=0):
            server = _LiveServer().start()
            try:
                result = asyncio.run(_tools_list_timed(server.url, raw_token, correlation_id))
            finally:
                server.stop()
    finally:
        with transaction.atomic():
            for connector in saved:
                connector_delete(connector=connector)
        Event.objects.filter(correlation_id=correlation_id).delete()
        token.delete()
    mcp, rest = result["mcp"], result["rest"]
    ratios = [percentile(mcp, q) / percentile(rest, q) for q in (0.5, 0.95)]
    verdict = "met" if max(ratios) <= GOAL_RATIO else "not met"
    rows = [
        (
            f"{result['counts']['rest']:,} (MCP: {result['counts']['mcp']:,})",
            _p(mcp),
            _p(rest),
            f"{ratios[0]:.2f}× / {ratios[1]:.2f}×",
            f"≤ {GOAL_RATIO}×: {verdict}",
        )
    ]
    return rows, result["counts"]


def run() -> None:
    rows = service_map_rows()
    print_table(
        "scale: service map",
        (
            "connectors",
            "tools",
            "signed map",
            "generated uncached (p50 / p95)",
            "cached response",
            "uncached / cached (p50)",
        ),
        rows,
        f"`service_map_signed` (uncached: queries, JSON, signature; 30 calls a size, 10 above 2,000 tools) "
        f"and `GET /v1/connectors/service-map` from the cache (Django test client, 200 requests), on "
        f"synthetic registries of {TOOLS_EACH} tools a connector (`bench.connectors.synthetic_manifest`, "
        f"validated as a manifest, loaded in bulk in place of the registry) in a transaction that is "
        f"rolled back.",
    )
    list_rows, counts = tools_list_rows()
    print_table(
        "scale: tools/list",
        (
            "tools (GET /v1/tools)",
            "MCP tools/list (p50 / p95)",
            "GET /v1/tools",
            "MCP / REST (p50 / p95)",
            "goal",
        ),
        list_rows,
        f"`tools/list` over MCP (official SDK client, streamable HTTP, one session, no client cache) against "
        f"`GET /v1/tools` on one live uvicorn server, taking turns, {MCP_ROUNDS} rounds after 10 warm-up; "
        f"the catalogue brought to {counts['rest']:,} tools by synthetic connectors saved for the run and "
        f"deleted after (MCP lists CortexWeb's own tools first, and not the registry rows they mirror).",
    )
