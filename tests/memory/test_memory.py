"""Memory (issue #13): scoring with exact values, tell (chunks, near-duplicates, supersession), the
lifecycle, isolation between tokens on every surface, token rotation, bad input, and the answer.

Everything runs on the real model, Postgres+pgvector and Redis; only the LLM is a local server.
"""

from __future__ import annotations

import json
import math
import re
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from apps.core.models import ApiToken
from apps.core.services import api_token_rotate
from apps.mcp_server.services import Caller, mcp_tool_call
from apps.memory import services
from apps.memory.models import Memory, MemoryAccess, MemorySettings, MemoryType
from apps.memory.selectors import COMPONENTS, relevance_components
from apps.memory.services import Scope, TellItem

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def agent_a(make_token) -> tuple[ApiToken, Client]:
    token, raw = make_token("read", "write", name="agent-a")
    return token, Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


@pytest.fixture
def agent_b(make_token) -> tuple[ApiToken, Client]:
    token, raw = make_token("read", "write", name="agent-b")
    return token, Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def tell(token: ApiToken, content: str, **options: Any) -> dict[str, Any]:
    return services.memory_tell(scope=Scope(token=token), items=[TellItem(content=content, **options)])[0]


def post(client: Client, path: str, body: Any) -> Any:
    return client.post(path, json.dumps(body), content_type=JSON)


# --- Scoring -------------------------------------------------------------------------------------


def test_the_four_components_have_their_exact_values() -> None:
    config = MemorySettings.current()
    now = timezone.now()
    memory = Memory(
        created_at=now - timedelta(days=2),
        decay_factor=0.8,
        access_count=9,
        importance=0.5,
        domain="infra",
        concepts=["staging database", "postgres", "frankfurt"],
    )
    exact = relevance_components(
        memory=memory, similarity=0.62, question_concepts=["postgres"], domain="infra", config=config, now=now
    )
    assert exact == pytest.approx(
        {
            "domain": 1.0,
            "temporal": 0.8 * math.exp(-0.1 * 2),
            "semantic": 0.62,
            "frequency": math.log1p(9) / math.log1p(100) * 0.5,
        }
    )
    # Another domain: the share of the question's concepts the memory has (1 of 2).
    overlap = relevance_components(
        memory=memory,
        similarity=-0.2,
        question_concepts=["postgres", "berlin"],
        domain="travel",
        config=config,
        now=now,
    )
    assert overlap["domain"] == 0.5
    assert overlap["semantic"] == 0.0  # a negative cosine counts nothing
    memory.access_count = 5000
    assert relevance_components(
        memory=memory, similarity=0.5, question_concepts=[], domain=None, config=config, now=now
    )["frequency"] == pytest.approx(0.5)  # saturated at 1, times importance


def test_relevance_is_the_weighted_sum_and_admin_weights_take_effect(agent_a) -> None:
    token, client = agent_a
    told = tell(token, "The staging database runs on Postgres 16 in Frankfurt.", domain="infra")
    body = post(client, "/v1/memory/ask", {"question": "Where does the staging database run?"}).json()
    hit = body["memories"][0]
    assert hit["id"] == told["id"]
    assert body["weights"] == {"domain": 0.35, "temporal": 0.2, "semantic": 0.3, "frequency": 0.15}
    expected = sum(body["weights"][name] * hit["scores"][name] for name in body["weights"])
    assert hit["relevance"] == pytest.approx(expected, abs=1e-5)

    config = MemorySettings.current()
    config.weight_domain, config.weight_temporal, config.weight_semantic, config.weight_frequency = 0, 0, 1, 0
    config.save()
    again = post(client, "/v1/memory/ask", {"question": "Where does the staging database run?"}).json()
    assert again["weights"]["semantic"] == 1
    assert again["memories"][0]["relevance"] == pytest.approx(
        again["memories"][0]["scores"]["semantic"], abs=1e-5
    )


def test_weights_per_call_threshold_and_limit(agent_a) -> None:
    token, client = agent_a
    for index in range(6):
        tell(
            token,
            f"Server rack {index} sits in room {100 + index} of the Lisbon data centre.",
            domain="infra",
        )
    tell(token, "Bob's favourite colour is green.", domain="people")
    weights = {"domain": 0.0, "temporal": 0.0, "semantic": 1.0, "frequency": 0.0}
    limited = post(client, "/v1/memory/ask", {"question": "Which room holds server rack 3?", "limit": 2})
    assert len(limited.json()["memories"]) == 2
    strict = post(
        client,
        "/v1/memory/ask",
        {"question": "Which room holds server rack 3?", "threshold": 0.5, "weights": weights},
    ).json()
    assert strict["memories"], "the racks are similar enough"
    assert all(hit["relevance"] >= 0.5 for hit in strict["memories"])
    assert "green" not in json.dumps(strict["memories"])


# --- Tell ----------------------------------------------------------------------------------------


def test_a_near_duplicate_reinforces_instead_of_adding_a_copy(agent_a) -> None:
    _token, client = agent_a
    first = post(
        client, "/v1/memory/tell", {"content": "Alice's flight to Oslo leaves at 07:40.", "domain": "travel"}
    )
    Memory.objects.filter(id=first.json()["id"]).update(decay_factor=0.5)
    second = post(
        client, "/v1/memory/tell", {"content": "Alice's flight to Oslo leaves at 07:40", "domain": "travel"}
    )
    assert second.json()["status"] == "reinforced"
    assert second.json()["id"] == first.json()["id"]
    memory = Memory.objects.get()
    assert (memory.access_count, memory.decay_factor) == (1, pytest.approx(0.55))
    # Another domain is another memory.
    third = post(
        client, "/v1/memory/tell", {"content": "Alice's flight to Oslo leaves at 07:40.", "domain": "work"}
    )
    assert third.json()["status"] == "stored"
    assert Memory.objects.count() == 2


def test_a_batch_stores_once_what_it_holds_twice(agent_a) -> None:
    _token, client = agent_a
    items = [
        {"content": "The release freeze starts on Friday."},
        {"content": "Carol owns the billing service."},
        {"content": "The release freeze starts on Friday."},
    ]
    answer = post(client, "/v1/memory/tell/batch", {"items": items, "agent": "planner"})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["stored"], body["reinforced"]) == (2, 1)
    assert body["items"][2]["id"] == body["items"][0]["id"]
    assert Memory.objects.filter(agent="planner").count() == 2
    assert Memory.objects.get(id=body["items"][0]["id"]).access_count == 1


def test_content_over_8000_characters_is_chunked_at_sentence_boundaries(agent_a) -> None:
    token, _ = agent_a
    sentences = [
        f"Sentence number {index} is about topic {index % 7} of the long report." for index in range(400)
    ]
    result = tell(token, " ".join(sentences), domain="reports")
    assert len(result["chunks"]) > 1
    rows = list(Memory.objects.order_by("chunk_index"))
    assert len(rows) == len(result["chunks"])
    assert len({row.chunk_group for row in rows}) == 1 and rows[0].chunk_group is not None
    assert all(len(row.content) <= 8000 for row in rows)
    assert all(row.content.endswith("report.") for row in rows)  # cut between sentences
    assert " ".join(row.content for row in rows) == " ".join(sentences)


def test_supersession_closes_the_old_memory_and_keeps_the_chain(agent_a) -> None:
    token, client = agent_a
    old = tell(token, "The on-call phone number is +351 210 000 111.", domain="ops")
    new = post(
        client,
        "/v1/memory/tell",
        {
            "content": "The on-call phone number changed to +351 210 999 222.",
            "domain": "ops",
            "supersedes": old["id"],
        },
    ).json()
    assert new["supersedes"] == old["id"]
    closed = Memory.objects.get(id=old["id"])
    assert closed.valid_until is not None and str(closed.superseded_by_id) == new["id"]
    question = {"question": "What is the on-call phone number?", "domain": "ops"}
    assert [hit["id"] for hit in post(client, "/v1/memory/ask", question).json()["memories"]] == [new["id"]]
    with_history = post(client, "/v1/memory/ask", {**question, "includeSuperseded": True}).json()
    assert {hit["id"] for hit in with_history["memories"]} == {old["id"], new["id"]}
    assert client.get(f"/v1/memory/{new['id']}").json()["chain"] == [old["id"], new["id"]]
    again = post(
        client, "/v1/memory/tell", {"content": "It is +351 210 555 333 now.", "supersedes": old["id"]}
    )
    assert again.status_code == 409
    assert new["id"] in again.json()["error"]["message"]


# --- Lifecycle ----------------------------------------------------------------------------------


def test_decay_is_once_per_cycle_with_a_floor_and_spares_what_was_retrieved(agent_a) -> None:
    token, _ = agent_a
    idle = Memory.objects.get(id=tell(token, "Idle memory about tulips.")["id"])
    used = Memory.objects.get(id=tell(token, "Used memory about the VPN gateway.")["id"])
    floor = Memory.objects.get(id=tell(token, "Nearly forgotten memory about kites.")["id"])
    Memory.objects.filter(pk=floor.pk).update(decay_factor=0.0011)
    now = timezone.now()
    Memory.objects.filter(pk=used.pk).update(last_accessed_at=now - timedelta(seconds=10))

    assert services.memory_lifecycle(now=now)["decayed"] == 2
    services.memory_lifecycle(now=now + timedelta(hours=1))  # the next hourly run, same cycle: nothing more
    idle.refresh_from_db(), used.refresh_from_db(), floor.refresh_from_db()
    assert (idle.decay_factor, used.decay_factor, floor.decay_factor) == (pytest.approx(0.9), 1.0, 0.001)
    services.memory_lifecycle(now=now + timedelta(hours=24, seconds=1))  # the next decay cycle
    idle.refresh_from_db(), used.refresh_from_db()
    assert (idle.decay_factor, used.decay_factor) == (pytest.approx(0.81), pytest.approx(0.9))


def test_promotion_expiry_and_pinning(agent_a) -> None:
    token, _ = agent_a
    busy = tell(token, "Memory retrieved eleven times.")["id"]
    ten = tell(token, "Memory retrieved ten times.")["id"]
    Memory.objects.filter(id=busy).update(access_count=11)
    Memory.objects.filter(id=ten).update(access_count=10)
    expiring = tell(token, "A one-minute reminder about the kettle.", ttl_seconds=60)["id"]
    pinned = tell(token, "A one-minute reminder that is pinned.", ttl_seconds=60, pinned=True)["id"]
    counts = services.memory_lifecycle(now=timezone.now() + timedelta(seconds=61))
    assert (counts["promoted"], counts["expired"]) == (1, 1)
    assert Memory.objects.get(id=busy).type == MemoryType.LONG_TERM
    assert Memory.objects.get(id=ten).type == MemoryType.SHORT_TERM
    assert not Memory.objects.filter(id=expiring).exists()
    assert Memory.objects.filter(id=pinned).exists()


def test_forget_fade_and_remove_and_pin(agent_a) -> None:
    token, client = agent_a
    faded = tell(token, "Dave likes strong coffee.", pinned=True)["id"]
    removed = tell(token, "Erin likes green tea.")["id"]
    assert post(client, f"/v1/memory/{faded}/forget", {"mode": "fade"}).json()["mode"] == "fade"
    memory = Memory.objects.get(id=faded)
    assert (memory.decay_factor, memory.pinned) == (0.001, False)
    assert client.delete(f"/v1/memory/{removed}").status_code == 200
    assert not Memory.objects.filter(id=removed).exists()
    assert post(client, f"/v1/memory/{faded}/pin", {"pinned": True}).json()["pinned"] is True


def test_ask_reinforces_what_it_returns(agent_a) -> None:
    token, client = agent_a
    told = tell(token, "The Wi-Fi password of the meeting room is on the whiteboard.")
    Memory.objects.filter(id=told["id"]).update(decay_factor=0.5)
    post(client, "/v1/memory/ask", {"question": "Where is the meeting room Wi-Fi password?"})
    memory = Memory.objects.get(id=told["id"])
    assert (memory.access_count, memory.decay_factor) == (1, pytest.approx(0.55))
    assert memory.last_accessed_at is not None
    assert MemoryAccess.objects.filter(memory=memory).count() == 1


# --- Isolation ----------------------------------------------------------------------------------


def test_one_token_never_reaches_another_tokens_memories(agent_a, agent_b) -> None:
    token_a, _client_a = agent_a
    token_b, client_b = agent_b
    secret = tell(token_a, "Agent A's private note: the launch code word is heliotrope.", domain="ops")["id"]
    tell(token_b, "Agent B's note about lunch plans.", domain="ops")
    asked = post(
        client_b, "/v1/memory/ask", {"question": "What is the launch code word?", "domain": "ops"}
    ).json()
    assert secret not in json.dumps(asked)
    assert client_b.get(f"/v1/memory/{secret}").status_code == 404
    assert client_b.delete(f"/v1/memory/{secret}").status_code == 404
    assert post(client_b, f"/v1/memory/{secret}/forget", {"mode": "remove"}).status_code == 404
    assert post(client_b, f"/v1/memory/{secret}/pin", {}).status_code == 404
    assert secret not in client_b.get("/api/memories/").content.decode()
    assert client_b.get(f"/api/memories/{secret}/").status_code == 404
    # The routes of issue 25: a 404 as for an id that does not exist, and nothing changes.
    listed = client_b.get("/v1/memory?text=heliotrope&includeSuperseded=true").json()
    assert (listed["total"], listed["memories"]) == (0, [])
    updated = client_b.patch(
        f"/v1/memory/{secret}", json.dumps({"content": "B was here."}), content_type=JSON
    )
    assert updated.status_code == 404
    assert updated.json()["error"]["message"] == f"No memory {secret} among this token's memories."
    assert client_b.get(f"/v1/memory/{secret}/history").status_code == 404
    assert post(client_b, "/v1/memory/forget-all", {"confirm": True}).json()["forgotten"] == 1  # B's own
    caller = Caller(transport="mcp-http", token=token_b)
    mcp_ask = mcp_tool_call(
        name="ask", arguments={"question": "launch code word", "domain": "ops"}, caller=caller
    )
    assert secret not in json.dumps(mcp_ask.structured)
    forget = mcp_tool_call(name="memory.forget", arguments={"id": secret, "mode": "remove"}, caller=caller)
    assert forget.is_error and forget.text.startswith("not_found:")
    for name, arguments in (
        ("memory.get", {"id": secret}),
        ("memory.update", {"id": secret, "importance": 1.0}),
        ("memory.history", {"id": secret}),
        ("memory.pin", {"id": secret}),
    ):
        refused = mcp_tool_call(name=name, arguments=arguments, caller=caller)
        assert refused.is_error and refused.text.startswith("not_found:"), name
    assert mcp_tool_call(name="memory.list", arguments={}, caller=caller).structured["total"] == 0
    kept = Memory.objects.get(id=secret)
    assert (kept.content, kept.importance, kept.version, kept.pinned) == (
        "Agent A's private note: the launch code word is heliotrope.",
        0.5,
        1,
        False,
    )
    tell(token_b, "Agent B's note about lunch plans.", domain="ops")
    # Superseding another token's memory is refused too, and stores nothing.
    count = Memory.objects.count()
    refused = post(
        client_b, "/v1/memory/tell", {"content": "The code word is now azure.", "supersedes": secret}
    )
    assert refused.status_code == 404 and Memory.objects.count() == count
    assert Memory.objects.get(id=secret).valid_until is None
    # Only an operator's decision shares it, and only with those asking in its domain.
    services.memories_share(ids=[uuid.UUID(secret)], shared=True)
    in_domain = post(
        client_b, "/v1/memory/ask", {"question": "What is the launch code word?", "domain": "ops"}
    )
    assert secret in [hit["id"] for hit in in_domain.json()["memories"]]
    elsewhere = post(client_b, "/v1/memory/ask", {"question": "What is the launch code word?"})
    assert secret not in json.dumps(elsewhere.json())
    assert client_b.delete(f"/v1/memory/{secret}").status_code == 404  # shared is readable, not B's to delete


def test_agent_and_session_namespaces_narrow_a_tokens_memories(agent_a) -> None:
    _token, client = agent_a
    post(client, "/v1/memory/tell", {"content": "Planner notes the deadline is June 3.", "agent": "planner"})
    post(client, "/v1/memory/tell", {"content": "Writer notes the deadline is June 9.", "agent": "writer"})
    planner = post(client, "/v1/memory/ask", {"question": "When is the deadline?", "agent": "planner"}).json()
    assert [hit["agent"] for hit in planner["memories"]] == ["planner"]
    everything = post(client, "/v1/memory/ask", {"question": "When is the deadline?"}).json()
    assert {hit["agent"] for hit in everything["memories"]} == {"planner", "writer"}


def test_rotating_a_token_moves_its_memories_to_the_replacement(agent_a) -> None:
    token, client = agent_a
    told = tell(token, "Frank's badge number is 4411.")["id"]
    new, raw = api_token_rotate(token_id=token.pk)
    assert client.post("/v1/memory/ask", {"question": "badge"}, content_type=JSON).status_code == 401
    replacement = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert replacement.get(f"/v1/memory/{told}").status_code == 200
    assert Memory.objects.get(id=told).token_id == new.pk


def test_the_token_admin_rotates_and_the_settings_admin_refuses_weights_not_summing_to_1(
    agent_a, admin_client
) -> None:
    token, _ = agent_a
    tell(token, "Grace sits on the third floor.")
    answer = admin_client.post(
        "/admin/core/apitoken/", {"action": "rotate_tokens", "_selected_action": [token.pk]}, follow=True
    )
    assert "Copy the new token now" in answer.content.decode()
    assert Memory.objects.get().token.revoked_at is None
    config = MemorySettings.current()
    form = {
        field.name: getattr(config, field.name)
        for field in MemorySettings._meta.fields
        if field.name not in ("id", "updated_at")
    }
    refused = admin_client.post(
        f"/admin/memory/memorysettings/{config.pk}/change/", {**form, "weight_domain": 0.5}
    )
    assert "must sum to 1" in refused.content.decode()
    assert MemorySettings.current().weight_domain == 0.35


# --- Bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/v1/memory/tell", {"content": ""}, 422),
        ("/v1/memory/tell", {"content": "   \n  "}, 422),
        ("/v1/memory/tell", {"content": "x" * 2_000_000}, 413),
        ("/v1/memory/tell", {"content": "x " * 150_000}, 422),
        ("/v1/memory/tell", {"content": "fine", "ttlSeconds": -5}, 422),
        ("/v1/memory/tell", {"content": "fine", "importance": 1.5}, 422),
        ("/v1/memory/tell", {"content": "nul \u0000 byte"}, 422),
        ("/v1/memory/tell", {"content": "fine", "domain": "Not A Domain"}, 422),
        ("/v1/memory/tell", {"content": "fine", "metadata": {"blob": "x" * 20_000}}, 422),
        ("/v1/memory/tell", {"content": "fine", "supersedes": str(uuid.uuid4())}, 404),
        ("/v1/memory/tell/batch", {"items": []}, 422),
        ("/v1/memory/tell/batch", {"items": [{"content": "ok"}] * 501}, 422),
        ("/v1/memory/tell/batch", {"items": [{"content": "ok"}, {"content": " "}]}, 422),
        ("/v1/memory/ask", {"question": "where?", "weights": dict.fromkeys(COMPONENTS, 0.5)}, 422),
        ("/v1/memory/ask", {"question": "where?", "weights": {"domain": 1}}, 422),
        ("/v1/memory/ask", {"question": " "}, 422),
        ("/v1/memory/ask", {"question": "where?", "limit": 0}, 422),
    ],
)  # fmt: skip
def test_bad_input_is_a_4xx_that_stores_nothing(agent_a, path: str, body: dict, status: int) -> None:
    _, client = agent_a
    answer = post(client, path, body)
    assert answer.status_code == status, answer.content[:300]
    assert answer.json()["error"]["message"]
    assert Memory.objects.count() == 0


def test_unknown_ids_and_a_read_token_writing(agent_a, make_token) -> None:
    _, client = agent_a
    unknown = uuid.uuid4()
    assert client.get(f"/v1/memory/{unknown}").status_code == 404
    assert client.get("/v1/memory/not-a-uuid").status_code == 404
    _, raw = make_token("read")
    reader = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    refused = reader.post("/v1/memory/tell", {"content": "hello"}, content_type=JSON)
    assert refused.status_code == 403 and refused.json()["error"]["details"]["required"] == "write"
    assert Memory.objects.count() == 0


# --- The answer -----------------------------------------------------------------------------------


class _CitingLlm:
    """An OpenAI-compatible chat endpoint that answers with the first memory id it was given, plus an
    id it was not given (which the answer must drop); ``fail`` makes it answer 500."""

    def __init__(self) -> None:
        self.fail = False
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                if outer.fail:
                    self._send(500, {"error": {"message": "The server had an error", "type": "server_error"}})
                    return
                given = re.findall(r"\[([0-9a-f-]{36})\]", body["messages"][1]["content"])
                text = f"The staging database runs in Frankfurt [{given[0]}] [{uuid.uuid4()}]."
                self._send(
                    200,
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "model": "local-test-model",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62},
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def citing_llm(settings) -> Iterator[_CitingLlm]:
    llm = _CitingLlm()
    settings.LLM_URL, settings.LLM_MODEL = llm.url, "local-test-model"
    yield llm
    llm.server.shutdown()
    llm.server.server_close()


def test_without_an_llm_the_answer_is_extractive_and_cites_memories(agent_a) -> None:
    token, client = agent_a
    told = tell(
        token, "The staging database runs on Postgres 16. It lives in Frankfurt. Backups run at 02:00."
    )
    answer = post(client, "/v1/memory/ask", {"question": "When do the backups run?"}).json()["answer"]
    assert answer["method"] == "extractive"
    assert answer["citations"][0] == {
        "memoryId": told["id"],
        "sentence": "Backups run at 02:00.",
        "similarity": pytest.approx(answer["citations"][0]["similarity"]),
    }
    nothing = post(client, "/v1/memory/ask", {"question": "zebra migration", "threshold": 0.99}).json()
    assert nothing["answer"] == {
        "method": "none",
        "text": "",
        "citations": [],
        "reason": "nothing relevant remembered",
    }
    # Nothing is answered from, but the nearest memory is listed apart, marked under the floor.
    assert (nothing["memories"], nothing["reason"]) == ([], "nothing relevant remembered")
    assert [(hit["id"], hit["belowFloor"]) for hit in nothing["nearest"]] == [(told["id"], True)]


def test_with_an_llm_the_answer_cites_only_memories_it_was_given(agent_a, citing_llm) -> None:
    token, client = agent_a
    told = tell(token, "The staging database runs on Postgres 16 in Frankfurt.")
    answer = post(client, "/v1/memory/ask", {"question": "Where does the staging database run?"}).json()[
        "answer"
    ]
    assert answer["method"] == "llm" and answer["model"] == "local-test-model"
    assert answer["citations"] == [{"memoryId": told["id"]}]
    assert citing_llm.bodies[0]["model"] == "local-test-model"
    assert told["id"] in citing_llm.bodies[0]["messages"][1]["content"]


def test_a_failing_llm_falls_back_to_the_extractive_answer_and_says_why(
    agent_a, citing_llm, monkeypatch
) -> None:
    from apps.core import llm

    monkeypatch.setattr(llm, "RETRY_POLICY", llm.RetryPolicy(max_retries=0, backoff_base=0.0))
    token, client = agent_a
    tell(token, "The staging database runs on Postgres 16 in Frankfurt.")
    citing_llm.fail = True
    answer = post(client, "/v1/memory/ask", {"question": "Where does the staging database run?"}).json()[
        "answer"
    ]
    assert answer["method"] == "extractive"
    assert "LLM" in answer["fallbackReason"]
