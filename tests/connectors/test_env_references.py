"""Secrets and endpoints by reference only (issue 23, item 2).

A connector names the environment variables holding its endpoint (``endpoint_env``) and its
secret (``auth_secret_env``); an ``admin`` token could name ``DJANGO_SECRET_KEY`` there and have
the secret published in the service map or sent as a bearer token to an endpoint of its
choice. Only ``CORTEX_CONNECTOR_*`` variables (and the documented endpoint variables such as
``WIKIDATA_MCP_URL``) may be named, wherever a connector is written; rows written before are
refused when read; an endpoint from the environment passes the outbound address rule when saved;
and nothing published shows a value read from the environment.
"""

from __future__ import annotations

import json

import pytest
from django.core.checks import run_checks
from django.test import Client

from apps.connectors import selectors
from apps.connectors.checks import connector_rows_check
from apps.connectors.environment import env_name_refusal
from apps.connectors.gateway import connector_test_connection, tool_call
from apps.connectors.models import Connector
from apps.connectors.services import manifest_import, manifest_validated
from apps.core.errors import UpstreamError, ValidationFailed
from tests.connectors.mcp_server import mcp_servers_fixture, wikidata_mcp_fixture  # noqa: F401
from tests.connectors.test_admin import IMPORT, _form_data

SECRET = "s3cret-value-that-must-stay-on-the-server"
SERVER_SECRETS = ["DJANGO_SECRET_KEY", "CORTEX_SIGNING_KEY", "LLM_API_KEY", "DATABASE_URL"]
ENDPOINT_ONLY = "WIKIDATA_MCP_URL, ARXIV_API_URL"


def _secret_refusal(name: str) -> str:
    return (
        f"{name!r} holds a secret or setting of CortexWeb itself, which no connector may read; "
        "name a variable that starts with CORTEX_CONNECTOR_ (allowed: CORTEX_CONNECTOR_*)."
    )


def _not_allowed(name: str, *, endpoint: bool) -> str:
    also = f", or one of the endpoint variables {ENDPOINT_ONLY}" if endpoint else ""
    return (
        f"{name!r} is not a variable connectors may read; name a variable that starts with "
        f"CORTEX_CONNECTOR_ (allowed: CORTEX_CONNECTOR_*){also}."
    )


@pytest.fixture
def server_secrets(monkeypatch) -> None:
    """The deployment's own secrets, as the server's environment holds them."""
    for name in SERVER_SECRETS:
        monkeypatch.setenv(name, SECRET)


@pytest.fixture
def write_client(make_token) -> Client:
    _, raw = make_token("read", "upstream")
    return Client(headers={"Authorization": f"Bearer {raw}"})


def _published(client: Client) -> str:
    """Everything anonymous users can read about connectors."""
    return (
        client.get("/v1/connectors/service-map").content.decode() + client.get("/connectors").content.decode()
    )


def _call(client: Client) -> tuple[int, dict]:
    body = json.dumps({"name": "wikidata.get_claims", "arguments": {"entity_id": "Q42"}})
    response = client.post("/v1/tools/call", body, content_type="application/json")
    return response.status_code, response.json()


# --- the resource API ----------------------------------------------------------------------------


@pytest.mark.usefixtures("server_secrets")
@pytest.mark.parametrize("name", SERVER_SECRETS)
def test_api_refuses_an_endpoint_variable_holding_a_server_secret(
    admin_client_token: Client, client: Client, default_registry: dict, name: str
) -> None:
    response = admin_client_token.patch(
        "/api/connectors/wikidata/", {"endpoint_env": name}, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "validation_error",
            "message": "The request has invalid fields; see details.",
            "details": {"fields": {"endpoint_env": [_secret_refusal(name)]}},
        }
    }
    assert Connector.objects.get(slug="wikidata").endpoint_env == "WIKIDATA_MCP_URL"
    assert SECRET not in _published(client)


@pytest.mark.usefixtures("server_secrets")
@pytest.mark.parametrize("name", SERVER_SECRETS)
def test_api_refuses_a_secret_variable_holding_a_server_secret(
    wikidata_mcp, admin_client_token: Client, write_client: Client, name: str
) -> None:
    response = admin_client_token.patch(
        "/api/connectors/wikidata/",
        {"auth_type": "bearer", "auth_secret_env": name},
        content_type="application/json",
    )

    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"fields": {"auth_secret_env": [_secret_refusal(name)]}}
    assert Connector.objects.filter(slug="wikidata").values_list("auth_type", "auth_secret_env").get() == (
        "none",
        "",
    )
    # The next call reaches the connector without any credential.
    assert _call(write_client)[0] == 200
    assert {request["headers"].get("authorization") for request in wikidata_mcp.requests} == {None}


def test_api_refuses_any_variable_outside_the_prefix(
    admin_client_token: Client, default_registry: dict
) -> None:
    response = admin_client_token.post(
        "/api/connectors/",
        {
            "slug": "openalex",
            "name": "OpenAlex",
            "version": "1",
            "transport": "mcp",
            "endpoint": "https://api.openalex.org/mcp",
            "endpoint_env": "HOME",
            "auth_type": "bearer",
            "auth_secret_env": "WIKIDATA_MCP_URL",  # an endpoint variable: never a secret
        },
        content_type="application/json",
    )

    assert response.status_code == 400
    assert response.json()["error"]["details"] == {
        "fields": {
            "endpoint_env": [_not_allowed("HOME", endpoint=True)],
            "auth_secret_env": [_not_allowed("WIKIDATA_MCP_URL", endpoint=False)],
        }
    }
    assert not Connector.objects.filter(slug="openalex").exists()


def test_a_connector_variable_is_accepted_and_its_secret_sent(
    wikidata_mcp, admin_client_token: Client, write_client: Client, monkeypatch
) -> None:
    monkeypatch.setenv("CORTEX_CONNECTOR_WIKIDATA_TOKEN", "connector-token")
    response = admin_client_token.patch(
        "/api/connectors/wikidata/",
        {"auth_type": "bearer", "auth_secret_env": "CORTEX_CONNECTOR_WIKIDATA_TOKEN"},
        content_type="application/json",
    )
    assert response.status_code == 200

    assert _call(write_client)[0] == 200
    assert {request["headers"].get("authorization") for request in wikidata_mcp.requests} == {
        "Bearer connector-token"
    }


# --- the manifest and the admin --------------------------------------------------------------------


@pytest.mark.usefixtures("server_secrets")
def test_manifest_lists_every_variable_it_may_not_read(
    default_registry: dict, default_manifest: dict
) -> None:
    default_manifest["connectors"][1]["auth"]["secretEnv"] = "DJANGO_SECRET_KEY"
    default_manifest["connectors"][2]["endpointEnv"] = "CORTEX_SIGNING_KEY"
    default_manifest["connectors"][2]["auth"] = {"type": "api_key", "secretEnv": "PATH", "header": "X-Key"}

    with pytest.raises(ValidationFailed) as refused:
        manifest_import(data=default_manifest)

    assert refused.value.details == {
        "errors": [
            {"path": "$.connectors[1].auth.secretEnv", "message": _secret_refusal("DJANGO_SECRET_KEY")},
            {"path": "$.connectors[2].endpointEnv", "message": _secret_refusal("CORTEX_SIGNING_KEY")},
            {"path": "$.connectors[2].auth.secretEnv", "message": _not_allowed("PATH", endpoint=False)},
        ]
    }
    assert Connector.objects.get(slug="perplexity").auth_secret_env == "CORTEX_CONNECTOR_PERPLEXITY_API_KEY"


@pytest.mark.usefixtures("server_secrets")
def test_admin_import_lists_the_refused_variables(
    admin_client: Client, default_registry: dict, default_manifest: dict
) -> None:
    default_manifest["connectors"][2]["endpointEnv"] = "DATABASE_URL"
    default_manifest["connectors"][2]["auth"] = {"type": "bearer", "secretEnv": "LLM_API_KEY"}

    response = admin_client.post(IMPORT, {"manifest_text": json.dumps(default_manifest)})

    assert response.status_code == 200
    assert response.context["errors"] == [
        {"path": "$.connectors[2].endpointEnv", "message": _secret_refusal("DATABASE_URL")},
        {"path": "$.connectors[2].auth.secretEnv", "message": _secret_refusal("LLM_API_KEY")},
    ]
    assert 'name="apply"' not in response.content.decode()
    assert Connector.objects.get(slug="wikidata").endpoint_env == "WIKIDATA_MCP_URL"


@pytest.mark.usefixtures("server_secrets")
def test_admin_form_refuses_server_secrets(
    admin_client: Client, client: Client, default_registry: dict
) -> None:
    wikidata = Connector.objects.get(slug="wikidata")
    url = f"/admin/connectors/connector/{wikidata.pk}/change/"
    data = _form_data(admin_client.get(url))
    data.update(endpoint_env="DJANGO_SECRET_KEY", auth_type="bearer", auth_secret_env="CORTEX_SIGNING_KEY")

    response = admin_client.post(url, data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "endpoint_env": [_secret_refusal("DJANGO_SECRET_KEY")],
        "auth_secret_env": [_secret_refusal("CORTEX_SIGNING_KEY")],
    }
    assert Connector.objects.get(slug="wikidata").endpoint_env == "WIKIDATA_MCP_URL"
    assert SECRET not in _published(client)


# --- rows written before the rule ------------------------------------------------------------------


@pytest.mark.usefixtures("server_secrets")
def test_an_old_row_naming_a_server_secret_is_never_read(
    wikidata_mcp, admin_client: Client, client: Client, write_client: Client
) -> None:
    Connector.objects.filter(slug="wikidata").update(
        endpoint_env="DJANGO_SECRET_KEY", auth_type="bearer", auth_secret_env="LLM_API_KEY"
    )

    published = _published(client)
    assert SECRET not in published
    assert "https://wd-mcp.wmcloud.org/mcp/" in published  # the stored endpoint
    assert SECRET not in admin_client.get("/admin/connectors/connector/").content.decode()

    status, body = _call(write_client)

    assert status == 502
    assert body["error"] == {
        "code": "upstream_error",
        "message": "Connector 'wikidata' may not read its endpoint variable: "
        f"{_secret_refusal('DJANGO_SECRET_KEY')} Fix the connector in the admin or through /api/connectors/.",
        "details": {"connector": "wikidata", "endpointEnv": "DJANGO_SECRET_KEY", "retryable": False},
    }
    assert SECRET not in json.dumps(body)
    assert wikidata_mcp.requests == []

    result = connector_test_connection(slug="wikidata")
    assert result["ok"] is False and SECRET not in json.dumps(result)

    # The endpoint fixed, the secret variable is still refused: no request carries it.
    Connector.objects.filter(slug="wikidata").update(endpoint_env="WIKIDATA_MCP_URL")
    with pytest.raises(UpstreamError) as refused:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
    assert refused.value.message == (
        f"Connector 'wikidata' may not read its secret variable: {_secret_refusal('LLM_API_KEY')} "
        "Fix the connector in the admin or through /api/connectors/."
    )
    assert wikidata_mcp.requests == []


def test_the_database_check_names_old_rows(default_registry: dict) -> None:
    assert connector_rows_check(None, databases=["default"]) == []
    Connector.objects.filter(slug="perplexity").update(auth_secret_env="DJANGO_SECRET_KEY")

    messages = connector_rows_check(None, databases=["default"])

    assert [(message.id, message.msg) for message in messages] == [
        (
            "connectors.W001",
            "Connector 'perplexity' may not read its secret variable: "
            + _secret_refusal("DJANGO_SECRET_KEY"),
        )
    ]
    assert connector_rows_check(None, databases=None) == []  # only when asked for database checks


def test_a_secret_that_is_not_set_is_named_not_echoed(wikidata_mcp, monkeypatch) -> None:
    monkeypatch.delenv("CORTEX_CONNECTOR_WIKIDATA_TOKEN", raising=False)
    Connector.objects.filter(slug="wikidata").update(
        auth_type="bearer", auth_secret_env="CORTEX_CONNECTOR_WIKIDATA_TOKEN"
    )
    with pytest.raises(UpstreamError) as refused:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
    assert refused.value.message == (
        "Connector 'wikidata' needs a secret in the environment variable 'CORTEX_CONNECTOR_WIKIDATA_TOKEN', "
        "which is not set."
    )


# --- endpoints from the environment ----------------------------------------------------------------


@pytest.fixture
def loopback_endpoint_variable(monkeypatch, settings) -> str:
    """WIKIDATA_MCP_URL pointing at this machine, with loopback not allowed (the tests' default allows it)."""
    monkeypatch.setenv("WIKIDATA_MCP_URL", "http://127.0.0.1:8765/mcp/")
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = []
    settings.CORTEX_OUTBOUND_ALLOW_HOSTS = []
    return (
        "Endpoint in WIKIDATA_MCP_URL refused: '127.0.0.1' is a loopback address; CortexWeb does not send "
        "requests there unless CORTEX_OUTBOUND_ALLOW_NETWORKS or CORTEX_OUTBOUND_ALLOW_HOSTS allows it."
    )


def test_a_loopback_endpoint_variable_is_refused_when_saved_like_a_stored_one(  # noqa: PLR0917
    admin_client_token: Client,
    admin_client: Client,
    default_registry: dict,
    default_manifest: dict,
    loopback_endpoint_variable: str,
    settings,
) -> None:
    refusal = loopback_endpoint_variable
    response = admin_client_token.patch(
        "/api/connectors/wikidata/", {"endpoint_env": "WIKIDATA_MCP_URL"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"fields": {"endpoint_env": [refusal]}}

    with pytest.raises(ValidationFailed) as refused:
        manifest_validated(data=default_manifest)
    assert refused.value.details == {"errors": [{"path": "$.connectors[2].endpointEnv", "message": refusal}]}

    wikidata = Connector.objects.get(slug="wikidata")
    url = f"/admin/connectors/connector/{wikidata.pk}/change/"
    response = admin_client.post(url, _form_data(admin_client.get(url)))
    assert response.context["adminform"].form.errors == {"endpoint_env": [refusal]}

    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = ["127.0.0.0/8"]
    assert manifest_validated(data=default_manifest)["connectors"][2]["endpointEnv"] == "WIKIDATA_MCP_URL"


def test_an_endpoint_variable_that_is_not_a_url_is_refused_without_its_value(
    wikidata_mcp, admin_client_token: Client, monkeypatch
) -> None:
    monkeypatch.setenv("CORTEX_CONNECTOR_WIKIDATA_KEY", SECRET)
    refusal = "CORTEX_CONNECTOR_WIKIDATA_KEY does not hold an http(s) URL."

    response = admin_client_token.patch(
        "/api/connectors/wikidata/",
        {"endpoint_env": "CORTEX_CONNECTOR_WIKIDATA_KEY"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"fields": {"endpoint_env": [refusal]}}

    Connector.objects.filter(slug="wikidata").update(endpoint_env="CORTEX_CONNECTOR_WIKIDATA_KEY")
    with pytest.raises(UpstreamError) as refused:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
    assert refused.value.message == f"Connector 'wikidata': {refusal}"
    assert SECRET not in json.dumps(refused.value.details)
    assert wikidata_mcp.requests == []


def test_the_map_and_the_page_publish_the_stored_endpoint(
    default_registry: dict, client: Client, monkeypatch
) -> None:
    monkeypatch.setenv("WIKIDATA_MCP_URL", "http://10.1.2.3:8765/mcp/")
    wikidata = selectors.service_map_payload()["connectors"][2]
    assert wikidata["endpoint"] == "https://wd-mcp.wmcloud.org/mcp/"
    page = client.get("/connectors").content.decode()
    assert "<dt>Endpoint</dt><dd><code>https://wd-mcp.wmcloud.org/mcp/</code></dd>" in page
    assert "10.1.2.3" not in page


# --- the allow-list's configuration ----------------------------------------------------------------


def test_configuration_cannot_allow_a_server_secret(settings) -> None:
    settings.CORTEX_CONNECTORS_ENV_ALLOW = ["CORTEX_CONNECTOR_*", "DJANGO_*", "LLM_API_KEY"]
    settings.CORTEX_CONNECTORS_ENDPOINT_ENV = ["WIKIDATA_MCP_URL", "DATABASE_URL", "PARTNER_API_TOKEN"]

    errors = [message for message in run_checks() if message.id.startswith("connectors.")]

    assert [(message.id, message.msg) for message in errors] == [
        (
            "connectors.E001",
            "CORTEX_CONNECTORS_ENV_ALLOW has entries outside CORTEX_CONNECTOR_*: DJANGO_*, LLM_API_KEY; "
            "they allow nothing.",
        ),
        (
            "connectors.E002",
            "CORTEX_CONNECTORS_ENDPOINT_ENV has entries that hold secrets or CortexWeb's own settings: "
            "DATABASE_URL, PARTNER_API_TOKEN; they allow nothing.",
        ),
    ]
    assert env_name_refusal("LLM_API_KEY", endpoint=False) == _secret_refusal("LLM_API_KEY")
    assert env_name_refusal("DATABASE_URL", endpoint=True) == _secret_refusal("DATABASE_URL")
    assert env_name_refusal("PARTNER_API_TOKEN", endpoint=True) == (
        "'PARTNER_API_TOKEN' is not a variable connectors may read; name a variable that starts with "
        "CORTEX_CONNECTOR_ (allowed: CORTEX_CONNECTOR_*), or one of the endpoint variables WIKIDATA_MCP_URL."
    )
    assert env_name_refusal("WIKIDATA_MCP_URL", endpoint=True) is None


def test_the_allow_list_narrows_the_prefix(settings) -> None:
    settings.CORTEX_CONNECTORS_ENV_ALLOW = ["CORTEX_CONNECTOR_PERPLEXITY_*"]
    assert env_name_refusal("CORTEX_CONNECTOR_PERPLEXITY_API_KEY", endpoint=False) is None
    assert env_name_refusal("CORTEX_CONNECTOR_OTHER_KEY", endpoint=False) == (
        "'CORTEX_CONNECTOR_OTHER_KEY' is not a variable connectors may read; name a variable that starts "
        "with CORTEX_CONNECTOR_ (allowed: CORTEX_CONNECTOR_PERPLEXITY_*)."
    )
