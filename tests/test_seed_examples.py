"""Every example request of the five seeds (``/work/shared/seeds/``), sent as the seed writes it —
camelCase where it says so — over REST and over MCP (streamable HTTP with the official SDK client;
stdio where the seed is about stdio), with the seed's answer shape and values asserted exactly
(issue #25, first acceptance point).

Each test quotes the seed's words it checks, with the seed's file name. The upstreams are the
recorded replays the other tests use: the fake Wikidata MCP server (``tests/connectors/mcp_server``),
the Wikidata replay (``tests/wikidata/replay_server``) and the arXiv replay
(``tests/arxiv/replay_server``). Where no recording of the seed's own example exists (the telephone
question of seed 000), the test sends the seed's request and checks the seed's shape on the recorded
answers, and says so.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import Client
from jsonschema import Draft202012Validator

from apps.arxiv.models import Paper
from apps.arxiv.services import arxiv_limiter
from apps.connectors.gateway import connector_sync
from apps.core.models import ApiToken, Event
from apps.core.signing import verify
from apps.knowledge import services as knowledge_services
from apps.knowledge.services import _validated
from apps.memory.models import Memory
from apps.ontology.models import NAMESPACE, OntologyProposal
from apps.ontology.proposals import propose_limiter
from tests.arxiv.replay_server import ReplayArxiv
from tests.arxiv.replay_server import Reply as ArxivReply
from tests.arxiv.test_api import arxiv  # noqa: F401 - the arXiv replay
from tests.arxiv.test_outage import TRANSFORMER, TRANSFORMER_ITEM
from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401 - fixtures
from tests.connectors.mcp_server import mcp_servers_fixture, wikidata_mcp_fixture  # noqa: F401 - fake MCP
from tests.connectors.test_get_claims_shapes import Q937_STATEMENTS, upstream  # noqa: F401 - Q937 known
from tests.grounding.test_verify import pack  # noqa: F401 - the knowledge pack
from tests.mcp_server.conftest import http_session, text_of
from tests.mcp_server.test_stdio import RawStdio
from tests.ontology.test_query_limits import committed_ontology  # noqa: F401 - the starter ontology
from tests.wikidata.conftest import wikidata  # noqa: F401 - the Wikidata replay
from tests.wikidata.replay_server import Reply, fixture_json
from tests.wikidata.test_facts import Q42_VECTOR_HIT

# The live server (MCP over HTTP) and the Celery worker see committed rows only.
pytestmark = pytest.mark.django_db(transaction=True)


def _mcp(cortex_server: Any, token: str | None, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """``tools/call`` of each (name, arguments) in one SDK client session over streamable HTTP."""

    async def go() -> list[Any]:
        async with http_session(cortex_server.mcp_url, token) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(go())


def _ok(result: Any) -> dict[str, Any]:
    assert result.is_error is False, text_of(result)
    return result.structured_content


def _rest(token: str | None = None) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"} if token else {})


def _post(client: Client, path: str, body: dict[str, Any]) -> Any:
    return client.post(path, json.dumps(body), content_type="application/json")


def _schema_errors(schema: dict[str, Any], document: Any) -> list[str]:
    return sorted(
        f"{error.json_path}: {error.message}" for error in Draft202012Validator(schema).iter_errors(document)
    )


# ============================================================================================ seed 000
# 000_0a85341cd58d424d.txt — Wikidata semantic layer: the service map, planning, tool-name
# normalisation and fact retrieval with provenance.

# "API Contracts / Service-Map Response": the wikidata connector's remoteTools, exactly.
SEED_000_REMOTE_TOOLS = [
    {
        "name": "wikidata.vector_search_items",
        "description": "Vector search over Wikidata items using Matryoshka embeddings",
        "tags": ["vector", "wikidata", "items"],
        "scopes": ["facts", "entities"],
    },
    {
        "name": "wikidata.vector_search_properties",
        "description": "Vector search over Wikidata properties",
        "tags": ["vector", "wikidata", "properties"],
        "scopes": ["properties"],
    },
    {
        "name": "wikidata.get_claims",
        "description": "Retrieve claims for Wikidata entities",
        "tags": ["claims", "wikidata", "provenance"],
    },
    {
        "name": "wikidata.sparql",
        "description": "Execute SPARQL queries",
        "tags": ["sparql", "wikidata", "provenance"],
    },
]


@pytest.fixture
def registry_committed(transactional_db: None, default_manifest: dict) -> dict:  # noqa: F811
    from apps.connectors.services import manifest_import

    manifest_import(data=default_manifest, actor="tests")
    return default_manifest


def test_000_the_service_map_as_the_seed_publishes_it(cortex_server, registry_committed) -> None:
    """000_0a85341cd58d424d.txt, User Story 1:

    "**When** an agent requests `/v1/connectors/service-map` **Then** the response includes a
    Wikidata connector with `remoteTools[0].name === "wikidata.vector_search_items"` **And** the tool
    has `tags: ["vector", "wikidata", "items"]` and `scopes: ["facts", "entities"]`"
    "a legacy connector (Perplexity) without `remoteTools` ... the Perplexity connector entry omits the
    `remoteTools` field (backward compatible) **And** the service-map signature remains valid"
    "Service-map response includes `brand: "brAInwav"` at root; Connector metadata includes
    `metadata.brand: "brAInwav"`"; "[NFR-S-002] Tool name validation ... (regex: `^[a-z0-9._-]+$`)"
    """
    response = _rest().get("/v1/connectors/service-map")
    assert response.status_code == 200
    body = response.json()
    (over_mcp,) = _mcp(cortex_server, None, ("connectors.service_map", {}))
    assert _ok(over_mcp) == body

    # The example's root and connector keys, no others (remoteTools only where a connector has tools).
    assert sorted(body) == ["brand", "connectors", "generatedAt", "id", "signature", "ttlSeconds"]
    assert body["brand"] == "brAInwav"
    connectors = {each["id"]: each for each in body["connectors"]}
    entry = connectors["wikidata"]
    assert sorted(entry) == sorted(
        ["id", "version", "endpoint", "auth", "scopes", "ttlSeconds", "enabled", "metadata", "remoteTools"]
    )
    assert entry["remoteTools"][0]["name"] == "wikidata.vector_search_items"
    assert entry["remoteTools"][0]["tags"] == ["vector", "wikidata", "items"]
    assert entry["remoteTools"][0]["scopes"] == ["facts", "entities"]
    assert entry["remoteTools"][:4] == SEED_000_REMOTE_TOOLS
    # The example's other connector fields, as the seed's example has them.
    assert {key: entry[key] for key in ("endpoint", "auth", "scopes", "ttlSeconds", "enabled")} == {
        "endpoint": "https://wd-mcp.wmcloud.org/mcp/",
        "auth": {"type": "none"},
        "scopes": ["wikidata:vector-search", "wikidata:claims", "wikidata:sparql"],
        "ttlSeconds": 1800,
        "enabled": True,
    }
    assert (entry["metadata"]["brand"], entry["metadata"]["dumpDate"]) == ("brAInwav", "2024-09-18")
    assert "remoteTools" not in connectors["perplexity"]
    assert connectors["perplexity"]["metadata"]["brand"] == "brAInwav"
    names = [tool["name"] for each in body["connectors"] for tool in each.get("remoteTools", [])]
    assert names and all(re.fullmatch(r"[a-z0-9._-]+", name) for name in names), names
    signature = body.pop("signature")
    assert verify(body, signature=signature, key=django_settings.CORTEX_SIGNING_KEY)


def test_000_the_agent_plans_vector_search_then_claims_then_sparql(
    cortex_server, registry_committed, make_token
) -> None:
    """000_0a85341cd58d424d.txt, User Story 2:

    "**Given** ExecutionSurfaceAgent receives a `FactQueryIntent` for "Einstein's birthplace" **When** it
    plans the workflow using service-map tool metadata **Then** the plan includes Step 1:
    `wikidata.vector_search_items` (tags include "vector") **And** Step 2: `wikidata.get_claims` (for
    top-N QIDs) **And** Step 3: `wikidata.sparql` (optional, for provenance enrichment)"
    "**Given** a query scoped to "properties" rather than "facts" **When** the agent filters tools by
    scope **Then** it selects `wikidata.vector_search_properties` instead of `vector_search_items`"
    """
    _, token = make_token("read", name="planner")
    facts = {"intent": "fact_query", "query": "Einstein's birthplace"}
    properties = {**facts, "scope": "properties"}
    rest = [_post(_rest(token), "/v1/agents/plan", body) for body in (facts, properties)]
    assert [response.status_code for response in rest] == [200, 200]
    over_mcp = _mcp(cortex_server, token, ("agents.plan", facts), ("agents.plan", properties))
    assert [_ok(result) for result in over_mcp] == [response.json() for response in rest]

    plan = rest[0].json()
    assert [(step["order"], step["tool"], step["optional"]) for step in plan["steps"]] == [
        (1, "wikidata.vector_search_items", False),
        (2, "wikidata.get_claims", False),
        (3, "wikidata.sparql", True),
    ]
    assert plan["steps"][0]["arguments"] == {"query": "Einstein's birthplace"}
    assert plan["steps"][1]["arguments"] == {"entity_id": {"fromStep": 1, "field": "id", "top": 3}}
    assert rest[1].json()["steps"][0]["tool"] == "wikidata.vector_search_properties"


def test_000_call_tool_get_claims_with_qids(cortex_server, upstream, make_token) -> None:  # noqa: F811
    """000_0a85341cd58d424d.txt, User Story 3, scenario 2:

    "**Given** an agent invokes `callTool("wikidata.get_claims", {qids: ["Q937"]})` **When** MCP manager
    dispatches the call **Then** it translates to upstream `get_entity_claims` if that's the server's
    name **And** the response is returned under the canonical `wikidata.get_claims` identifier"

    The current upstream calls the tool ``get_statements`` (reference/external-apis.md §5).
    """
    _, token = make_token("read", "upstream", name="seed-000-agent")
    response = _post(
        _rest(token), "/v1/tools/call", {"name": "wikidata.get_claims", "arguments": {"qids": ["Q937"]}}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["tool"], body["upstreamTool"]) == ("wikidata.get_claims", "get_statements")
    assert body["result"]["results"] == [
        {
            "qid": "Q937",
            "result": {
                "content": [{"type": "text", "text": Q937_STATEMENTS}],
                "structuredContent": {"result": Q937_STATEMENTS},
                "isError": False,
            },
        }
    ]
    (over_mcp,) = _mcp(cortex_server, token, ("wikidata.get_claims", {"qids": ["Q937"]}))
    assert over_mcp.is_error is False, text_of(over_mcp)
    assert text_of(over_mcp) == Q937_STATEMENTS
    assert over_mcp.structured_content["result"] == body["result"]
    assert upstream.calls == [("get_statements", {"entity_id": "Q937"})] * 2


def test_000_an_upstream_named_get_entity_claims_is_the_canonical_get_claims(
    cortex_server,
    upstream,  # noqa: F811
    make_token,
    caplog,
) -> None:
    """000_0a85341cd58d424d.txt, User Story 3:

    "**Given** MCP server exposes tool named `get_entity_claims` **When** MCP manager registers the
    Wikidata connector **Then** it maps `get_entity_claims` → `wikidata.get_claims` in the internal
    registry" and "`callTool("wikidata.get_claims", {qids: ["Q937"]})` ... translates to upstream
    `get_entity_claims` if that's the server's name **And** the response is returned under the
    canonical `wikidata.get_claims` identifier"
    """
    upstream.rename_tool("get_statements", "get_entity_claims")  # the 2025 server's name
    report = connector_sync(slug="wikidata")  # registering the connector reads the upstream's tools/list
    assert report.renamed == {"wikidata.get_claims": "get_entity_claims"}
    # "**And** logs the normalization with brAInwav context"
    synced = [
        record.msg
        for record in caplog.records
        if isinstance(record.msg, dict) and record.msg["event"] == "connectors.synced"
    ]
    assert [(line["brand"], line["connector"], line["renamed"]) for line in synced] == [
        ("brAInwav", "wikidata", {"wikidata.get_claims": "get_entity_claims"})
    ]
    _, token = make_token("read", "upstream", name="seed-000-renamed")
    response = _post(
        _rest(token), "/v1/tools/call", {"name": "wikidata.get_claims", "arguments": {"qids": ["Q937"]}}
    )
    assert response.status_code == 200, response.content
    assert (response.json()["tool"], response.json()["upstreamTool"]) == (
        "wikidata.get_claims",
        "get_entity_claims",
    )
    (over_mcp,) = _mcp(cortex_server, token, ("wikidata.get_claims", {"qids": ["Q937"]}))
    assert text_of(over_mcp) == Q937_STATEMENTS
    assert upstream.calls == [("get_entity_claims", {"entity_id": "Q937"})] * 2


@pytest.fixture
def fact_token(make_token) -> str:
    return make_token("read", "upstream", name="seed-000-rag")[1]


def test_000_facts_come_with_qid_claim_guid_and_sparql(
    cortex_server,
    registry_committed,
    celery_worker,
    wikidata,  # noqa: F811
    fact_token,
) -> None:
    """000_0a85341cd58d424d.txt, User Story 4:

    "**Given** RAG store receives query "Who invented the telephone?" **When** it orchestrates Wikidata
    tools **Then** it calls `vector_search_items`, extracts top-5 QIDs **And** calls `get_claims` for
    each QID **And** optionally calls `sparql` for related provenance **And** returns results with
    `metadata.wikidata = {qid: "Q34743", claimGuid: "Q34743$...", sparql: "..."}`"

    No recording answers the telephone question: the vector database's answer is the recorded-shape Q42
    hit the fact tests use, so the values are Douglas Adams' (Q42) recorded statements.
    """
    wikidata.default_vector = Reply(body=Q42_VECTOR_HIT)
    question = {"query": "Who invented the telephone?", "waitSeconds": 30}
    response = _post(_rest(fact_token), "/v1/facts/query", question)
    assert response.status_code == 200, response.content
    (over_mcp,) = _mcp(cortex_server, fact_token, ("facts.query", question))
    recorded = fixture_json("wikidata/wbgetentities_Q42_labels_descriptions_aliases_claims_2025.json")
    recorded_guids = {
        statement["id"]
        for statements in recorded["entities"]["Q42"]["claims"].values()
        for statement in statements
    }
    bodies = [response.json(), _ok(over_mcp)]
    assert [item["text"] for item in bodies[0]["results"]] == [item["text"] for item in bodies[1]["results"]]
    for body in bodies:
        assert (body["status"], body["degraded"], len(body["results"])) == ("succeeded", False, 5)
        assert [step["tool"] for step in body["plan"]["steps"]] == [
            "wikidata.vector_search_items",
            "wikidata.get_claims",
            "wikidata.sparql",
        ]
        for result in body["results"]:
            provenance = result["metadata"]["wikidata"]
            assert provenance["qid"] == "Q42"
            assert provenance["claimGuid"] in recorded_guids, provenance
            # The SPARQL that enriched it names this very statement.
            assert f"<{provenance['statementUri']}>" in provenance["sparql"], provenance


TELEPHONE = {
    "id": "TECH-901",
    "topic": "Invention of the telephone",
    "content": "Alexander Graham Bell was granted the first United States patent for the telephone in 1876.",
    "source": "US Patent 174,465",
    "url": "https://patents.google.com/patent/US174465A/en",
}


@pytest.fixture
def local_knowledge(transactional_db: None) -> None:
    """The local knowledge base holds what the question asks about (the seed's "local-only retrieval")."""
    knowledge_services.entries_import(
        domain_name="technology",
        pack=_validated([(TELEPHONE, "$", {})], {}),
        source_name="notes",
        location="test",
    )


def test_000_wikidata_unreachable_falls_back_to_local_knowledge(
    cortex_server, registry_committed, celery_worker, local_knowledge, fact_token, *, settings, caplog
) -> None:
    """000_0a85341cd58d424d.txt, User Story 4, scenario 2:

    "**Given** the Wikidata MCP server is unreachable **When** RAG store attempts the workflow **Then**
    it falls back to local-only retrieval **And** logs the fallback with brAInwav context **And** returns
    results without Wikidata provenance (graceful degradation)"
    """
    settings.WIKIDATA_API_URL = settings.WIKIDATA_VECTOR_URL = settings.WIKIDATA_SPARQL_URL = (
        "http://127.0.0.1:9"  # nothing listens there: every connection is refused
    )
    settings.WIKIDATA_MAX_RETRIES = 0
    question = {"query": "Who invented the telephone?", "waitSeconds": 30}
    response = _post(_rest(fact_token), "/v1/facts/query", question)
    assert response.status_code == 200, response.content
    (over_mcp,) = _mcp(cortex_server, fact_token, ("facts.query", question))
    for body in (response.json(), _ok(over_mcp)):
        assert body["degraded"] is True, body
        assert body["degradedReason"].startswith("Wikidata"), body["degradedReason"]
        assert [step["name"] for step in body["steps"]][-1] == "local"
        # The local knowledge base's entry, with its own provenance and none of Wikidata's.
        assert [{**result, "score": None} for result in body["results"]] == [
            {
                "text": TELEPHONE["content"],
                "score": None,
                "metadata": {
                    "knowledge": {
                        "entryId": "TECH-901",
                        "domain": "technology",
                        "topic": TELEPHONE["topic"],
                        "source": TELEPHONE["source"],
                        "url": TELEPHONE["url"],
                    }
                },
                "provenanceUrl": TELEPHONE["url"],
            }
        ]
        assert body["results"][0]["score"] > 0
    # "logs the fallback with brAInwav context": one structured line per degraded run.
    logged = [record.msg for record in caplog.records if isinstance(record.msg, dict)]
    fallbacks = [line for line in logged if line["event"] == "facts.run_degraded"]
    assert [(line["brand"], line["reason"]) for line in fallbacks] == [
        ("brAInwav", response.json()["degradedReason"]),
        ("brAInwav", _ok(over_mcp)["degradedReason"]),
    ]


# ============================================================================================ seed 001
# 001_e94923a4677a1177.txt — grounding agents: knowledge entries, claim verification, grounding
# messages, the verification log and the `knowledge add/update/search/verify` commands.

# verification_result, transcribed: "required: [claim, verified]", with the listed properties typed.
VERIFICATION_RESULT = {
    "type": "object",
    "required": ["claim", "verified"],
    "properties": {
        "claim": {"type": "string"},
        "verified": {"type": "boolean"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "sources": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "entry_id": {"type": "string"},
                    "content_excerpt": {"type": "string"},
                    "relevance": {"type": "number"},
                },
            },
        },
        "correction": {"type": "string"},
        "related_entries": {"type": "array", "items": {"type": "string"}},
    },
}
# grounding_message, transcribed: "required: [type, verifications]", type "const: grounding".
GROUNDING_MESSAGE = {
    "type": "object",
    "required": ["type", "verifications"],
    "properties": {
        "type": {"const": "grounding"},
        "original_message_id": {"type": "string"},
        "verifications": {"type": "array", "items": VERIFICATION_RESULT},
        "injected_knowledge": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "topic": {"type": "string"},
                    "content": {"type": "string"},
                    "source": {"type": "string"},
                },
            },
        },
        "summary": {"type": "string"},
    },
}
# knowledge_entry, transcribed: "required: [id, topic, content, source]", "pattern: ^[A-Z]+-\d{3}$".
KNOWLEDGE_ENTRY = {
    "type": "object",
    "required": ["id", "topic", "content", "source"],
    "properties": {
        "id": {"type": "string", "pattern": r"^[A-Z]+-\d{3}$"},
        "topic": {"type": "string"},
        "content": {"type": "string"},
        "source": {"type": "string"},
        "url": {"type": "string"},
        "related": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "last_verified": {"type": ["string", "null"], "pattern": r"^\d{4}-\d{2}-\d{2}$"},
    },
}
MD5_CLAIM = "Passwords should be hashed with MD5 before they are stored."


@pytest.fixture
def verifier(make_token) -> str:
    return make_token("read", "verify", name="seed-001-agent")[1]


@pytest.fixture
def verification_log(settings, tmp_path: Path) -> Path:
    path = tmp_path / "logs" / "grounding-verifications.jsonl"
    settings.GROUNDING_VERIFICATION_LOG = str(path)
    return path


def test_001_verify_a_claim_as_the_verification_result(
    cortex_server,
    pack,  # noqa: F811
    verifier,
    verification_log,
) -> None:
    """001_e94923a4677a1177.txt:

    "knowledge_verify: command: "aiwg knowledge verify <claim>" description: "Verify a specific claim""
    "verification_result: ... required: - claim - verified" with "sources: ... entry_id,
    content_excerpt, relevance", "correction", "related_entries"
    "storage: ... verification_log: ".aiwg/logs/grounding-verifications.jsonl""
    """
    response = _post(_rest(verifier), "/v1/knowledge/verify", {"claim": MD5_CLAIM})
    assert response.status_code == 200, response.content
    (over_mcp,) = _mcp(cortex_server, verifier, ("knowledge.verify", {"claim": MD5_CLAIM}))
    bodies = [response.json(), _ok(over_mcp)]
    for body in bodies:
        assert _schema_errors(VERIFICATION_RESULT, body) == []
        assert (body["claim"], body["verified"], body["domain"]) == (MD5_CLAIM, False, "security")
        assert body["sources"][0]["entry_id"] == "SEC-001"
        assert sorted(body["sources"][0]) == ["content_excerpt", "entry_id", "relevance"]
    assert bodies[0]["verificationId"] != bodies[1]["verificationId"]
    # One line per verification in the seed's log, appended as each was stored.
    records = [json.loads(line) for line in verification_log.read_text(encoding="utf-8").splitlines()]
    assert [(record["claim"], record["verdict"]) for record in records] == [
        (MD5_CLAIM, bodies[0]["verdict"]),
        (MD5_CLAIM, bodies[1]["verdict"]),
    ]


def test_001_ground_a_message_as_the_grounding_message(cortex_server, pack, verifier) -> None:  # noqa: F811
    """001_e94923a4677a1177.txt:

    "grounding_message: ... required: - type - verifications ... type: const: "grounding" ...
    original_message_id ... injected_knowledge: ... topic, content, source ... summary"
    "agent_protocol: ground_message: description: "Ground a message before delivery""
    "injection_mode: ... enum: - automatic ... - on_request ... - on_detection # Ground when claims
    detected"; "trigger_patterns: ... - "should be""
    """
    message = {"message": MD5_CLAIM, "messageId": "msg-001", "mode": "on_detection"}
    response = _post(_rest(verifier), "/v1/grounding/ground", message)
    assert response.status_code == 200, response.content
    (over_mcp,) = _mcp(cortex_server, verifier, ("grounding.ground", message))
    for body in (response.json(), _ok(over_mcp)):
        assert _schema_errors(GROUNDING_MESSAGE, body) == []
        assert (body["type"], body["original_message_id"], body["mode"]) == (
            "grounding",
            "msg-001",
            "on_detection",
        )
        assert [item["claim"] for item in body["verifications"]] == [MD5_CLAIM]
        assert body["verifications"][0]["verified"] is False
        assert body["summary"]


def test_001_search_the_knowledge_base_in_a_domain(cortex_server, pack, verifier) -> None:  # noqa: F811
    """001_e94923a4677a1177.txt:

    "knowledge_search: command: "aiwg knowledge search <query> --domain <domain>""
    "knowledge_entry: ... required: - id - topic - content - source ... id: pattern: "^[A-Z]+-\\d{3}$"
    ... related ... tags ... confidence ... last_verified: type: string format: date"
    """
    search = {"query": "password hashing", "domain": "security"}
    response = _post(_rest(verifier), "/v1/knowledge/search", search)
    assert response.status_code == 200, response.content
    (over_mcp,) = _mcp(cortex_server, verifier, ("knowledge.search", search))
    body = response.json()
    assert _ok(over_mcp) == body
    assert body["results"], body
    for hit in body["results"]:
        assert _schema_errors(KNOWLEDGE_ENTRY, hit) == []
        assert hit["domain"] == "security"
        # The seed's names for the entry's fields, not camelCase twins.
        assert "last_verified" in hit and "lastVerified" not in hit, sorted(hit)


def test_001_the_four_knowledge_commands(pack, tmp_path: Path, verification_log) -> None:  # noqa: F811
    """001_e94923a4677a1177.txt, "cli_commands":

    "aiwg knowledge add <domain> <source-file>", "aiwg knowledge update <domain>",
    "aiwg knowledge search <query> --domain <domain>", "aiwg knowledge verify <claim>"
    """
    source_file = tmp_path / "sqli.json"
    source_file.write_text(
        json.dumps(
            {
                "source": {"name": "Team notes", "type": "json_file", "priority": 40},
                "entries": [
                    {
                        "id": "SEC-901",
                        "topic": "Parameterised queries",
                        "content": "SQL statements must be built with parameterised queries, never by "
                        "concatenating user input into the query text.",
                        "source": "Team notes",
                        "tags": ["sql", "injection"],
                        "last_verified": "2026-11-01",
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    outputs = {}
    for verb, *arguments in (
        ("add", "security", str(source_file)),
        ("update", "security"),
        ("search", "parameterised queries concatenating user input", "--domain", "security"),
        ("verify", "SQL statements must be built with parameterised queries."),
    ):
        out = StringIO()
        call_command("knowledge", verb, *arguments, stdout=out)
        outputs[verb] = out.getvalue()
    assert "SEC-901" in outputs["add"] or "1" in outputs["add"], outputs["add"]
    assert outputs["update"].startswith("security: ") and outputs["update"].rstrip().endswith("re-embedded")
    assert outputs["search"].splitlines()[0].startswith("SEC-901  [security]  Parameterised queries  ")
    assert outputs["verify"].startswith("verdict: ")
    records = [json.loads(line) for line in verification_log.read_text(encoding="utf-8").splitlines()]
    assert [record["claim"] for record in records] == [
        "SQL statements must be built with parameterised queries."
    ]


# ============================================================================================ seed 002
# 002_e3aff1b9f3a772df.txt — the arXiv tool: its input schema (camelCase), its output schema,
# branding, the outage fallback and the 1 request / 3 s rule.

# ArxivSearchOutput, transcribed from the seed's zod (z.object: other keys allowed).
ARXIV_SEARCH_OUTPUT = {
    "type": "object",
    "required": ["items", "source", "brand"],
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "id",
                    "title",
                    "summary",
                    "published",
                    "updated",
                    "authors",
                    "url",
                    "categories",
                ],
                "properties": {
                    "id": {"type": "string"},
                    "title": {"type": "string"},
                    "summary": {"type": "string"},
                    "published": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T"},
                    "updated": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T"},
                    "authors": {"type": "array", "items": {"type": "string"}},
                    "url": {"type": "string", "pattern": "^https?://"},
                    "pdfUrl": {"type": "string", "pattern": "^https?://"},
                    "categories": {"type": "array", "items": {"type": "string"}},
                    "doi": {"type": "string"},
                },
            },
        },
        "source": {"const": "arxiv"},
        "brand": {"const": "brAInwav"},
    },
}
# The seed's input schema with every field given, as an agent following it sends it.
SEED_002_SEARCH = {
    "query": "machine learning transformers",
    "start": 0,
    "maxResults": 10,
    "sortBy": "submittedDate",
    "sortOrder": "descending",
}


@pytest.fixture
def searcher(make_token) -> str:
    return make_token("read", "upstream", name="seed-002-agent")[1]


def test_002_search_with_the_seeds_input_schema(
    cortex_server,
    registry_committed,
    celery_worker,
    arxiv,  # noqa: F811
    searcher,
) -> None:
    """002_e3aff1b9f3a772df.txt:

    "ArxivSearchInput = z.object({ query: z.string().min(2).max(512), start: ... default(0), maxResults:
    ... max(50).default(10), sortBy: z.enum(["relevance", "submittedDate", "lastUpdatedDate"])
    .default("submittedDate"), sortOrder: z.enum(["ascending", "descending"]).default("descending") })"
    "ArxivSearchOutput = z.object({ items: z.array(z.object({ id, title, summary, published, updated,
    authors, url, pdfUrl (optional), categories, doi (optional) })), source: z.literal("arxiv"), brand:
    z.literal("brAInwav") })"
    "querying for "machine learning transformers", and verifying structured paper metadata returned
    with titles, authors, abstracts, and URLs"

    The replay answers with its recorded feed (``query_search_testing_start0_max10.xml``).
    """
    response = _post(_rest(searcher), "/v1/arxiv/search", SEED_002_SEARCH)
    assert response.status_code == 200, response.content
    rest = response.json()
    # The same search over MCP is served from the stored result; only the second query reaches arXiv.
    over_mcp = _mcp(
        cortex_server,
        searcher,
        ("arxiv.search", SEED_002_SEARCH),
        ("arxiv.search", {"query": "find recent papers on transformer architectures"}),
    )
    for body in (rest, *(_ok(result) for result in over_mcp)):
        assert _schema_errors(ARXIV_SEARCH_OUTPUT, body) == []
        assert (body["status"], body["source"], body["brand"]) == ("succeeded", "arxiv", "brAInwav")
        assert len(body["items"]) == 10
    assert _ok(over_mcp[0])["items"] == rest["items"]
    # User Story 4: "A2A events are emitted for tool start and success **And** events include
    # correlation IDs and execution metadata".
    events = Event.objects.filter(payload__runId=rest["runId"]).order_by("pk")
    assert [(event.name, event.payload["brand"], bool(event.correlation_id)) for event in events] == [
        ("arxiv.tool.started", "brAInwav", True),
        ("arxiv.tool.completed", "brAInwav", True),
    ]
    assert events[1].payload["parameters"]["query"] == SEED_002_SEARCH["query"]
    first = rest["items"][0]
    assert first["title"] and first["authors"] and first["summary"] and first["url"].startswith("http")
    # What reached arXiv: the seed's fields as arXiv's parameters; the defaults are the seed's.
    sent = [
        {key: arrival.params[key][0] for key in ("start", "max_results", "sortBy", "sortOrder")}
        for arrival in arxiv.arrivals
    ]
    assert (
        sent
        == [{"start": "0", "max_results": "10", "sortBy": "submittedDate", "sortOrder": "descending"}] * 2
    )
    assert [arrival.params["search_query"][0] for arrival in arxiv.arrivals] == [
        "(ti:machine OR abs:machine) AND (ti:learning OR abs:learning) AND "
        "(ti:transformers OR abs:transformers)",
        "(ti:find OR abs:find) AND (ti:recent OR abs:recent) AND (ti:papers OR abs:papers) AND "
        "(ti:on OR abs:on) AND (ti:transformer OR abs:transformer) AND "
        "(ti:architectures OR abs:architectures)",
    ]


def test_002_the_tool_is_described_as_the_brAInwav_arxiv_integration(
    cortex_server, registry_committed
) -> None:
    """002_e3aff1b9f3a772df.txt: "Tool descriptions include "brAInwav arXiv integration""."""

    async def go() -> list[Any]:
        async with http_session(cortex_server.mcp_url) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in asyncio.run(go())}
    assert tools["arxiv.search"].description.startswith("brAInwav arXiv integration: ")
    assert tools["arxiv.lookup"].description.startswith("brAInwav arXiv integration: ")
    service_map = _rest().get("/v1/connectors/service-map").json()
    arxiv_entry = next(entry for entry in service_map["connectors"] if entry["id"] == "arxiv")
    assert arxiv_entry["remoteTools"][0]["description"].startswith("brAInwav arXiv integration: ")


@pytest.fixture
def arxiv_down(settings) -> Iterator[ReplayArxiv]:
    server = ReplayArxiv().start()
    server.default = ArxivReply(status=503)
    settings.ARXIV_API_URL = server.url
    settings.ARXIV_MIN_INTERVAL_SECONDS = 0.05
    settings.ARXIV_BACKOFF_BASE_SECONDS = 0.01
    settings.ARXIV_BACKOFF_MAX_SECONDS = 0.05
    arxiv_limiter().reset()
    yield server
    server.stop()
    arxiv_limiter().reset()


def test_002_arxiv_unavailable_degrades_to_local_papers_with_the_brand(
    cortex_server, registry_committed, celery_worker, arxiv_down, searcher
) -> None:
    """002_e3aff1b9f3a772df.txt, User Story 1, scenario 2:

    "**Given** the arXiv MCP server is unavailable **When** an agent attempts to use the arXiv tool
    **Then** the agent gracefully degrades to internal knowledge **And** logs a structured error with
    "[brAInwav]" branding **And** continues to provide useful responses from local sources"
    "Error messages include "[brAInwav]" prefix"
    """
    Paper.objects.create(**TRANSFORMER)
    search = {"query": "transformer attention", "maxResults": 5}
    response = _post(_rest(searcher), "/v1/arxiv/search", search)
    assert response.status_code == 200, response.content
    # User Story 2: "requests are retried up to 3 times".
    assert len(arxiv_down.arrivals) == 4
    (over_mcp,) = _mcp(
        cortex_server, searcher, ("arxiv.search", {**search, "query": "attention transformer"})
    )
    for body in (response.json(), _ok(over_mcp)):
        assert (body["source"], body["brand"], body["degraded"]) == ("stored", "brAInwav", True)
        assert body["items"] == [TRANSFORMER_ITEM]
        assert body["reason"] == (
            "[brAInwav] arXiv is unavailable (arXiv is busy (HTTP 503); retry later); "
            "answered from 1 matching stored papers."
        )
    assert text_of(over_mcp).splitlines()[0] == _ok(over_mcp)["reason"]
    lookup = _post(_rest(searcher), "/v1/arxiv/lookup", {"ids": ["1706.03762"]}).json()
    assert lookup["error"]["message"] == "[brAInwav] arXiv is busy (HTTP 503); retry later"


def test_002_queries_within_three_seconds_are_spaced_three_seconds_apart(
    cortex_server,
    registry_committed,
    celery_worker,
    arxiv,  # noqa: F811
    searcher,
    *,
    settings,
) -> None:
    """002_e3aff1b9f3a772df.txt, User Story 2:

    "**Given** multiple arXiv queries are made within 3 seconds **When** the rate limiter processes the
    requests **Then** only one request is sent immediately **And** subsequent requests are queued with
    minimum 3-second intervals **And** users receive timely responses despite throttling"
    """
    settings.ARXIV_MIN_INTERVAL_SECONDS = 3.0  # the seed's rule (the setting's default)
    arxiv_limiter().reset()
    first = _post(_rest(searcher), "/v1/arxiv/search", {"query": "rate limited one"})
    (second,) = _mcp(cortex_server, searcher, ("arxiv.search", {"query": "rate limited two"}))
    assert first.json()["status"] == _ok(second)["status"] == "succeeded"
    assert len(arxiv.arrivals) == 2
    # The spacing is claimed just before each request is sent (apps/arxiv/clients.py); the replay
    # stamps arrivals in its own thread, so a first request slowed between claim and arrival (the
    # live server, the worker and the test share this process and a loaded machine) shortens the gap
    # measured here: 2.951 s was seen once with eight test sessions on two cores. 100 ms allows for
    # that; tests/arxiv/test_cross_process.py holds the 10 ms bound on its quieter path.
    assert min(arxiv.gaps()) >= 3.0 - 0.1, arxiv.gaps()


# ============================================================================================ seed 003
# 003_e0e564347db76ddd.txt — the seven ontology tools: "Request bodies use camelCase keys (startIri,
# relationshipTypes, agentContext). Response payloads use snake_case keys".

CW = NAMESPACE


def _ontology_both(
    cortex_server: Any, tool: str, body: dict[str, Any], token: str | None = None
) -> dict[str, Any]:
    """POST /ontology-agent/<tool> and MCP ontology_<tool>: the same answer; returns it."""
    response = _post(_rest(token), f"/ontology-agent/{tool}", body)
    assert response.status_code == 200, response.content
    (over_mcp,) = _mcp(cortex_server, token, (f"ontology_{tool}", body))
    # MCP's structured content leaves out what REST sends as null (query_type, result of a refusal).
    assert _ok(over_mcp) == {key: value for key, value in response.json().items() if value is not None}
    return response.json()


def test_003_discover(cortex_server, committed_ontology) -> None:  # noqa: F811
    """003_e0e564347db76ddd.txt, ontology_discover: "Input | query | string | yes | limit | integer | no
    | 20 | domain | string | no" → "{ "success": true, "count": 2, "results": [ { "iri", "preferred_term",
    "definition_summary", "relevance_score", "quality_score", "domain", "relationships": [ { "rel_type",
    "target_iri", "target_term" } ], "whelk_inferred" } ] }"
    """
    body = _ontology_both(
        cortex_server, "discover", {"query": "SQL injection", "limit": 5, "domain": "security"}
    )
    assert body["success"] is True and body["count"] == len(body["results"]) <= 5
    assert body["results"], body
    for result in body["results"]:
        assert sorted(result) == sorted(
            ["iri", "preferred_term", "definition_summary", "relevance_score", "quality_score", "domain",
             "relationships", "whelk_inferred"]
        )  # fmt: skip
        assert result["domain"] == "security"
        for relationship in result["relationships"]:
            assert sorted(relationship) == ["rel_type", "target_iri", "target_term"]
    assert body["results"][0]["iri"] == CW + "CWE89SqlInjection"


def test_003_read(cortex_server, committed_ontology) -> None:  # noqa: F811
    """003_e0e564347db76ddd.txt, ontology_read: "Input | iri | string | yes" → "{ "success": true,
    "note": EnrichedNote }" with "iri, term_id, preferred_term, markdown_content, ontology_metadata
    (owl_class, physicality, role, domain, quality_score, authority_score, maturity, status,
    parent_classes[]), whelk_axioms { axiom_type, subject, object, is_inferred }, related_notes { iri,
    preferred_term, relationship_type, direction ("outgoing"|"incoming"), summary }, schema_context"
    """
    body = _ontology_both(cortex_server, "read", {"iri": CW + "CWE89SqlInjection"})
    note = body["note"]
    assert body["success"] is True
    assert sorted(note) == sorted(
        ["iri", "term_id", "preferred_term", "markdown_content", "ontology_metadata", "whelk_axioms",
         "related_notes", "schema_context"]
    )  # fmt: skip
    assert sorted(note["ontology_metadata"]) == sorted(
        ["owl_class", "physicality", "role", "domain", "quality_score", "authority_score", "maturity",
         "status", "parent_classes"]
    )  # fmt: skip
    assert note["iri"] == CW + "CWE89SqlInjection"
    assert {
        sorted(axiom) == ["axiom_type", "is_inferred", "object", "subject"] for axiom in note["whelk_axioms"]
    } == {True}
    assert {axiom["is_inferred"] for axiom in note["whelk_axioms"]} == {False, True}
    assert {related["direction"] for related in note["related_notes"]} <= {"outgoing", "incoming"}
    for related in note["related_notes"]:
        assert sorted(related) == ["direction", "iri", "preferred_term", "relationship_type", "summary"]
    assert note["schema_context"]


def test_003_query_with_the_seeds_cypher(cortex_server, committed_ontology) -> None:  # noqa: F811
    """003_e0e564347db76ddd.txt, ontology_query: "Input | cypher | string | yes | Cypher query
    (read-only)" → "{ "success": true, "validation": { "valid": true, "errors": [], "hints": [...] } }"
    "the row payload follows the QueryResult shape: { "columns": [...], "rows": [ { col: value, ... } ],
    "row_count": n }. Mutating Cypher is rejected at validation — writes go through ontology_propose."
    """
    cypher = "MATCH (a)-[:subClassOf]->(b) WHERE a.iri = 'cw:CWE89SqlInjection' RETURN a, b LIMIT 10"
    body = _ontology_both(cortex_server, "query", {"cypher": cypher})
    assert body["success"] is True
    assert body["validation"] == {"valid": True, "errors": [], "hints": []}
    assert body["result"]["columns"] == ["a", "b"]
    assert body["result"]["row_count"] == len(body["result"]["rows"]) == 6
    assert CW + "CWE943ImproperNeutralizationInDataQueryLogic" in {row["b"] for row in body["result"]["rows"]}
    refused = _ontology_both(cortex_server, "query", {"cypher": "CREATE (a:Class {name: 'X'})"})
    assert refused["success"] is False and refused["validation"]["valid"] is False
    assert refused["validation"]["errors"] == [
        "Cypher CREATE changes the graph: ontology_query is read-only; changes go through ontology_propose."
    ]


def test_003_traverse_with_camel_case_input(cortex_server, committed_ontology) -> None:  # noqa: F811
    """003_e0e564347db76ddd.txt, ontology_traverse: "Input | startIri | string | yes | depth | integer |
    no | 3 | relationshipTypes | string[] | no" → "{ "success": true, "traversal": { "start_iri",
    "nodes": [ { "iri", "preferred_term", "domain", "depth" } ], "edges": [ { "source_iri",
    "target_iri", "relationship_type" } ] } }"
    """
    body = _ontology_both(
        cortex_server,
        "traverse",
        {"startIri": CW + "CWE89SqlInjection", "depth": 2, "relationshipTypes": ["subClassOf"]},
    )
    traversal = body["traversal"]
    assert body["success"] is True and traversal["start_iri"] == CW + "CWE89SqlInjection"
    assert traversal["nodes"][0] == {
        "iri": CW + "CWE89SqlInjection",
        "preferred_term": traversal["nodes"][0]["preferred_term"],
        "domain": "security",
        "depth": 0,
    }
    assert {node["depth"] for node in traversal["nodes"]} == {0, 1, 2}
    assert {edge["relationship_type"] for edge in traversal["edges"]} == {"subClassOf"}
    for edge in traversal["edges"]:
        assert sorted(edge) == ["relationship_type", "source_iri", "target_iri"]


@pytest.fixture
def proposer(make_token) -> str:
    token, raw = make_token("write", name="seed-003-proposer")
    propose_limiter(token=token).reset()
    return raw


def test_003_propose_create_and_amend(cortex_server, committed_ontology, proposer) -> None:  # noqa: F811
    """003_e0e564347db76ddd.txt, ontology_propose: "Input — { "proposal": ProposeInput, "agentContext":
    AgentContext }", "action: "create" — a NoteProposal: preferred_term, definition, owl_class,
    physicality / role / domain, is_subclass_of, relationships, alt_terms, owner_user_id", "action:
    "amend" — { "target_iri": string, "amendment": NoteAmendment }", "agentContext is an AgentContext
    (agent_id, agent_type, task_description, session_id?, confidence, user_id)" → "{ "success": true,
    "proposal": ProposalResult }": "proposal_id, action, target_iri, consistency { consistent,
    new_subsumptions, explanation? }, quality_score, markdown_preview, pr_url?, status | enum | Staged
    | PRCreated | Merged | Rejected"
    """
    agent_context = {
        "agent_id": "agent-7",
        "agent_type": "researcher",
        "task_description": "Add the template-injection weakness",
        "session_id": "s-1",
        "confidence": 0.8,
        "user_id": "someone",
    }
    create = {
        "action": "create",
        "preferred_term": "Server-Side Template Injection",
        "definition": "An injection weakness in which user input is embedded into a server-side template "
        "and evaluated by the template engine.",
        "owl_class": "cw:ServerSideTemplateInjection",
        "physicality": "VirtualEntity",
        "role": "Quality",
        "domain": "security",
        "is_subclass_of": ["cw:CWE74Injection"],
        "relationships": {"relates-to": ["cw:Injection"]},
        "alt_terms": ["SSTI"],
    }
    amend = {
        "action": "amend",
        "target_iri": "cw:CWE89SqlInjection",
        "amendment": {"add_alt_terms": ["SQLi attack"], "update_quality_score": 0.9},
    }
    results = []
    for proposal in (create, amend):
        body = {"proposal": proposal, "agentContext": agent_context}
        response = _post(_rest(proposer), "/ontology-agent/propose", body)
        assert response.status_code == 200, response.content
        (over_mcp,) = _mcp(cortex_server, proposer, ("ontology_propose", body))
        results += [response.json(), _ok(over_mcp)]
    for body, action, target in zip(
        results,
        ["create", "create", "amend", "amend"],
        [CW + "ServerSideTemplateInjection"] * 2 + [CW + "CWE89SqlInjection"] * 2,
        strict=True,
    ):
        assert body["success"] is True
        proposal = body["proposal"]
        assert {
            "proposal_id",
            "action",
            "target_iri",
            "consistency",
            "quality_score",
            "markdown_preview",
            "status",
        } <= set(proposal)
        assert (proposal["action"], proposal["target_iri"], proposal["status"]) == (action, target, "Staged")
        assert {"consistent", "new_subsumptions"} <= set(proposal["consistency"])
        assert proposal["consistency"]["consistent"] is True
        assert "pr_url" not in proposal  # no pull request is opened
    # "agent_id and user_id are overwritten server-side ... and are not trusted from the body."
    token = ApiToken.objects.get(name="seed-003-proposer")
    assert {
        (row.agent_context["agent_id"], row.agent_context["user_id"], row.agent_context["claimed_agent_id"])
        for row in OntologyProposal.objects.all()
    } == {(f"token:{token.prefix}", f"token:{token.pk}", "agent-7")}


def test_003_validate(cortex_server, committed_ontology) -> None:  # noqa: F811
    """003_e0e564347db76ddd.txt, ontology_validate: "Input — { "axioms": [ { "axiom_type", "subject",
    "object" }, ... ] }" → "{ "success": true, "valid": true, "errors": [], "hints": [], "axiom_count": 3 }"
    """
    axioms = [
        {"axiom_type": "SubClassOf", "subject": "cw:CWE89SqlInjection", "object": "cw:Injection"},
        {"axiom_type": "SubClassOf", "subject": "cw:CWE79CrossSiteScripting", "object": "cw:Injection"},
        {"axiom_type": "SubClassOf", "subject": "cw:CWE78OsCommandInjection", "object": "cw:Injection"},
    ]
    body = _ontology_both(cortex_server, "validate", {"axioms": axioms})
    assert body == {"success": True, "valid": True, "errors": [], "hints": [], "axiom_count": 3}


def test_003_status(cortex_server, committed_ontology) -> None:  # noqa: F811
    """003_e0e564347db76ddd.txt, ontology_status: "No input. Endpoint: GET /ontology-agent/status" →
    "{ "service": "ontology-agent", "status": "healthy", "capabilities": [ "ontology_discover",
    "ontology_read", "ontology_query", "ontology_traverse", "ontology_propose", "ontology_validate" ] }"
    """
    response = _rest().get("/ontology-agent/status")
    assert response.status_code == 200
    body = response.json()
    (over_mcp,) = _mcp(cortex_server, None, ("ontology_status", {}))
    assert _ok(over_mcp) == body
    assert (body["service"], body["status"]) == ("ontology-agent", "healthy")
    assert body["capabilities"] == [
        "ontology_discover",
        "ontology_read",
        "ontology_query",
        "ontology_traverse",
        "ontology_propose",
        "ontology_validate",
    ]


# ============================================================================================ seed 004
# 004_8b1764434aa1ddc5.txt — tell/ask over MCP (stdio and HTTP) and over HTTP.

SEED_004_FACT = {"content": "The Bluefin launch password is kept in the team vault under ops/bluefin."}
SEED_004_QUESTION = {"question": "Where is the Bluefin launch password kept?"}


def _assert_told_and_answered(told: dict[str, Any], asked: dict[str, Any]) -> None:
    assert told["status"] == "stored"
    assert Memory.objects.get(pk=told["id"]).content == SEED_004_FACT["content"]
    assert asked["memories"][0]["id"] == told["id"]
    assert asked["memories"][0]["content"] == SEED_004_FACT["content"]
    assert "ops/bluefin" in asked["answer"]["text"], asked["answer"]


def test_004_tell_and_ask_over_http(cortex_server, make_token) -> None:
    """004_8b1764434aa1ddc5.txt:

    "Tell Operation: Method: `tools/call` with operation `tell` ... `name`: Set to `tell`.
    `arguments`: Contains the `content` (fact) to be stored." "Ask Operation: ... `name`: Set to `ask`.
    `arguments`: Contains the `question` to be queried." "`tell` response confirms the fact was stored.
    `ask` response contains the expected answer." "Protocol Entry: HTTP `/tell` endpoint OR STDIO
    `tools/call` with `name: "tell"`"
    """
    _, rest_token = make_token("read", "write", name="seed-004-rest")
    told = _post(_rest(rest_token), "/v1/memory/tell", SEED_004_FACT)
    assert told.status_code == 200, told.content
    asked = _post(_rest(rest_token), "/v1/memory/ask", SEED_004_QUESTION)
    assert asked.status_code == 200, asked.content
    _assert_told_and_answered(told.json(), asked.json())

    _, mcp_token = make_token("read", "write", name="seed-004-mcp-http")
    told_mcp, asked_mcp = _mcp(cortex_server, mcp_token, ("tell", SEED_004_FACT), ("ask", SEED_004_QUESTION))
    _assert_told_and_answered(_ok(told_mcp), _ok(asked_mcp))


def test_004_initialize_tell_ask_over_stdio_with_clean_json(make_token) -> None:
    """004_8b1764434aa1ddc5.txt:

    "Initialization: ... Method: `initialize` Key Parameters: `protocolVersion` ... `capabilities` ...
    `clientInfo`" "`initialize` response includes `protocolVersion`." "Ensures STDIO output is clean
    JSON without pollution." "STDIO pollution (non-JSON data in stdout)."
    """
    _, token = make_token("read", "write", name="seed-004-stdio")
    server = RawStdio(token, LOG_LEVEL="DEBUG")
    try:
        initialized = server.initialize()  # protocolVersion, capabilities, clientInfo
        told = server.request("tools/call", {"name": "tell", "arguments": SEED_004_FACT})
        asked = server.request("tools/call", {"name": "ask", "arguments": SEED_004_QUESTION})
    finally:
        assert server.close_stdin_and_wait() == 0
    assert initialized["result"]["protocolVersion"] == "2025-06-18"
    assert told["result"]["isError"] is False and asked["result"]["isError"] is False, (told, asked)
    _assert_told_and_answered(told["result"]["structuredContent"], asked["result"]["structuredContent"])
    assert len(server.stdout_lines) == 3
    assert [json.loads(line)["jsonrpc"] for line in server.stdout_lines] == ["2.0"] * 3
