"""The service map against seed 000's zod schemas, transcribed strictly to JSON Schema (issue 25, item 1).

A Cortex-OS consumer parses the map with ``ConnectorServiceEntrySchema`` and
``ConnectorRemoteToolSchema``, both ``.strict()``: one key the seed does not name (an ``inputSchema``,
say) and the whole map is rejected. Tool schemas belong on ``/v1/tools`` and MCP ``tools/list``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from jsonschema import Draft202012Validator

from apps.connectors.models import RemoteTool
from apps.core.signing import verify

# ConnectorRemoteToolSchema, as written in the seed's "Data Model":
#   z.object({name: z.string().min(1), description: z.string().optional(),
#             tags: z.array(z.string()).optional(), scopes: z.array(z.string()).optional()}).strict()
REMOTE_TOOL = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "scopes": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name"],
    "additionalProperties": False,
}

# ConnectorServiceEntrySchema is ".strict()" with "// ... existing fields ..." plus an optional
# remoteTools. The seed does not list the existing fields; this transcription takes exactly the fields
# of the connector in the seed's example response ("API Contracts"), all of them present there, and
# types them as the example does. remoteTools is the one optional field.
CONNECTOR_ENTRY = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "version": {"type": "string"},
        "endpoint": {"type": "string"},
        "auth": {
            "type": "object",
            "properties": {"type": {"type": "string"}},
            "required": ["type"],
            "additionalProperties": False,
        },
        "scopes": {"type": "array", "items": {"type": "string"}},
        "ttlSeconds": {"type": "integer"},
        "enabled": {"type": "boolean"},
        # The example's metadata is free-form (dumpDate beside brand); brand is the seed's requirement.
        "metadata": {"type": "object", "properties": {"brand": {"const": "brAInwav"}}, "required": ["brand"]},
        "remoteTools": {"type": "array", "items": REMOTE_TOOL},
    },
    "required": ["id", "version", "endpoint", "auth", "scopes", "ttlSeconds", "enabled", "metadata"],
    "additionalProperties": False,
}

# The root of the example response; the seed gives no zod schema for it, so the example's keys, no others.
SERVICE_MAP = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9A-HJKMNP-TV-Z]{26}$"},  # a ULID, as the example's
        "brand": {"const": "brAInwav"},
        "generatedAt": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"},
        "ttlSeconds": {"type": "integer"},
        "connectors": {"type": "array", "items": CONNECTOR_ENTRY},
        "signature": {"type": "string", "pattern": "^[A-Za-z0-9_-]{43}$"},  # base64url, no padding
    },
    "required": ["id", "brand", "generatedAt", "ttlSeconds", "connectors", "signature"],
    "additionalProperties": False,
}

VALIDATOR = Draft202012Validator(SERVICE_MAP)
VECTOR = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "contracts" / "service-map-signing-vector.json").read_text(
        "utf-8"
    )
)


def _errors(document: dict) -> list[str]:
    return sorted(f"{error.json_path}: {error.message}" for error in VALIDATOR.iter_errors(document))


def _service_map() -> dict:
    response = Client().get("/v1/connectors/service-map")
    assert response.status_code == 200
    return response.json()


def test_the_transcription_accepts_the_seeds_own_example() -> None:
    """Checks the transcription itself: the contract vector's payload is the seed's example."""
    assert _errors({**VECTOR["payload"], "signature": VECTOR["signature"]}) == []
    tool = VECTOR["payload"]["connectors"][1]["remoteTools"][0]
    with_schema = {**tool, "inputSchema": {"type": "object"}}
    payload = json.loads(json.dumps(VECTOR["payload"]))
    payload["connectors"][1]["remoteTools"][0] = with_schema
    assert _errors({**payload, "signature": VECTOR["signature"]}) == [
        "$.connectors[1].remoteTools[0]: Additional properties are not allowed ('inputSchema' was unexpected)"
    ]


def test_the_default_manifests_map_is_exactly_the_seeds_contract(default_registry: dict) -> None:
    body = _service_map()
    assert _errors(body) == []
    signature = body.pop("signature")
    assert verify(body, signature=signature, key=settings.CORTEX_SIGNING_KEY)
    wikidata = next(entry for entry in body["connectors"] if entry["id"] == "wikidata")
    assert [sorted(tool) for tool in wikidata["remoteTools"]] == [
        ["description", "name", "scopes", "tags"],
        ["description", "name", "scopes", "tags"],
        ["description", "name", "tags"],  # get_claims declares no scopes: omitted, not [] or null
        ["description", "name", "tags"],
        ["description", "name", "scopes", "tags"],
    ]
    assert "null" not in json.dumps(body)


@pytest.mark.django_db
def test_a_tool_with_only_a_name_publishes_only_its_name(default_registry: dict) -> None:
    RemoteTool.objects.filter(name="wikidata.sparql").update(description="", tags=[], scopes=[])
    body = _service_map()
    assert _errors(body) == []
    wikidata = next(entry for entry in body["connectors"] if entry["id"] == "wikidata")
    assert wikidata["remoteTools"][3] == {"name": "wikidata.sparql"}
