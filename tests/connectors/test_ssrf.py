"""No server-side request forgery through the registry (issue 12, item 4).

Tool schemas with a ``$ref`` outside the document are refused on manifest import, admin save,
the resource API and sync, and argument validation never fetches one; connector endpoints in
loopback, private, link-local and metadata ranges are refused unless allowed, when saved and
when connected to; upstream 502 details name where the upstream lives only for admin tokens.
A real listener on 127.0.0.1 witnesses that nothing was fetched.
"""

from __future__ import annotations

import copy
import json

import pytest
from django.test import Client

from apps.connectors.gateway import connector_sync, tool_call
from apps.connectors.models import CallTransport, Connector, DriftState, RemoteTool
from apps.connectors.services import manifest_validated
from apps.core.errors import UpstreamError, ValidationFailed
from apps.core.models import Event, TokenScope
from apps.core.outbound import OutboundRefused
from apps.mcp_server.services import Caller, mcp_tool_call
from tests.connectors.mcp_server import mcp_servers_fixture, wikidata_mcp_fixture  # noqa: F401
from tests.connectors.test_admin import IMPORT, _form_data

ALLOW_HINT = (
    "CortexWeb does not send requests there unless CORTEX_OUTBOUND_ALLOW_NETWORKS or "
    "CORTEX_OUTBOUND_ALLOW_HOSTS allows it."
)
LOCAL_REFS_ONLY = "use references inside the document ('#/$defs/…') instead."


def _remote_ref_schema(url: str) -> dict:
    return {
        "type": "object",
        "properties": {
            "entity_id": {"$ref": "#/$defs/entity"},  # inside the document: fine
            "filter": {"$ref": f"{url}filter.json"},
        },
        "$defs": {"entity": {"type": "string", "pattern": "^Q[0-9]+$"}},
    }


@pytest.fixture
def no_allow_list(settings) -> None:
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = []
    settings.CORTEX_OUTBOUND_ALLOW_HOSTS = []


# --- $ref in tool schemas ------------------------------------------------------------------------


def test_manifest_with_a_remote_ref_is_refused_naming_the_path_and_the_ref(
    default_manifest: dict, listener
) -> None:
    manifest = copy.deepcopy(default_manifest)
    manifest["connectors"][2]["remoteTools"][0]["inputSchema"] = _remote_ref_schema(listener.url)

    with pytest.raises(ValidationFailed) as refused:
        manifest_validated(text=json.dumps(manifest))

    assert refused.value.status_code == 422
    assert refused.value.details == {
        "errors": [
            {
                "path": "$.connectors[2].remoteTools[0].inputSchema.properties.filter.$ref",
                "message": f"'{listener.url}filter.json' is a reference outside the schema, which "
                f"CortexWeb never fetches; {LOCAL_REFS_ONLY}",
            }
        ]
    }
    assert listener.connections == 0


def test_refs_are_looked_for_where_schemas_are_not_in_data(default_manifest: dict, listener) -> None:
    schema = {
        "type": "object",
        # A property *named* "$ref", and "$ref" inside const/default/examples values: data, not references.
        "properties": {"$ref": {"type": "string", "default": {"$ref": listener.url}}},
        "const": {"$ref": listener.url},
        "examples": [{"$ref": listener.url}],
        "anyOf": [{"$ref": "#/$defs/a"}, {"items": {"$dynamicRef": f"{listener.url}d"}}],
        "$defs": {"a": {"type": "object"}},
    }
    default_manifest["connectors"][2]["remoteTools"][0]["inputSchema"] = schema

    with pytest.raises(ValidationFailed) as refused:
        manifest_validated(data=default_manifest)

    assert [error["path"] for error in refused.value.details["errors"]] == [
        "$.connectors[2].remoteTools[0].inputSchema.anyOf[1].items.$dynamicRef"
    ]
    assert listener.connections == 0


def test_admin_import_lists_the_remote_ref(admin_client: Client, default_registry: dict, listener) -> None:
    manifest = copy.deepcopy(default_registry)
    manifest["connectors"][2]["remoteTools"][1]["inputSchema"] = _remote_ref_schema(listener.url)

    response = admin_client.post(IMPORT, {"manifest_text": json.dumps(manifest)})

    assert response.status_code == 200
    assert [error["path"] for error in response.context["errors"]] == [
        "$.connectors[2].remoteTools[1].inputSchema.properties.filter.$ref"
    ]
    assert "The manifest has 1 error; nothing was changed." in response.content.decode()
    assert listener.connections == 0


def test_admin_refuses_a_declared_schema_with_a_remote_ref(
    admin_client: Client, default_registry: dict, listener
) -> None:
    tool = RemoteTool.objects.get(name="wikidata.get_hierarchy")
    declared = tool.declared_input_schema
    url = f"/admin/connectors/remotetool/{tool.pk}/change/"
    data = _form_data(admin_client.get(url))
    data["declared_input_schema"] = json.dumps(_remote_ref_schema(listener.url))

    response = admin_client.post(url, data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "declared_input_schema": [
            f"Input schema refused: $.properties.filter.$ref is '{listener.url}filter.json': a reference "
            f"outside the schema, which CortexWeb never fetches; {LOCAL_REFS_ONLY}"
        ]
    }
    assert declared is not None
    assert RemoteTool.objects.get(pk=tool.pk).declared_input_schema == declared  # the manifest's, kept
    assert listener.connections == 0


def test_resource_api_refuses_a_declared_schema_with_a_remote_ref(
    admin_client_token: Client, default_registry: dict, listener
) -> None:
    response = admin_client_token.post(
        "/api/tools/",
        {
            "name": "wikidata.labels",
            "connector": "wikidata",
            "declared_input_schema": {"$ref": f"{listener.url}labels.json"},
        },
        content_type="application/json",
    )

    assert response.status_code == 422
    assert response.json()["error"]["details"] == {
        "fields": {
            "declared_input_schema": [
                f"Input schema refused: $.$ref is '{listener.url}labels.json': a reference outside the "
                f"schema, which CortexWeb never fetches; {LOCAL_REFS_ONLY}"
            ]
        }
    }
    assert not RemoteTool.objects.filter(name="wikidata.labels").exists()
    assert listener.connections == 0


def test_sync_refuses_an_upstream_schema_with_a_remote_ref(wikidata_mcp, listener) -> None:
    connector_sync(slug="wikidata")
    kept = RemoteTool.objects.get(name="wikidata.get_hierarchy").upstream_input_schema
    wikidata_mcp.set_input_schema("get_instance_and_subclass_hierarchy", _remote_ref_schema(listener.url))

    report = connector_sync(slug="wikidata")

    reason = (
        f"$.properties.filter.$ref is '{listener.url}filter.json': a reference outside the schema, "
        f"which CortexWeb never fetches; {LOCAL_REFS_ONLY}"
    )
    assert report.schema_refused == {"wikidata.get_hierarchy": reason}
    assert "wikidata.get_hierarchy" not in report.in_sync + report.schema_changed
    assert report.summary().endswith(f"; input schema refused, not stored: wikidata.get_hierarchy: {reason}")
    tool = RemoteTool.objects.get(name="wikidata.get_hierarchy")
    assert tool.upstream_input_schema == kept  # the upstream's new schema is not stored
    assert tool.drift == DriftState.SCHEMA_CHANGED
    connector = Connector.objects.get(slug="wikidata")
    assert connector.last_sync_error == f"input schema refused, not stored: wikidata.get_hierarchy: {reason}"
    assert Event.objects.filter(name="connectors.synced").latest("pk").payload["schemaRefused"] == {
        "wikidata.get_hierarchy": reason
    }
    # The other tools synced as usual.
    assert RemoteTool.objects.get(name="wikidata.sparql").drift == DriftState.IN_SYNC
    assert listener.connections == 0


def test_first_sync_of_a_remote_ref_stores_no_schema(wikidata_mcp, listener) -> None:
    wikidata_mcp.set_input_schema("execute_sparql", {"type": "object", "$ref": f"{listener.url}sparql.json"})

    report = connector_sync(slug="wikidata")

    assert list(report.schema_refused) == ["wikidata.sparql"]
    assert RemoteTool.objects.get(name="wikidata.sparql").upstream_input_schema is None
    assert listener.connections == 0


def test_argument_validation_never_fetches_a_remote_ref(wikidata_mcp, listener) -> None:
    # A schema stored before refs were refused: validation skips it (the upstream judges) and fetches nothing.
    RemoteTool.objects.filter(name="wikidata.get_claims").update(
        upstream_input_schema=_remote_ref_schema(listener.url)
    )

    answer = tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42", "filter": "x"})

    assert answer["tool"] == "wikidata.get_claims"
    assert listener.connections == 0


def test_argument_validation_resolves_refs_inside_the_document(wikidata_mcp) -> None:
    schema = {
        "$id": "http://127.0.0.1:9/schemas/claims.json",  # a base URI: "#/…" still resolves in the document
        "type": "object",
        "properties": {"entity_id": {"$ref": "#/$defs/entity"}},
        "required": ["entity_id"],
        "$defs": {"entity": {"type": "string", "pattern": "^Q[0-9]+$"}},
    }
    RemoteTool.objects.filter(name="wikidata.get_claims").update(upstream_input_schema=schema)

    with pytest.raises(ValidationFailed) as refused:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "42"})

    assert refused.value.details == {
        "tool": "wikidata.get_claims",
        "errors": [{"path": "$.entity_id", "message": "'42' does not match '^Q[0-9]+$'"}],
    }


def test_an_unresolvable_local_ref_is_left_to_the_upstream(wikidata_mcp) -> None:
    RemoteTool.objects.filter(name="wikidata.get_claims").update(
        upstream_input_schema={"type": "object", "properties": {"entity_id": {"$ref": "#/$defs/missing"}}}
    )

    answer = tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})

    assert answer["tool"] == "wikidata.get_claims"


# --- Connector endpoints -------------------------------------------------------------------------

REFUSED_ENDPOINTS = [
    (
        "http://169.254.169.254/latest/meta-data/",
        "'169.254.169.254' is a link-local (cloud metadata) address",
    ),
    ("http://10.0.0.1/mcp", "'10.0.0.1' is a private address"),
    ("http://[::1]:8080/mcp", "'::1' is a loopback address"),
    (
        "http://[::ffff:10.0.0.1]/mcp",
        "'::ffff:10.0.0.1' is a private address embedded in the IPv6 address ::ffff:a00:1",
    ),
    ("https://mcp.localhost/mcp", "'mcp.localhost' (it resolves to 127.0.0.1) is a loopback address"),
]
ALLOWING = ["127.0.0.0/8", "::1/128", "10.0.0.0/8", "169.254.169.254/32"]


@pytest.fixture
def internal_name(fake_dns) -> None:
    fake_dns["mcp.internal.test"] = ["127.0.0.1"]


@pytest.mark.usefixtures("internal_name", "no_allow_list")
@pytest.mark.parametrize(("endpoint", "reason"), REFUSED_ENDPOINTS)
def test_manifest_refuses_internal_endpoints_unless_allowed(
    default_manifest: dict, settings, endpoint: str, reason: str
) -> None:
    default_manifest["connectors"][2]["endpoint"] = endpoint

    with pytest.raises(ValidationFailed) as refused:
        manifest_validated(data=default_manifest)

    assert refused.value.details == {
        "errors": [
            {"path": "$.connectors[2].endpoint", "message": f"Endpoint refused: {reason}; {ALLOW_HINT}"}
        ]
    }

    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = ALLOWING
    assert manifest_validated(data=default_manifest)["connectors"][2]["endpoint"] == endpoint


def test_allow_hosts_names_a_host_whatever_it_resolves_to(
    default_manifest: dict, internal_name, no_allow_list, settings
) -> None:
    default_manifest["connectors"][2]["endpoint"] = "https://mcp.internal.test/mcp"
    settings.CORTEX_OUTBOUND_ALLOW_HOSTS = [".internal.test"]
    assert (
        manifest_validated(data=default_manifest)["connectors"][2]["endpoint"]
        == "https://mcp.internal.test/mcp"
    )


@pytest.mark.usefixtures("default_registry", "internal_name", "no_allow_list")
@pytest.mark.parametrize(("endpoint", "reason"), REFUSED_ENDPOINTS)
def test_admin_refuses_internal_endpoints_unless_allowed(
    admin_client: Client, settings, endpoint: str, reason: str
) -> None:
    wikidata = Connector.objects.get(slug="wikidata")
    url = f"/admin/connectors/connector/{wikidata.pk}/change/"
    data = _form_data(admin_client.get(url))
    data["endpoint"] = endpoint

    response = admin_client.post(url, data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "endpoint": [f"Endpoint refused: {reason}; {ALLOW_HINT}"]
    }
    assert Connector.objects.get(slug="wikidata").endpoint == "https://wd-mcp.wmcloud.org/mcp/"

    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = ALLOWING
    assert admin_client.post(url, data).status_code == 302
    assert Connector.objects.get(slug="wikidata").endpoint == endpoint


def test_resource_api_refuses_an_internal_endpoint(
    admin_client_token: Client, default_registry: dict, no_allow_list
) -> None:
    response = admin_client_token.patch(
        "/api/connectors/wikidata/", {"endpoint": "http://169.254.169.254/"}, content_type="application/json"
    )

    assert response.status_code == 422
    assert response.json()["error"]["details"] == {
        "fields": {
            "endpoint": [
                f"Endpoint refused: '169.254.169.254' is a link-local (cloud metadata) address; {ALLOW_HINT}"
            ]
        }
    }


def test_connecting_to_a_refused_endpoint_is_a_terminal_error(
    wikidata_mcp, listener, monkeypatch, settings
) -> None:
    """Checked again when connecting: an endpoint variable, or a name that now resolves elsewhere."""
    monkeypatch.setenv("WIKIDATA_MCP_URL", f"{listener.url}mcp/")
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = []

    with pytest.raises(UpstreamError) as refused:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})

    assert isinstance(refused.value, OutboundRefused)
    assert refused.value.retryable is False
    assert refused.value.message == (
        "Outbound request to '127.0.0.1' refused: it is a loopback address, which CortexWeb does not contact "
        "unless CORTEX_OUTBOUND_ALLOW_NETWORKS or CORTEX_OUTBOUND_ALLOW_HOSTS allows it."
    )
    assert refused.value.details == {
        "reason": "outbound_refused",
        "host": "127.0.0.1",
        "address": "127.0.0.1",
        "retryable": False,
        "connector": "wikidata",
        "endpoint": f"{listener.url}mcp/",
    }
    assert listener.connections == 0


def test_sync_of_a_refused_endpoint_records_the_failure(
    wikidata_mcp, listener, monkeypatch, settings
) -> None:
    monkeypatch.setenv("WIKIDATA_MCP_URL", f"{listener.url}mcp/")
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = []

    with pytest.raises(OutboundRefused):
        connector_sync(slug="wikidata")

    assert Connector.objects.get(slug="wikidata").last_sync_error.startswith(
        "Outbound request to '127.0.0.1' refused: it is a loopback address"
    )
    assert listener.connections == 0


# --- 502 details ---------------------------------------------------------------------------------


def test_upstream_urls_in_502_details_are_for_admin_tokens_only(wikidata_mcp, make_token) -> None:
    wikidata_mcp.fail_status = 401
    body = json.dumps({"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}})
    _, everything_but_admin = make_token(*[scope for scope in TokenScope.values if scope != TokenScope.ADMIN])
    _, admin = make_token(TokenScope.ADMIN, name="admin")

    answers = {
        who: Client(headers={"Authorization": f"Bearer {raw}"}).post(
            "/v1/tools/call", body, content_type="application/json"
        )
        for who, raw in (("agent", everything_but_admin), ("operator", admin))
    }

    assert {who: response.status_code for who, response in answers.items()} == {"agent": 502, "operator": 502}
    expected = {"connector": "wikidata", "httpStatus": 401, "retryable": False}
    assert answers["agent"].json()["error"]["details"] == expected
    assert answers["operator"].json()["error"]["details"] == {**expected, "endpoint": wikidata_mcp.url}


def test_mcp_tool_errors_show_upstream_urls_to_admin_tokens_only(wikidata_mcp, make_token) -> None:
    wikidata_mcp.fail_status = 401
    non_admin, _ = make_token(*[scope for scope in TokenScope.values if scope != TokenScope.ADMIN])
    admin, _ = make_token(TokenScope.ADMIN, name="admin")

    details = {}
    for who, token in (("agent", non_admin), ("operator", admin)):
        caller = Caller(transport=CallTransport.MCP_HTTP, token=token)
        outcome = mcp_tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"}, caller=caller)
        assert outcome.is_error is True
        details[who] = json.loads(outcome.extra_text[0])["error"]["details"]

    expected = {"connector": "wikidata", "httpStatus": 401, "retryable": False}
    assert details == {"agent": expected, "operator": {**expected, "endpoint": wikidata_mcp.url}}
