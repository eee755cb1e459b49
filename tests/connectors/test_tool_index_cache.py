"""The planner's tool index is kept once per registry version per process
(``selectors.per_registry_version``), like MCP ``tools/list``: read afresh, and not kept, inside a
transaction (which may hold registry changes not yet committed) and while Redis is down (planning
keeps working through the outage)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from apps.connectors.models import Connector
from apps.connectors.planner import plan_create
from apps.connectors.services import manifest_import, registry_changed, tool_save
from apps.core.redis import get_redis

# Ties with arxiv.search on every tag the literature search asks for; the name decides, so once
# this tool is in the index the plan names it.
ABSTRACTS = {"name": "arxiv.abstracts", "tags": ["academic", "papers", "search"]}


@pytest.fixture
def committed_registry(transactional_db: None, default_manifest: dict) -> None:
    """The default manifest, committed: outside a transaction the index may be kept."""
    manifest_import(data=default_manifest, actor="tests")
    registry_changed()


@pytest.fixture
def redis_refusing() -> Iterator[None]:
    """Every Redis client built from settings is refused: a port bound here and never listened on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as unused:
        unused.bind(("127.0.0.1", 0))
        get_redis.cache_clear()
        try:
            with override_settings(REDIS_URL=f"redis://127.0.0.1:{unused.getsockname()[1]}/0"):
                yield
        finally:
            get_redis.cache_clear()  # the next call builds a client from the restored settings


def _literature_tool() -> str:
    return plan_create(intent="literature_search", query="attention")["steps"][0]["tool"]


def test_a_second_plan_of_the_same_registry_version_reads_no_row(committed_registry) -> None:
    first = plan_create(intent="fact_query", query="x")
    with CaptureQueriesContext(connection) as queries:
        second = plan_create(intent="fact_query", query="x")
    assert second == first
    assert len(queries) == 0


def test_a_committed_tool_is_planned_at_once(committed_registry) -> None:
    assert _literature_tool() == "arxiv.search"
    tool_save(data={**ABSTRACTS, "connector": Connector.objects.get(slug="arxiv")})
    assert _literature_tool() == "arxiv.abstracts"


def test_inside_a_transaction_the_plan_sees_its_own_uncommitted_tool(committed_registry) -> None:
    assert _literature_tool() == "arxiv.search"  # the index of this version is kept now
    with transaction.atomic():
        tool_save(data={**ABSTRACTS, "connector": Connector.objects.get(slug="arxiv")})
        assert _literature_tool() == "arxiv.abstracts"
        transaction.set_rollback(True)
    assert _literature_tool() == "arxiv.search"


def test_a_rolled_back_tool_is_never_planned_after_the_transaction(committed_registry) -> None:
    with transaction.atomic():
        tool_save(data={**ABSTRACTS, "connector": Connector.objects.get(slug="arxiv")})
        assert _literature_tool() == "arxiv.abstracts"  # the first index read of this version
        transaction.set_rollback(True)
    assert _literature_tool() == "arxiv.search"


def test_without_redis_planning_reads_the_registry_each_time(committed_registry, redis_refusing) -> None:
    with CaptureQueriesContext(connection) as queries:
        steps = plan_create(intent="fact_query", query="x")["steps"]
    assert [step["tool"] for step in steps] == [
        "wikidata.vector_search_items",
        "wikidata.get_claims",
        "wikidata.sparql",
    ]
    assert len(queries) == 1  # the published tools, read afresh: nothing is kept without a version
