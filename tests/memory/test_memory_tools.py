"""Memory tools as complete as mem0's (issue 25, item 6): list (filters, pages), get, update (embedded
again, the old version kept), history, pin/unpin, forget one, forget all (only with confirm: true),
over REST and MCP; the semantic floor of ask, measured on tests/data/memory_relevance_pairs.jsonl;
and token isolation on every new route and tool over REST, MCP HTTP and MCP stdio.

Everything runs on the real embedding model, Postgres+pgvector and Redis.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from apps.core.models import ApiToken
from apps.embeddings.services import embed_text, embed_texts
from apps.mcp_server.services import Caller, mcp_tool_call
from apps.memory import services
from apps.memory.models import Memory, MemorySettings, MemoryVersion
from apps.memory.services import Scope, TellItem
from tests.mcp_server.conftest import http_session, stdio_session, text_of

JSON = "application/json"
PAIRS = Path(settings.BASE_DIR) / "tests" / "data" / "memory_relevance_pairs.jsonl"
ON_CALL = "The on-call rotation hands over every Monday at 09:00."
BLUEFIN = "Where is the Bluefin launch password kept?"


@pytest.fixture
def agent(make_token) -> tuple[ApiToken, Client]:
    token, raw = make_token("read", "write", name="tools-agent")
    return token, Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def tell(token: ApiToken, content: str, *, agent: str = "", **options: Any) -> str:
    scope = Scope(token=token, agent=agent)
    return services.memory_tell(scope=scope, items=[TellItem(content=content, **options)])[0]["id"]


def mcp(token: ApiToken, name: str, arguments: dict[str, Any]) -> Any:
    return mcp_tool_call(name=name, arguments=arguments, caller=Caller(transport="mcp-http", token=token))


def without_nulls(value: Any) -> Any:
    """A REST body as MCP's structured content shows it: null values left out."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def patch(client: Client, memory_id: str, body: Any) -> Any:
    return client.patch(f"/v1/memory/{memory_id}", json.dumps(body), content_type=JSON)


# --- The semantic floor ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_ask_does_not_answer_a_question_no_memory_is_about(agent) -> None:
    """The issue's case: recency lifted the on-call memory (similarity 0.14) over the 0.1 threshold."""
    token, client = agent
    on_call = tell(token, ON_CALL)
    body = client.post("/v1/memory/ask", {"question": BLUEFIN}, content_type=JSON).json()
    assert body["memories"] == []
    assert body["answer"] == {
        "method": "none",
        "text": "",
        "citations": [],
        "reason": "nothing relevant remembered",
    }
    assert (body["reason"], body["semanticFloor"]) == ("nothing relevant remembered", 0.26)
    nearest = body["nearest"]
    assert [(hit["id"], hit["content"], hit["belowFloor"]) for hit in nearest] == [(on_call, ON_CALL, True)]
    assert nearest[0]["scores"]["semantic"] == pytest.approx(0.136, abs=0.002)
    assert nearest[0]["relevance"] > 0.1  # what the threshold alone let through before
    # Not answered from, so not reinforced either.
    assert Memory.objects.get(id=on_call).access_count == 0
    # MCP says so first, before listing the nearest memory.
    over_mcp = mcp(token, "ask", {"question": BLUEFIN})
    assert over_mcp.structured["reason"] == "nothing relevant remembered"
    assert over_mcp.text.splitlines()[:2] == [
        "Nothing relevant remembered (no memory is about the question).",
        "Nearest memories, not answered from (1):",
    ]
    # Once a memory about the question is told, it is the answer, and the on-call one is left out.
    bluefin = tell(token, "The Bluefin launch password is kept in the ops vault under launch/bluefin.")
    answered = client.post("/v1/memory/ask", {"question": BLUEFIN}, content_type=JSON).json()
    assert [hit["id"] for hit in answered["memories"]] == [bluefin]
    assert (answered["reason"], answered["nearest"], answered["memories"][0]["belowFloor"]) == (
        None,
        [],
        False,
    )
    assert answered["answer"]["citations"][0]["memoryId"] == bluefin
    # The floor is the admin's setting, and a call may lower it.
    lowered = client.post("/v1/memory/ask", {"question": BLUEFIN, "semanticFloor": 0.1}, content_type=JSON)
    assert [hit["id"] for hit in lowered.json()["memories"]] == [bluefin, on_call]
    config = MemorySettings.current()
    config.semantic_floor = 0.95
    config.save()
    raised = client.post("/v1/memory/ask", {"question": BLUEFIN}, content_type=JSON).json()
    assert (raised["memories"], raised["semanticFloor"]) == ([], 0.95)


def _pairs() -> list[dict[str, Any]]:
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.django_db
def test_the_floor_measured_on_the_relevance_pairs() -> None:
    """The numbers docs/memory.md gives for the default floor (0.26) on the hand-written pairs."""
    pairs = _pairs()
    assert (len(pairs), sum(pair["relevant"] for pair in pairs)) == (70, 36)
    questions = embed_texts(texts=[pair["question"] for pair in pairs])
    memories = embed_texts(texts=[pair["memory"] for pair in pairs])
    similarities = (questions * memories).sum(axis=1)
    floor = MemorySettings.current().semantic_floor
    assert floor == 0.26
    kept = [bool(similarity >= floor) for similarity in similarities]
    confusion = {
        "tp": sum(k and p["relevant"] for k, p in zip(kept, pairs, strict=True)),
        "fp": sum(k and not p["relevant"] for k, p in zip(kept, pairs, strict=True)),
        "fn": sum(not k and p["relevant"] for k, p in zip(kept, pairs, strict=True)),
        "tn": sum(not k and not p["relevant"] for k, p in zip(kept, pairs, strict=True)),
    }
    assert confusion == {"tp": 36, "fp": 3, "fn": 0, "tn": 31}  # precision 0.923, recall 1.0
    # The margins the floor sits between: the least similar relevant pair, the most similar
    # unrelated one (the three kept irrelevant pairs are same-subject near misses, above both).
    relevant = [s for s, p in zip(similarities, pairs, strict=True) if p["relevant"]]
    assert min(relevant) == pytest.approx(0.276, abs=0.002)
    below = [s for s, p in zip(similarities, pairs, strict=True) if not p["relevant"] and s < floor]
    assert max(below) == pytest.approx(0.243, abs=0.002)


# --- List ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_list_filters_and_pages(agent, make_token) -> None:
    token, client = agent
    old = tell(token, "The old VPN endpoint was vpn1.example.org.", domain="infra")
    Memory.objects.filter(id=old).update(created_at=timezone.now() - timedelta(days=10))
    pinned = tell(
        token, "Pinned: the fire assembly point is the north car park.", domain="office", pinned=True
    )
    long_term = tell(token, "Carol is the data protection officer.", domain="people", type="long_term")
    planner = tell(token, "Planner: the release freeze starts on Friday.", agent="planner")
    superseded = tell(token, "The VPN endpoint is vpn2.example.org.", domain="infra")
    newer = services.memory_tell(
        scope=Scope(token=token),
        items=[
            TellItem(
                content="The VPN endpoint moved to vpn3.example.org.",
                domain="infra",
                supersedes=uuid.UUID(superseded),
            )
        ],
    )[0]["id"]
    other, _ = make_token("read", "write", name="someone-else")
    tell(other, "Someone else's VPN endpoint is secret.example.org.", domain="infra")

    def listed(query: str = "") -> dict[str, Any]:
        answer = client.get(f"/v1/memory{query}")
        assert answer.status_code == 200, answer.content
        return answer.json()

    def ids(query: str = "") -> list[str]:
        return [memory["id"] for memory in listed(query)["memories"]]

    # Newest first; superseded memories only when asked; never another token's.
    assert ids() == [newer, planner, long_term, pinned, old]
    assert ids("?includeSuperseded=true") == [newer, superseded, planner, long_term, pinned, old]
    assert ids("?domain=infra") == [newer, old]
    assert ids("?type=long_term") == [long_term]
    assert ids("?pinned=true") == [pinned]
    assert ids("?pinned=false") == [newer, planner, long_term, old]
    assert ids("?text=vpn") == [newer, old]
    assert ids("?agent=planner") == [planner]
    since = (timezone.now() - timedelta(days=1)).isoformat()
    assert ids(f"?createdBefore={since.replace('+', '%2B')}") == [old]
    assert ids(f"?createdAfter={since.replace('+', '%2B')}") == [newer, planner, long_term, pinned]
    first = listed("?limit=2")
    assert (first["total"], first["offset"], first["nextOffset"]) == (5, 0, 2)
    assert [m["id"] for m in first["memories"]] == [newer, planner]
    last = listed("?limit=2&offset=4")
    assert ([m["id"] for m in last["memories"]], last["nextOffset"]) == ([old], None)
    assert listed("?limit=2")["memories"][0]["content"] == "The VPN endpoint moved to vpn3.example.org."
    # MCP takes the same filters as JSON.
    over_mcp = mcp(token, "memory.list", {"domain": "infra", "includeSuperseded": True, "limit": 2})
    assert [m["id"] for m in over_mcp.structured["memories"]] == [newer, superseded]
    assert over_mcp.text.splitlines()[0] == "3 memories; 2 from offset 0 (next page: offset 2)."


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?limit=0", "limit"),
        ("?limit=101", "limit"),
        ("?offset=-1", "offset"),
        ("?pinned=yes", "pinned"),
        ("?type=forever", "type"),
        ("?domain=Not%20A%20Domain", "domain"),
        ("?createdAfter=1700000000", "createdAfter"),
        ("?createdAfter=2026-01-01", "createdAfter"),
        ("?createdBefore=0001-01-01T00:00:00%2B05:00", "createdBefore"),  # year 0 in UTC
        ("?text=a%00b", "text"),
    ],
)
def test_list_refuses_bad_filters(agent, query: str, field: str) -> None:
    _, client = agent
    answer = client.get(f"/v1/memory{query}")
    assert answer.status_code == 422, answer.content
    assert field in json.dumps(answer.json()["error"])


@pytest.mark.django_db
def test_list_refuses_a_date_range_that_ends_before_it_starts(agent) -> None:
    _, client = agent
    answer = client.get("/v1/memory?createdAfter=2026-02-01T00:00:00Z&createdBefore=2026-01-01T00:00:00Z")
    assert answer.status_code == 422
    assert answer.json()["error"]["message"] == "createdAfter must be earlier than createdBefore."
    # An offset ISO 8601 allows and Postgres does not (past ±15:59) is read in UTC: no 500.
    assert client.get("/v1/memory?createdBefore=0149-01-22T23%3A35%3A25.7-17%3A25").json()["total"] == 0


# --- Update and history --------------------------------------------------------------------------


@pytest.mark.django_db
def test_update_embeds_again_and_keeps_the_old_version(agent) -> None:
    token, client = agent
    memory_id = tell(
        token, "The staging database runs Postgres 15.", domain="infra", metadata={"source": "wiki"}
    )
    told_at = Memory.objects.get(id=memory_id).created_at
    answer = patch(
        client, memory_id, {"content": "The staging database runs Postgres 16.", "importance": 0.9}
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["id"], body["content"], body["version"], body["changed"]) == (
        memory_id,
        "The staging database runs Postgres 16.",
        2,
        ["content", "importance"],
    )
    stored = Memory.objects.get(id=memory_id)
    np.testing.assert_allclose(
        np.asarray(stored.embedding), embed_text(text="The staging database runs Postgres 16."), atol=1e-6
    )
    assert (stored.importance, stored.metadata, stored.domain) == (0.9, {"source": "wiki"}, "infra")
    # Domain and metadata over MCP: a version more, the metadata replaced whole, the domain cleared.
    over_mcp = mcp(
        token, "memory.update", {"id": memory_id, "metadata": {"source": "runbook"}, "domain": None}
    )
    assert over_mcp.is_error is False, over_mcp.text
    assert (over_mcp.structured["version"], over_mcp.structured["changed"]) == (3, ["metadata", "domain"])
    assert "domain" not in over_mcp.structured  # MCP leaves null values out
    # The stored values again: nothing changes, no version.
    same = patch(client, memory_id, {"importance": 0.9}).json()
    assert (same["version"], same["changed"]) == (2 + 1, [])
    history = client.get(f"/v1/memory/{memory_id}/history").json()
    assert history["id"] == memory_id and history["version"] == 3
    assert [
        (v["version"], v["content"], v["domain"], v["metadata"], v["importance"], v["current"])
        for v in history["versions"]
    ] == [
        (1, "The staging database runs Postgres 15.", "infra", {"source": "wiki"}, 0.5, False),
        (2, "The staging database runs Postgres 16.", "infra", {"source": "wiki"}, 0.9, False),
        (3, "The staging database runs Postgres 16.", None, {"source": "runbook"}, 0.9, True),
    ]
    versions = history["versions"]
    assert versions[0]["validFrom"] == told_at.isoformat()
    assert versions[0]["validUntil"] == versions[1]["validFrom"]
    assert versions[1]["validUntil"] == versions[2]["validFrom"] and versions[2]["validUntil"] is None
    assert mcp(token, "memory.history", {"id": memory_id}).structured == without_nulls(history)
    assert mcp(token, "memory.get", {"id": memory_id}).structured == without_nulls(
        client.get(f"/v1/memory/{memory_id}").json()
    )
    # Forgetting the memory forgets what it used to say too.
    assert client.delete(f"/v1/memory/{memory_id}").status_code == 200
    assert not MemoryVersion.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({}, 422, "Send at least one of content, metadata, importance and domain to update."),
        ({"content": ""}, 422, None),
        ({"content": "   "}, 422, "content must hold some text."),
        ({"content": None}, 422, "content must hold some text."),
        ({"content": "x" * 8001}, 422, None),
        ({"content": "nul \u0000 byte"}, 422, None),
        ({"importance": 1.5}, 422, None),
        ({"importance": None}, 422, "importance must be 0 to 1."),
        ({"metadata": None}, 422, "metadata must be a JSON object."),
        ({"metadata": {"blob": "x" * 20_000}}, 422, "metadata must be at most 16384 bytes as JSON."),
        ({"domain": "Not A Domain"}, 422, None),
        ({"pinned": True}, 422, None),
    ],
)
def test_update_refuses_bad_input_and_changes_nothing(
    agent, body: dict, status: int, message: str | None
) -> None:
    token, client = agent
    memory_id = tell(token, "Heidi's desk is by the window.", domain="people")
    answer = patch(client, memory_id, body)
    assert answer.status_code == status, answer.content
    if message:
        assert answer.json()["error"]["message"] == message
    stored = Memory.objects.get(id=memory_id)
    assert (stored.content, stored.version, stored.domain) == ("Heidi's desk is by the window.", 1, "people")
    assert not MemoryVersion.objects.exists()


@pytest.mark.django_db
def test_a_shared_memory_keeps_its_domain(agent) -> None:
    token, client = agent
    memory_id = tell(token, "The cafeteria closes at 15:00.", domain="office")
    services.memories_share(ids=[uuid.UUID(memory_id)], shared=True)
    refused = patch(client, memory_id, {"domain": None})
    assert refused.status_code == 409
    assert Memory.objects.get(id=memory_id).domain == "office"


# --- Pin, forget all -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_pin_and_unpin_over_rest_and_mcp(agent) -> None:
    token, client = agent
    memory_id = tell(token, "Ivan's parking spot is B12.", ttl_seconds=3600)
    pinned = mcp(token, "memory.pin", {"id": memory_id})
    assert (pinned.is_error, pinned.structured["pinned"]) == (False, True)
    assert Memory.objects.get(id=memory_id).pinned is True
    unpinned = client.post(f"/v1/memory/{memory_id}/pin", {"pinned": False}, content_type=JSON).json()
    assert unpinned["pinned"] is False and Memory.objects.get(id=memory_id).pinned is False
    assert mcp(token, "memory.pin", {"id": memory_id, "pinned": False}).structured["pinned"] is False


@pytest.mark.django_db
def test_forget_all_needs_confirm_true_and_removes_only_the_callers_memories(agent, make_token) -> None:
    token, client = agent
    for index in range(3):
        tell(token, f"Meeting room {index} seats {index + 4} people.", domain="office")
    planner = tell(token, "Planner: quarterly goals are due on the 15th.", agent="planner")
    updated = tell(token, "Judy's extension is 301.")
    services.memory_update(
        scope=Scope(token=token),
        memory_id=uuid.UUID(updated),
        changes={"content": "Judy's extension is 302."},
    )
    other, _ = make_token("read", "write", name="bystander")
    kept = tell(other, "The bystander's own memory stays.")
    for refused_body in ({}, {"confirm": False}):
        refused = client.post("/v1/memory/forget-all", refused_body, content_type=JSON)
        assert refused.status_code == 422
        assert refused.json()["error"] == {
            "code": "validation_error",
            "message": "Forgetting all memories cannot be undone: send confirm: true to remove every "
            "memory of this token.",
            "details": {"field": "confirm", "expected": True},
        }
    assert client.post("/v1/memory/forget-all", {"confirm": "yes"}, content_type=JSON).status_code == 422
    assert mcp(token, "memory.forget_all", {}).is_error is True
    assert Memory.objects.filter(token=token).count() == 5
    # Narrowed to an agent, then everything.
    in_planner = mcp(token, "memory.forget_all", {"confirm": True, "agent": "planner"})
    assert in_planner.structured == {"forgotten": 1, "agent": "planner"}
    assert not Memory.objects.filter(id=planner).exists()
    everything = client.post("/v1/memory/forget-all", {"confirm": True}, content_type=JSON).json()
    assert everything == {"forgotten": 4, "agent": None, "session": None, "domain": None}
    assert not Memory.objects.filter(token=token).exists() and not MemoryVersion.objects.exists()
    assert list(Memory.objects.values_list("id", flat=True)) == [uuid.UUID(kept)]


# --- Isolation over MCP HTTP and stdio -----------------------------------------------------------


async def _reach_for(client: Any, secret: str) -> dict[str, Any]:
    """Token B's client tries every memory tool on token A's memory."""
    calls = {
        "memory.get": {"id": secret},
        "memory.update": {"id": secret, "content": "Overwritten by B."},
        "memory.history": {"id": secret},
        "memory.pin": {"id": secret, "pinned": True},
        "memory.forget": {"id": secret, "mode": "remove"},
    }
    results = {name: await client.call_tool(name, arguments) for name, arguments in calls.items()}
    results["unknown"] = await client.call_tool("memory.get", {"id": str(uuid.UUID(int=7))})
    results["memory.list"] = await client.call_tool("memory.list", {"text": "heliotrope"})
    results["ask"] = await client.call_tool("ask", {"question": "What is the launch code word?"})
    results["memory.forget_all"] = await client.call_tool("memory.forget_all", {"confirm": True})
    return results


def _assert_unreachable(results: dict[str, Any], secret: str, own_count: int) -> None:
    unknown = text_of(results["unknown"]).replace(str(uuid.UUID(int=7)), "ID")
    assert unknown.startswith("not_found: No memory ID among this token's memories.")
    for name in ("memory.get", "memory.update", "memory.history", "memory.pin", "memory.forget"):
        result = results[name]
        # Exactly what an id that does not exist gets: existence does not leak.
        assert result.is_error is True, name
        assert text_of(result).replace(secret, "ID") == unknown, name
    assert results["memory.list"].structured_content["memories"] == []
    assert secret not in json.dumps(results["ask"].structured_content)
    assert results["memory.forget_all"].structured_content["forgotten"] == own_count
    memory = Memory.objects.get(id=secret)
    assert (memory.content, memory.version, memory.pinned) == (
        "A's launch code word is heliotrope.",
        1,
        False,
    )
    assert not MemoryVersion.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_another_tokens_memory_is_unreachable_over_mcp_http(cortex_server, make_token) -> None:
    token_a, _ = make_token("read", "write", name="owner-http")
    token_b, raw_b = make_token("read", "write", name="intruder-http")
    secret = tell(token_a, "A's launch code word is heliotrope.")
    tell(token_b, "B's lunch plan.")

    async def go() -> dict[str, Any]:
        async with http_session(cortex_server.mcp_url, raw_b) as client:
            return await _reach_for(client, secret)

    _assert_unreachable(asyncio.run(go()), secret, own_count=1)


@pytest.mark.django_db(transaction=True)
def test_another_tokens_memory_is_unreachable_over_mcp_stdio(make_token) -> None:
    token_a, _ = make_token("read", "write", name="owner-stdio")
    token_b, raw_b = make_token("read", "write", name="intruder-stdio")
    secret = tell(token_a, "A's launch code word is heliotrope.")
    tell(token_b, "B's lunch plan.")
    tell(token_b, "B's dinner plan.")

    async def go() -> dict[str, Any]:
        async with stdio_session(raw_b) as client:
            return await _reach_for(client, secret)

    _assert_unreachable(asyncio.run(go()), secret, own_count=2)


@pytest.mark.django_db
def test_the_admin_shows_versions_and_the_semantic_floor(agent, admin_client) -> None:
    token, client = agent
    memory_id = tell(token, "Karl's office is room 12.")
    patch(client, memory_id, {"content": "Karl's office is room 14."})
    page = admin_client.get(f"/admin/memory/memory/{memory_id}/change/").content.decode()
    assert "Karl&#x27;s office is room 12." in page  # the version the update replaced
    config = MemorySettings.current()
    settings_page = admin_client.get(f"/admin/memory/memorysettings/{config.pk}/change/").content.decode()
    assert 'name="semantic_floor" value="0.26"' in settings_page
