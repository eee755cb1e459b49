"""The MCP server over streamable HTTP, with the official SDK client against a running server:
discovery, every CortexWeb tool answering exactly as its ``/v1/`` twin, resources and the prompt,
and how every call is recorded."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.test import Client as DjangoClient

from apps.connectors.models import ToolCall
from apps.core.models import Event
from apps.wikidata.models import Fact
from tests.mcp_server.conftest import PACK_ENTRY_IDS, http_session, text_of
from tests.wikidata.replay_server import Reply
from tests.wikidata.test_facts import P31_GUID, P31_STATEMENT_URI, Q42_VECTOR_HIT

pytestmark = pytest.mark.django_db(transaction=True)

OWN_TOOLS = [
    "facts.query",
    "facts.run",
    "arxiv.search",
    "arxiv.lookup",
    "knowledge.search",
    "knowledge.verify",
    "grounding.ground",
    "connectors.service_map",
    "agents.plan",
    "tell",
    "ask",
    "memory.forget",
    "memory.list",
    "memory.get",
    "memory.update",
    "memory.history",
    "memory.pin",
    "memory.forget_all",
    "memory.export",
    "ontology_discover",
    "ontology_read",
    "ontology_query",
    "ontology_traverse",
    "ontology_propose",
    "ontology_validate",
    "ontology_status",
]
CATALOGUE_TOOLS = [
    "wikidata.vector_search_items",
    "wikidata.vector_search_properties",
    "wikidata.get_claims",
    "wikidata.sparql",
    "wikidata.get_hierarchy",
]


@pytest.fixture
def token(make_token) -> str:
    return make_token("read", "upstream", "verify", name="mcp-agent")[1]


def _rest(token: str) -> DjangoClient:
    return DjangoClient(headers={"Authorization": f"Bearer {token}"})


def _call(cortex_server, token: str | None, name: str, arguments: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with http_session(cortex_server.mcp_url, token) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(go())


def _without(document: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key not in keys}


def test_discovery_needs_no_token(cortex_server, registry) -> None:
    async def go() -> dict[str, Any]:
        async with http_session(cortex_server.mcp_url) as client:
            await client.send_ping()
            return {
                "protocol": client.protocol_version,
                "server": client.server_info,
                "tools": (await client.list_tools()).tools,
                "resources": (await client.list_resources()).resources,
                "templates": (await client.list_resource_templates()).resource_templates,
                "prompts": (await client.list_prompts()).prompts,
            }

    found = asyncio.run(go())
    assert found["protocol"] and found["server"].name == "cortexweb"
    tools = {tool.name: tool for tool in found["tools"]}
    assert list(tools) == OWN_TOOLS + CATALOGUE_TOOLS
    for name in OWN_TOOLS:
        tool = tools[name]
        assert tool.title and tool.description and tool.output_schema["type"] == "object"
        assert tool.input_schema["type"] == "object" and tool.annotations is not None
    assert (
        tools["facts.query"].annotations.open_world_hint,
        tools["facts.query"].annotations.read_only_hint,
    ) == (
        True,
        False,
    )
    assert tools["knowledge.search"].annotations.read_only_hint is True
    assert tools["knowledge.search"].input_schema["required"] == ["query"]
    assert tools["knowledge.search"].input_schema["additionalProperties"] is False
    # Catalogue tools carry the schema the manifest declares for them, and reach an upstream.
    assert tools["wikidata.get_claims"].annotations.open_world_hint is True
    assert tools["wikidata.get_claims"].meta == {
        "cortexweb/scope": "upstream",
        "cortexweb/connector": "wikidata",
        "cortexweb/tags": tools["wikidata.get_claims"].meta["cortexweb/tags"],
    }
    assert [str(resource.uri) for resource in found["resources"]] == ["cortexweb://service-map"]
    assert [template.uri_template for template in found["templates"]] == [
        "cortexweb://facts/runs/{id}",
        "cortexweb://facts/runs/{id}/prov.ttl",
        "cortexweb://knowledge/{entryId}",
    ]
    assert [(prompt.name, bool(prompt.description)) for prompt in found["prompts"]] == [
        ("ground_answer", True)
    ]


def test_a_switched_off_feature_is_absent_and_refused(cortex_server, registry, token, settings) -> None:
    settings.FEATURE_ARXIV = False

    async def go() -> tuple[list[str], Any]:
        async with http_session(cortex_server.mcp_url, token) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            return names, await client.call_tool("arxiv.search", {"query": "testing"})

    names, refused = asyncio.run(go())
    assert "arxiv.search" not in names and "arxiv.lookup" not in names
    assert refused.is_error is True
    assert text_of(refused).splitlines()[0] == (
        "feature_disabled: Tool 'arxiv.search' is switched off (FEATURE_ARXIV is false)."
    )


def test_plan_service_map_and_search_answer_as_their_rest_twins(cortex_server, registry, pack, token) -> None:
    rest = _rest(token)
    plan = _call(cortex_server, token, "agents.plan", {"intent": "fact_query", "query": "Who wrote Dune?"})
    assert plan.is_error is False
    assert (
        plan.structured_content
        == rest.post(
            "/v1/agents/plan",
            {"intent": "fact_query", "query": "Who wrote Dune?"},
            content_type="application/json",
        ).json()
    )
    assert text_of(plan).splitlines()[0] == "Plan for fact_query: 'Who wrote Dune?'"

    service_map = _call(cortex_server, None, "connectors.service_map", {})
    assert service_map.structured_content == json.loads(rest.get("/v1/connectors/service-map").content)

    arguments = {"query": "password hashing", "domain": "security", "limit": 3}
    search = _call(cortex_server, token, "knowledge.search", arguments)
    expected = rest.post("/v1/knowledge/search", arguments, content_type="application/json").json()
    assert search.structured_content == expected
    found_ids = [hit["id"] for hit in expected["results"]]
    assert found_ids and set(found_ids) <= set(PACK_ENTRY_IDS)
    assert text_of(search).splitlines()[1].startswith(f"- {expected['results'][0]['id']} (security): ")


def test_verify_and_ground_answer_as_their_rest_twins(cortex_server, registry, pack, token) -> None:
    rest = _rest(token)
    claim = {"claim": "Passwords should be hashed with MD5 before they are stored."}
    verified = _call(cortex_server, token, "knowledge.verify", claim)
    expected = rest.post("/v1/knowledge/verify", claim, content_type="application/json").json()
    assert _without(verified.structured_content, "verificationId") == _without(expected, "verificationId")
    # The prohibited-use basis has not earned a decisive verdict on the calibration set (issue #24):
    # an abstention that leans to the contradiction, on the entry that prohibits MD5.
    assert (verified.structured_content["verdict"], verified.structured_content["leaning"]) == (
        "unverified",
        "contradicted",
    )
    assert verified.structured_content["sources"][0]["entry_id"] == "SEC-001"
    assert text_of(verified).splitlines()[0].startswith("unverified (confidence ")

    message = {"message": "Passwords should be hashed with MD5 before they are stored.", "messageId": "m-1"}
    grounded = _call(cortex_server, token, "grounding.ground", message)
    expected = rest.post("/v1/grounding/ground", message, content_type="application/json").json()

    def comparable(document: dict[str, Any]) -> dict[str, Any]:
        return {
            **_without(document, "id", "latencyMs", "verifications"),
            "verifications": [_without(item, "verificationId") for item in document["verifications"]],
        }

    assert comparable(grounded.structured_content) == comparable(expected)
    assert grounded.structured_content["original_message_id"] == "m-1"


def test_a_fact_question_end_to_end_with_its_run_and_provenance(
    cortex_server, registry, celery_worker, wikidata, token
) -> None:
    wikidata.default_vector = Reply(body=Q42_VECTOR_HIT)

    async def go() -> dict[str, Any]:
        async with http_session(cortex_server.mcp_url, token) as client:
            answer = await client.call_tool(
                "facts.query",
                {"query": "What is Douglas Adams an instance of?", "topK": 5, "waitSeconds": 30},
            )
            run_id = answer.structured_content["runId"]
            return {
                "answer": answer,
                "run": await client.call_tool("facts.run", {"runId": run_id}),
                "resource": await client.read_resource(f"cortexweb://facts/runs/{run_id}"),
                "prov": await client.read_resource(f"cortexweb://facts/runs/{run_id}/prov.ttl"),
            }

    found = asyncio.run(go())
    answer = found["answer"]
    assert answer.is_error is False, text_of(answer)
    body = answer.structured_content
    assert (body["status"], body["degraded"], len(body["results"])) == ("succeeded", False, 5)
    best = body["results"][0]
    assert best["metadata"]["wikidata"]["claimGuid"] == P31_GUID
    fact = Fact.objects.get(run_id=body["runId"], claim_guid=P31_GUID)
    assert best["provenanceUrl"] == f"{cortex_server.url}/facts/{fact.pk}"
    assert f"[{P31_GUID}]" in text_of(answer).splitlines()[1]
    assert found["run"].structured_content == body
    assert json.loads(found["resource"].contents[0].text) == body
    prov = found["prov"].contents[0]
    assert prov.mime_type == "text/turtle" and P31_STATEMENT_URI.rsplit("/", 1)[1] in prov.text


def test_arxiv_search_and_lookup_run_on_the_worker(
    cortex_server, registry, celery_worker, arxiv, token
) -> None:
    search = _call(cortex_server, token, "arxiv.search", {"query": "testing", "maxResults": 10})
    assert search.is_error is False, text_of(search)
    body = search.structured_content
    assert (body["status"], body["source"], body["brand"], body["cached"]) == (
        "succeeded",
        "arxiv",
        "brAInwav",
        False,
    )
    again = _rest(token).post(
        "/v1/arxiv/search", {"query": "testing", "maxResults": 10}, content_type="application/json"
    )
    assert again.json()["cached"] is True and again.json()["items"] == body["items"]
    assert text_of(search).splitlines()[1] == f"- {body['items'][0]['id']}: {body['items'][0]['title']} " + (
        f"({body['items'][0]['published'][:10]})"
    )
    lookup = _call(cortex_server, token, "arxiv.lookup", {"ids": ["1605.08386"]})
    assert lookup.is_error is False, text_of(lookup)
    assert lookup.structured_content["status"] == "succeeded"
    assert len(arxiv.arrivals) == 2


def test_resources_and_the_prompt(cortex_server, registry, pack, token, make_token) -> None:
    async def go() -> dict[str, Any]:
        async with http_session(cortex_server.mcp_url, token) as client:
            return {
                "map": await client.read_resource("cortexweb://service-map"),
                "entry": await client.read_resource("cortexweb://knowledge/SEC-001"),
                "prompt": await client.get_prompt(
                    "ground_answer", {"question": "Is MD5 fine for passwords?"}
                ),
            }

    found = asyncio.run(go())
    assert json.loads(found["map"].contents[0].text) == json.loads(
        DjangoClient().get("/v1/connectors/service-map").content
    )
    entry = json.loads(found["entry"].contents[0].text)
    assert (entry["id"], entry["domain"]) == ("SEC-001", "security")
    message = found["prompt"].messages[0]
    assert message.role == "user"
    assert message.content.text.splitlines()[0] == (
        "Answer this question with claims you can verify: Is MD5 fine for passwords?"
    )
    assert "grounding.ground" in message.content.text and "claimGuid" in message.content.text


def test_unknown_resources_and_prompts_are_protocol_errors(cortex_server, registry, token) -> None:
    async def go(call) -> str:
        async with http_session(cortex_server.mcp_url, token) as client:
            try:
                await call(client)
            except Exception as error:  # the SDK raises MCPError for a JSON-RPC error
                return f"{getattr(error, 'code', None)} {error}"
        return "no error"

    assert asyncio.run(go(lambda c: c.read_resource("cortexweb://knowledge/NOPE-999"))).startswith("-32602 ")
    assert asyncio.run(go(lambda c: c.read_resource("cortexweb://facts/runs/not-a-uuid"))).startswith(
        "-32602 "
    )
    assert asyncio.run(go(lambda c: c.read_resource("https://example.org/"))).startswith("-32602 ")
    assert asyncio.run(go(lambda c: c.get_prompt("nope", {}))).startswith("-32602 Unknown prompt: nope")
    assert asyncio.run(go(lambda c: c.get_prompt("ground_answer", {"question": "  "}))).startswith("-32602 ")


def test_every_call_is_recorded_with_its_transport(cortex_server, registry, pack, token) -> None:
    _call(cortex_server, token, "knowledge.search", {"query": "password hashing"})
    _call(cortex_server, token, "knowledge.search", {})
    calls = list(ToolCall.objects.filter(tool_name="knowledge.search").order_by("created_at"))
    assert [(call.status, call.transport, call.connector_slug, call.token.name) for call in calls] == [
        ("ok", "mcp-http", "cortexweb", "mcp-agent"),
        ("invalid_arguments", "mcp-http", "cortexweb", "mcp-agent"),
    ]
    assert all(call.duration_ms > 0 and call.correlation_id for call in calls)
    events = Event.objects.filter(name__startswith="tool.call.", payload__tool="knowledge.search")
    assert sorted((event.name, event.payload["transport"]) for event in events) == [
        ("tool.call.completed", "mcp-http"),
        ("tool.call.failed", "mcp-http"),
    ]
    metrics = DjangoClient().get("/metrics").content.decode()
    assert 'mcp_tool_calls_total{outcome="ok",tool="knowledge.search"}' in metrics
    assert 'mcp_tool_calls_total{outcome="validation_error",tool="knowledge.search"}' in metrics
    assert 'mcp_tool_duration_seconds_count{tool="knowledge.search"}' in metrics
