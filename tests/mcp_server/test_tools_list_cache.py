"""``tools/list`` is built once per registry version per process (issue 27: the MCP/REST ratio at 1,000
catalogue tools), and never serves what the registry no longer holds."""

from __future__ import annotations

import asyncio
import copy

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from redis.exceptions import ConnectionError as RedisConnectionError

from apps.connectors import selectors
from apps.connectors.models import RemoteTool
from apps.connectors.services import manifest_import, registry_changed, tool_save
from apps.mcp_server.services import mcp_tools_list
from tests.mcp_server.conftest import DEFAULT_MANIFEST, http_session

NEW_TOOL = {
    "connector": "wikidata",
    "name": "wikidata.bench_lookup",
    "description": "Look an item up (a tool added after the first listing).",
    "tags": ["wikidata"],
}


@pytest.fixture
def committed_registry(transactional_db: None) -> None:
    """The default manifest, committed: outside a transaction the listing may be kept."""
    manifest_import(data=copy.deepcopy(DEFAULT_MANIFEST), actor="tests")
    registry_changed()


def _names(tools: list[dict]) -> list[str]:
    return [tool["name"] for tool in tools]


def test_a_second_listing_of_the_same_registry_version_reads_no_row(committed_registry) -> None:
    first = mcp_tools_list()
    with CaptureQueriesContext(connection) as queries:
        second = mcp_tools_list()
    assert second == first
    assert len(queries) == 0
    assert "wikidata.get_claims" in _names(second) and "knowledge.search" in _names(second)


def test_a_committed_registry_change_is_listed_at_once(committed_registry) -> None:
    before = mcp_tools_list()
    assert "wikidata.bench_lookup" not in _names(before)
    tool_save(data=NEW_TOOL)  # its own transaction: the version moves on commit
    after = mcp_tools_list()
    assert _names(after) == [*_names(before), "wikidata.bench_lookup"]
    assert {tool["name"]: tool for tool in after}["wikidata.bench_lookup"]["description"] == (
        NEW_TOOL["description"]
    )
    RemoteTool.objects.filter(name="wikidata.bench_lookup").delete()
    assert _names(mcp_tools_list()) == _names(before)


def test_inside_a_transaction_the_listing_is_read_afresh_and_not_kept(committed_registry) -> None:
    before = mcp_tools_list()
    with transaction.atomic():
        tool_save(data=NEW_TOOL)
        # Not committed: the version has not moved, yet this thread sees its own change.
        assert "wikidata.bench_lookup" in _names(mcp_tools_list())
        transaction.set_rollback(True)
    assert mcp_tools_list() == before


def test_a_feature_flag_turned_off_drops_its_tools_from_the_kept_listing(
    committed_registry, settings
) -> None:
    assert "arxiv.search" in _names(mcp_tools_list())
    settings.FEATURE_ARXIV = False  # part of the registry version: no registry write needed
    names = _names(mcp_tools_list())
    assert "arxiv.search" not in names and "arxiv.lookup" not in names


def test_without_redis_the_listing_is_built_each_time(committed_registry, monkeypatch) -> None:
    expected = mcp_tools_list()

    def redis_down() -> str:
        raise RedisConnectionError("Connection refused")

    monkeypatch.setattr(selectors, "registry_version", redis_down)
    with CaptureQueriesContext(connection) as queries:
        assert mcp_tools_list() == expected
    assert len(queries) > 0


def test_the_sdk_client_reads_exactly_the_listing(cortex_server, committed_registry) -> None:
    """The handler hands the SDK the wire dicts (no ``types.Tool`` round trip): what the client
    reads, dumped as the wire has it, is the listing itself."""

    async def go() -> list[dict]:
        async with http_session(cortex_server.mcp_url) as client:
            result = await client.list_tools()
            return [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in result.tools]

    assert asyncio.run(go()) == mcp_tools_list()
