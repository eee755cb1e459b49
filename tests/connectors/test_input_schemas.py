"""Every published tool has an input schema (issue 16, item 3): in ``GET /v1/tools`` and in MCP
``tools/list`` — a native tool's from the model its endpoint validates with, an upstream tool's as
synced, the manifest's declared one until a sync has run. Not in the service map: seed 000's tool entry
is strict (issue 25, item 1; ``test_service_map_seed_contract``)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from jsonschema import Draft202012Validator

from apps.arxiv.schemas import SearchIn
from apps.connectors.gateway import connector_sync
from apps.connectors.models import Connector, RemoteTool
from apps.connectors.selectors import UNDECLARED_INPUT_SCHEMA
from apps.core.signing import verify
from apps.mcp_server.services import mcp_tools_list
from apps.wikidata.adapters import get_claims_schema
from tests.connectors.mcp_server import mcp_servers_fixture, wikidata_mcp_fixture  # noqa: F401

pytestmark = pytest.mark.django_db

HIERARCHY_SCHEMA = {
    "properties": {"entity_id": {"type": "string"}, "depth": {"type": "integer"}},
    "required": ["entity_id"],
    "type": "object",
}


def _v1_tools() -> dict[str, dict[str, Any]]:
    response = Client().get("/v1/tools")
    assert response.status_code == 200
    return {tool["name"]: tool["inputSchema"] for tool in response.json()}


def _service_map_tools() -> dict[str, dict[str, Any]]:
    """The map's tool entries by name (which carry no input schema)."""
    body = Client().get("/v1/connectors/service-map").json()
    signature = body.pop("signature")
    assert verify(body, signature=signature, key=settings.CORTEX_SIGNING_KEY)
    return {
        tool["name"]: tool for connector in body["connectors"] for tool in connector.get("remoteTools", [])
    }


def _mcp_tools() -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool["inputSchema"] for tool in mcp_tools_list()}


def _assert_object_schema(where: str, name: str, schema: Any) -> None:
    assert isinstance(schema, dict) and schema.get("type") == "object", (where, name, schema)
    Draft202012Validator.check_schema(schema)


def test_every_tool_everywhere_has_an_object_input_schema(default_registry: dict) -> None:
    # One tool the operator added by hand: nothing declared, no adapter, never synced.
    RemoteTool.objects.create(
        connector=Connector.objects.get(slug="wikidata"), name="wikidata.labels", description="Labels"
    )
    surfaces = {"/v1/tools": _v1_tools(), "MCP": _mcp_tools()}

    published = {tool.name for tool in RemoteTool.objects.published()}
    assert set(surfaces["/v1/tools"]) == published
    service_map = _service_map_tools()
    assert set(service_map) == published
    assert [name for name, tool in service_map.items() if "inputSchema" in tool] == []
    assert published <= set(surfaces["MCP"])
    assert len(surfaces["MCP"]) > len(published)  # CortexWeb's own tools besides the catalogue
    for where, tools in surfaces.items():
        for name, schema in tools.items():
            _assert_object_schema(where, name, schema)
    for tools in surfaces.values():
        assert tools["wikidata.labels"] == UNDECLARED_INPUT_SCHEMA


def test_native_tool_schema_is_the_model_its_endpoint_validates_with(default_registry: dict) -> None:
    expected = SearchIn.model_json_schema()  # POST /v1/arxiv/search's body
    assert _v1_tools()["arxiv.search"] == expected
    assert _mcp_tools()["arxiv.search"] == expected
    assert expected["required"] == ["query"] and expected["additionalProperties"] is False


def test_upstream_tools_publish_the_declared_schema_until_a_sync_records_the_upstreams(
    wikidata_mcp, default_manifest: dict, django_capture_on_commit_callbacks
) -> None:
    declared = {
        tool["name"]: tool["inputSchema"] for tool in default_manifest["connectors"][2]["remoteTools"]
    }
    assert set(declared) == {tool.name for tool in RemoteTool.objects.filter(connector__slug="wikidata")}
    # get_claims also publishes seed 000's qid/qids shape (test_get_claims_shapes).
    declared["wikidata.get_claims"] = get_claims_schema(copy.deepcopy(declared["wikidata.get_claims"]))
    for tools in (_v1_tools(), _mcp_tools()):
        assert {name: tools[name] for name in declared} == declared

    wikidata_mcp.set_input_schema("get_instance_and_subclass_hierarchy", HIERARCHY_SCHEMA)
    with django_capture_on_commit_callbacks(execute=True):  # the registry-changed signal
        connector_sync(slug="wikidata")

    for tools in (_v1_tools(), _mcp_tools()):
        assert tools["wikidata.get_hierarchy"] == HIERARCHY_SCHEMA
        assert tools["wikidata.sparql"] == declared["wikidata.sparql"]  # the upstream's equals it


def test_declared_schemas_are_the_recorded_upstreams(default_manifest: dict) -> None:
    """The manifest declares what the real Wikidata MCP server listed (tests/fixtures/mcp)."""
    recorded = json.loads(
        (settings.BASE_DIR / "tests" / "fixtures" / "mcp" / "tools_list.result.json").read_text("utf-8")
    )
    upstream = {tool["name"]: tool["inputSchema"] for tool in recorded["result"]["tools"]}
    for tool in default_manifest["connectors"][2]["remoteTools"]:
        assert tool["inputSchema"] == upstream[tool["upstreamName"]], tool["name"]
