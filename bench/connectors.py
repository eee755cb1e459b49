"""Connector registry figures (issue targets on the 2-core machine in brackets):

- service map generated uncached for 100 connectors x 20 tools   [< 50 ms]
- the cached service-map response vs a trivial JSON endpoint      [within 2x]
- manifest validation, per connector of 20 tools                  [< 1 ms]
- planning a fact query over that registry                        [< 5 ms]

The synthetic registry lives in a transaction that is rolled back, and the
registry version is bumped at the end, so the real catalogue and its cached
map are untouched.
"""

from __future__ import annotations

from django.db import transaction
from django.test import Client

from apps.connectors import manifest as manifest_format
from apps.connectors import selectors
from apps.connectors.planner import plan_create
from apps.connectors.services import manifest_import, registry_changed
from bench import timed

CONNECTORS, TOOLS = 100, 20


def synthetic_manifest(connectors_count: int = CONNECTORS, tools_count: int = TOOLS) -> dict:
    """A valid manifest of ``connectors_count`` connectors of ``tools_count`` tools each (bench.scale too)."""
    connectors = []
    for c in range(connectors_count):
        tools = [
            {
                "name": f"c{c:03d}.tool_{t:02d}",
                "description": f"Tool {t} of connector {c}",
                "tags": ["vector", "bench"]
                if t == 0
                else ["claims", "bench"]
                if t == 1
                else ["bench", f"t{t}"],
                "scopes": ["facts"] if t == 0 else [],
                "upstreamName": f"tool_{t:02d}",
                "aliases": [f"c{c:03d}_old_tool_{t:02d}"],
            }
            for t in range(tools_count)
        ]
        connectors.append(
            {
                "id": f"bench-{c:03d}",
                "name": f"Bench connector {c}",
                "version": "1.0.0",
                "transport": "mcp",
                "endpoint": f"https://bench-{c:03d}.example.org/mcp/",
                "auth": {"type": "none"},
                "scopes": ["bench:read"],
                "ttlSeconds": 1800,
                "enabled": True,
                "metadata": {"index": c},
                "remoteTools": tools,
            }
        )
    return {"connectors": connectors}


class _Rollback(Exception):
    pass


def run(report) -> None:
    manifest = synthetic_manifest()
    samples = timed(lambda: manifest_format.validate_manifest(manifest), 20)
    report("connectors.validate_per_connector", [sample / CONNECTORS for sample in samples])
    client = Client()
    try:
        with transaction.atomic():
            manifest_import(data=manifest, actor="bench")
            report("connectors.service_map_uncached", timed(selectors.service_map_signed, 30))
            client.get("/v1/connectors/service-map")
            client.get("/healthz")
            report(
                "connectors.service_map_cached_response",
                timed(lambda: client.get("/v1/connectors/service-map"), 300),
            )
            report("connectors.trivial_json_response(healthz)", timed(lambda: client.get("/healthz"), 300))
            report(
                "connectors.plan_fact_query", timed(lambda: plan_create(intent="fact_query", query="q"), 100)
            )
            raise _Rollback
    except _Rollback:
        pass
    finally:
        registry_changed()  # drop any map cached from the rolled-back registry
