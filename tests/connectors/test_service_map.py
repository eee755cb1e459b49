"""GET /v1/connectors/service-map: the seed's shape, signed (DESIGN §5.1), cached until changed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from apps.connectors import registry_watch, selectors
from apps.connectors.models import Connector, RemoteTool
from apps.connectors.services import REGISTRY_VERSION_KEY, manifest_import
from apps.core.redis import get_redis
from apps.core.signing import verify

# Copied from the shared contracts (../shared/contracts/), which a clone of this repository lacks.
VECTOR = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "contracts" / "service-map-signing-vector.json").read_text(
        "utf-8"
    )
)


def _get(client: Client | None = None, **headers):
    return (client or Client()).get("/v1/connectors/service-map", headers=headers)


def test_map_has_the_seed_shape_and_a_valid_signature(default_registry: dict, monkeypatch) -> None:
    monkeypatch.delenv("WIKIDATA_MCP_URL", raising=False)
    response = _get()
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    signature = body.pop("signature")
    assert verify(body, signature=signature, key=settings.CORTEX_SIGNING_KEY)
    assert response["ETag"] == f'"{signature}"'
    assert list(body) == ["id", "brand", "generatedAt", "ttlSeconds", "connectors"]
    assert len(body["id"]) == 26 and body["brand"] == "brAInwav" and body["ttlSeconds"] == 1800
    assert body["generatedAt"].endswith("Z")
    arxiv, perplexity, wikidata = body["connectors"]
    assert perplexity == {
        "id": "perplexity",
        "version": "1.0.0",
        "endpoint": "https://api.perplexity.ai/mcp",
        "auth": {"type": "bearer"},
        "scopes": ["search:web"],
        "ttlSeconds": 900,
        "enabled": False,
        "metadata": {"brand": "brAInwav"},
    }
    assert wikidata["endpoint"] == "https://wd-mcp.wmcloud.org/mcp/"
    assert wikidata["metadata"] == {
        "dumpDate": "2024-09-18",
        "source": "https://github.com/wmde/WikidataMCP",
        "brand": "brAInwav",
    }
    # The seed's tool fields and no others (input schemas are on /v1/tools and MCP tools/list).
    assert wikidata["remoteTools"][:4] == VECTOR["payload"]["connectors"][1]["remoteTools"]
    assert arxiv["remoteTools"] == [
        {
            "name": "arxiv.search",
            "description": (
                "brAInwav arXiv integration: search arXiv papers by query, with paging and sorting"
            ),
            "tags": ["academic", "papers", "search", "arxiv"],
            "scopes": ["literature"],
        }
    ]
    # Absent optional fields are omitted, never null.
    text = json.dumps(body)
    for internal in (
        "inputSchema",
        "upstreamName",
        "aliases",
        "get_entity_claims",
        "secretEnv",
        "PERPLEXITY_API_KEY",
        "null",
    ):
        assert internal not in text


def test_endpoint_variable_is_not_published(default_registry: dict, monkeypatch) -> None:
    """Calls go to WIKIDATA_MCP_URL; the map shows the stored endpoint (issue 23: nothing published
    comes from the environment)."""
    monkeypatch.setenv("WIKIDATA_MCP_URL", "http://127.0.0.1:8765/mcp/")
    wikidata = selectors.service_map_payload()["connectors"][2]
    assert wikidata["endpoint"] == "https://wd-mcp.wmcloud.org/mcp/"


def test_etag_revalidation_answers_304(default_registry: dict) -> None:
    first = _get()
    again = _get(**{"If-None-Match": first["ETag"]})
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == first["ETag"]
    assert _get(**{"If-None-Match": '"stale", ' + first["ETag"]}).status_code == 304
    assert _get(**{"If-None-Match": '"stale"'}).status_code == 200


def test_every_process_serves_the_same_cached_map(default_registry: dict) -> None:
    first = _get()
    selectors.process_caches_clear()  # as another process would, with only Redis in common
    second = _get()
    assert second.content == first.content


@pytest.mark.django_db(transaction=True)
def test_any_registry_change_invalidates_the_map_after_commit(default_manifest: dict) -> None:
    manifest_import(data=default_manifest)
    first = _get()
    tool = RemoteTool.objects.get(name="wikidata.sparql")
    tool.tags = [*tool.tags, "read-only"]
    tool.save()
    second = _get(**{"If-None-Match": first["ETag"]})
    assert second.status_code == 200
    assert second.json()["connectors"][2]["remoteTools"][3]["tags"] == [
        "sparql",
        "wikidata",
        "provenance",
        "read-only",
    ]

    Connector.objects.filter(slug="perplexity").get().delete()
    third = _get()
    assert [entry["id"] for entry in third.json()["connectors"]] == ["arxiv", "wikidata"]

    default_manifest["connectors"][0]["enabled"] = False
    manifest_import(data=default_manifest)
    assert _get().json()["connectors"][0]["enabled"] is False


def test_the_map_is_rebuilt_once_its_ttl_has_passed(default_registry: dict, settings, monkeypatch) -> None:
    first = selectors.service_map_cached()
    later = first.expires_at + 1
    monkeypatch.setattr(selectors.time, "time", lambda: later)
    # Redis expires its copy by itself at the same moment; here the clock is only moved for Python.
    get_redis().delete(selectors.SERVICE_MAP_CACHE_KEY.format(version=selectors.registry_version()))
    assert selectors.service_map_cached().etag != first.etag


def _wikidata_version() -> str:
    return _get().json()["connectors"][2]["version"]


def test_another_processs_change_reaches_this_process_by_message(
    default_registry: dict, redis_client
) -> None:
    assert _wikidata_version() == "2026.04.07"
    deadline = time.monotonic() + 2
    while registry_watch.watch.trusted_generation() is None:  # subscribing is asynchronous
        assert time.monotonic() < deadline, "the registry watch never subscribed"
        time.sleep(0.01)
    _get()  # cached under the subscribed generation: from now on served without Redis reads
    # Another process commits a change (no signal here), bumps the version and publishes it.
    Connector.objects.filter(slug="wikidata").update(version="2026.11.22")
    assert _wikidata_version() == "2026.04.07"  # not told yet: the cached map stands
    redis_client.publish(registry_watch.CHANNEL, redis_client.incr(REGISTRY_VERSION_KEY))
    deadline = time.monotonic() + 2
    while _wikidata_version() != "2026.11.22":
        assert time.monotonic() < deadline, "the change message never invalidated the cached map"
        time.sleep(0.01)


def test_without_the_subscription_every_request_checks_the_version(
    default_registry: dict, redis_client, monkeypatch
) -> None:
    _get()
    monkeypatch.setattr(registry_watch.watch, "subscribed", False)
    Connector.objects.filter(slug="wikidata").update(version="2026.11.23")
    redis_client.incr(REGISTRY_VERSION_KEY)  # no message: only the version read can notice
    assert _wikidata_version() == "2026.11.23"
