"""``connector_sync`` against a real MCP server: upstream names, schemas and the three kinds of drift."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from apps.connectors import adapters
from apps.connectors.gateway import connector_sync, connector_test_connection
from apps.connectors.models import Connector, DriftState, RemoteTool
from apps.core.errors import NotFound, UpstreamError, ValidationFailed
from apps.core.models import Event
from tests.connectors.mcp_server import RECORDED_TOOLS, free_port, mcp_servers_fixture, wikidata_mcp_fixture  # noqa: F401

UPSTREAM = {tool["name"]: tool for tool in RECORDED_TOOLS}
DECLARED = {
    "wikidata.vector_search_items": "search_items",
    "wikidata.vector_search_properties": "search_properties",
    "wikidata.get_claims": "get_statements",
    "wikidata.sparql": "execute_sparql",
    "wikidata.get_hierarchy": "get_instance_and_subclass_hierarchy",
}


def _catalogue() -> dict[str, tuple]:
    """What the operator owns: it must never change in a sync."""
    return {
        tool.name: (tool.description, tool.tags, tool.scopes, tool.position, tool.declared_input_schema)
        for tool in RemoteTool.objects.filter(connector__slug="wikidata")
    }


def _tools() -> dict[str, RemoteTool]:
    return {tool.name: tool for tool in RemoteTool.objects.filter(connector__slug="wikidata")}


@pytest.mark.parametrize("wikidata_mcp", ["stateless", "stateful"], indirect=True)
def test_sync_records_upstream_names_descriptions_and_schemas(wikidata_mcp, settings) -> None:
    catalogue = _catalogue()

    report = connector_sync(slug="wikidata")

    assert report.as_dict() == {
        "connector": "wikidata",
        "upstreamTools": 6,
        "inSync": sorted(DECLARED, key=lambda name: list(DECLARED).index(name)),
        "schemaChanged": [],
        "descriptionChanged": [],
        "missingUpstream": [],
        "undeclaredUpstream": ["get_statement_values"],
        "renamed": {},
        "changed": {},
        "schemaRefused": {},
    }
    assert report.summary() == (
        "wikidata: 6 upstream tools; 5 in sync (wikidata.vector_search_items, "
        "wikidata.vector_search_properties, wikidata.get_claims, wikidata.sparql, wikidata.get_hierarchy); "
        "0 schema changed; 0 missing upstream; 1 undeclared upstream (get_statement_values)"
    )
    for name, tool in _tools().items():
        upstream = UPSTREAM[DECLARED[name]]
        assert tool.upstream_name == DECLARED[name]
        assert tool.upstream_input_schema == upstream["inputSchema"]
        assert tool.input_schema == upstream["inputSchema"]
        assert tool.upstream_description == upstream["description"]
        assert tool.annotations == {}
        assert tool.drift == DriftState.IN_SYNC
        assert tool.last_seen_upstream_at is not None
    assert _catalogue() == catalogue
    connector = Connector.objects.get(slug="wikidata")
    assert connector.undeclared_upstream_tools == ["get_statement_values"]
    assert connector.last_synced_at is not None
    assert connector.last_sync_error == ""
    event = Event.objects.get(name="connectors.synced")
    assert event.payload == {**report.as_dict(), "trigger": "manual"}

    # The SDK's session handling: a stateful server's id is echoed on every later request; none otherwise.
    methods = [request["method"] for request in wikidata_mcp.requests]
    session_ids = wikidata_mcp.session_ids
    if wikidata_mcp.stateless:
        assert methods == ["POST", "POST", "POST"]  # initialize, initialized, tools/list
        assert session_ids == [None, None, None]
    else:
        assert methods[0] == "POST" and methods[-1] == "DELETE"  # the session is closed after use
        assert session_ids[0] is None
        assert len(set(session_ids[1:])) == 1 and session_ids[1]
    assert {request["headers"]["user-agent"] for request in wikidata_mcp.requests} == {
        settings.CORTEX_USER_AGENT
    }


def test_sync_flags_missing_changed_and_undeclared_tools_and_follows_renames(wikidata_mcp) -> None:
    connector_sync(slug="wikidata")
    catalogue = _catalogue()
    new_schema = {
        "properties": {"entity_id": {"type": "string"}, "depth": {"type": "integer"}},
        "required": ["entity_id"],
        "type": "object",
    }
    wikidata_mcp.remove_tool("execute_sparql")
    wikidata_mcp.set_input_schema("get_instance_and_subclass_hierarchy", new_schema)
    wikidata_mcp.rename_tool("search_items", "vector_search_items")  # an old name, known as an alias
    wikidata_mcp.add_tool("get_labels", {"type": "object", "properties": {"entity_id": {"type": "string"}}})

    report = connector_sync(slug="wikidata")

    assert report.in_sync == [
        "wikidata.vector_search_items",
        "wikidata.vector_search_properties",
        "wikidata.get_claims",
    ]
    assert report.schema_changed == ["wikidata.get_hierarchy"]
    assert report.missing_upstream == ["wikidata.sparql"]
    assert report.undeclared_upstream == ["get_labels", "get_statement_values"]
    assert report.renamed == {"wikidata.vector_search_items": "vector_search_items"}
    tools = _tools()
    assert tools["wikidata.sparql"].drift == DriftState.MISSING_UPSTREAM
    assert tools["wikidata.sparql"].upstream_name == "execute_sparql"  # the last name it had
    assert tools["wikidata.get_hierarchy"].drift == DriftState.SCHEMA_CHANGED
    # The rug-pull guard: the changed schema is held, the approved one still in use.
    assert (
        tools["wikidata.get_hierarchy"].upstream_input_schema
        == UPSTREAM["get_instance_and_subclass_hierarchy"]["inputSchema"]
    )
    assert tools["wikidata.get_hierarchy"].pending_input_schema == new_schema
    assert tools["wikidata.get_hierarchy"].pending_changes == ["input schema widened: new arguments: depth"]
    assert tools["wikidata.vector_search_items"].drift == DriftState.IN_SYNC
    assert tools["wikidata.vector_search_items"].upstream_name == "vector_search_items"
    assert sorted(tool.name for tool in RemoteTool.objects.drifted()) == [
        "wikidata.get_hierarchy",
        "wikidata.sparql",
    ]
    assert Connector.objects.get(slug="wikidata").undeclared_upstream_tools == [
        "get_labels",
        "get_statement_values",
    ]
    assert _catalogue() == catalogue  # names, descriptions, tags, scopes untouched

    # Held until approved: the next sync with the same schema still reports it, as nothing new.
    again = connector_sync(slug="wikidata")
    assert again.schema_changed == ["wikidata.get_hierarchy"]
    assert again.changed == {}


def test_sync_command_prints_the_summary(wikidata_mcp) -> None:
    out = io.StringIO()
    call_command("connectors", "sync", "wikidata", stdout=out)
    assert out.getvalue() == (
        "wikidata: 6 upstream tools; 5 in sync (wikidata.vector_search_items, "
        "wikidata.vector_search_properties, wikidata.get_claims, wikidata.sparql, wikidata.get_hierarchy); "
        "0 schema changed; 0 missing upstream; 1 undeclared upstream (get_statement_values)\n"
    )


def test_sync_of_unknown_or_native_connector_is_refused(wikidata_mcp) -> None:
    with pytest.raises(NotFound) as unknown:
        connector_sync(slug="nope")
    assert unknown.value.message == "No connector is called 'nope'."
    with pytest.raises(ValidationFailed) as native:
        connector_sync(slug="arxiv")
    assert native.value.status_code == 422
    assert native.value.message == (
        "Connector 'arxiv' uses native adapters and has no upstream tools/list to sync; "
        "only MCP connectors can."
    )


def test_failed_sync_keeps_the_error_on_the_connector(wikidata_mcp, monkeypatch) -> None:
    monkeypatch.setenv("WIKIDATA_MCP_URL", f"http://127.0.0.1:{free_port()}/mcp/")

    with pytest.raises(UpstreamError) as raised:
        connector_sync(slug="wikidata")

    assert raised.value.retryable is True
    assert (
        raised.value.message == "MCP server 'wikidata' could not be reached: All connection attempts failed."
    )
    connector = Connector.objects.get(slug="wikidata")
    assert connector.last_sync_error == raised.value.message
    assert connector.last_synced_at is None
    assert {_tools()[name].drift for name in DECLARED} == {DriftState.UNSYNCED}


def test_failed_sync_on_http_error_is_classified(wikidata_mcp) -> None:
    wikidata_mcp.fail_status = 401
    with pytest.raises(UpstreamError) as raised:
        connector_sync(slug="wikidata")
    assert raised.value.retryable is False
    assert raised.value.message == "MCP server 'wikidata' answered HTTP 401."
    assert raised.value.details["httpStatus"] == 401


def test_connection_test_for_mcp_and_native_connectors(wikidata_mcp) -> None:
    result = connector_test_connection(slug="wikidata")
    assert result["ok"] is True
    assert result["toolCount"] == 6
    assert result["endpoint"] == wikidata_mcp.url
    assert isinstance(result["latencyMs"], float)

    registered = adapters.adapter_for("arxiv.search")  # the arXiv app may have registered one
    model = adapters.adapter_input_model("arxiv.search")
    adapters.unregister_adapter("arxiv.search")
    try:
        assert connector_test_connection(slug="arxiv") == {
            "connector": "arxiv",
            "transport": "native",
            "ok": False,
            "tools": [{"name": "arxiv.search", "adapter": False}],
        }
        adapters.register_adapter("arxiv.search")(lambda tool, arguments: {"papers": []})
        assert connector_test_connection(slug="arxiv")["tools"] == [{"name": "arxiv.search", "adapter": True}]
    finally:
        adapters.unregister_adapter("arxiv.search")
        if registered is not None:
            adapters.register_adapter("arxiv.search", input_model=model)(registered)

    wikidata_mcp.fail_status = 503
    failed = connector_test_connection(slug="wikidata")
    assert failed["ok"] is False
    assert failed["retryable"] is True
    assert failed["error"] == "MCP server 'wikidata' answered HTTP 503."
