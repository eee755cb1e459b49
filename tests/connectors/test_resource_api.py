"""The DRF resource API of the registry: /api/connectors/ and /api/tools/ (DESIGN §3, §5.5)."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.connectors.models import Connector, DriftState, RemoteTool, ToolAlias

NEW_CONNECTOR = {
    "slug": "openalex",
    "name": "OpenAlex",
    "version": "1.0.0",
    "transport": "native",
    "endpoint": "https://api.openalex.org",
    "scopes": ["literature"],
}


def _names(response) -> list[str]:
    return [row["name"] for row in response.json()["results"]]


def _slugs(response) -> list[str]:
    return [row["slug"] for row in response.json()["results"]]


# --- Authentication and scopes ---------------------------------------------------------


def test_reads_need_a_token(client: Client, default_registry: dict) -> None:
    response = client.get("/api/connectors/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="cortexweb"'
    assert response.json()["error"]["code"] == "authentication_required"
    assert client.post("/api/tools/", {}, content_type="application/json").status_code == 401


def test_read_token_reads_but_cannot_write(read_client: Client, default_registry: dict) -> None:
    assert read_client.get("/api/connectors/").status_code == 200
    assert read_client.get("/api/tools/wikidata.sparql/").status_code == 200
    writes = [
        read_client.post("/api/connectors/", NEW_CONNECTOR, content_type="application/json"),
        read_client.patch("/api/connectors/arxiv/", {"enabled": False}, content_type="application/json"),
        read_client.delete("/api/tools/arxiv.search/"),
    ]
    for response in writes:
        assert response.status_code == 403
        assert response.json() == {
            "error": {
                "code": "permission_denied",
                "message": "This operation needs a token with the 'admin' scope.",
                "details": {"required": "admin", "granted": ["read"]},
            }
        }
    assert Connector.objects.get(slug="arxiv").enabled is True
    assert RemoteTool.objects.filter(name="arxiv.search").exists()


# --- Connectors ------------------------------------------------------------------------


def test_connector_list_and_detail(read_client: Client, default_registry: dict) -> None:
    response = read_client.get("/api/connectors/")
    body = response.json()
    assert body["count"] == 3 and body["next"] is None
    assert _slugs(response) == ["arxiv", "perplexity", "wikidata"]
    detail = read_client.get("/api/connectors/wikidata/").json()
    assert detail["tools"] == [
        "wikidata.vector_search_items",
        "wikidata.vector_search_properties",
        "wikidata.get_claims",
        "wikidata.sparql",
        "wikidata.get_hierarchy",
    ]
    assert detail["tool_count"] == 5
    assert detail["transport"] == "mcp"
    assert detail["undeclared_upstream_tools"] == []
    assert read_client.get("/api/connectors/nope/").json()["error"]["code"] == "not_found"


def test_connector_filters(read_client: Client, default_registry: dict) -> None:
    assert _slugs(read_client.get("/api/connectors/", {"transport": "mcp"})) == ["perplexity", "wikidata"]
    assert _slugs(read_client.get("/api/connectors/", {"enabled": "false"})) == ["perplexity"]
    assert _slugs(read_client.get("/api/connectors/", {"enabled": "true", "transport": "mcp"})) == [
        "wikidata"
    ]
    assert _slugs(read_client.get("/api/connectors/", {"scopes": "wikidata:claims,wikidata:sparql"})) == [
        "wikidata"
    ]
    response = read_client.get("/api/connectors/", {"enabled": "maybe"})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "validation_error",
        "message": "?enabled= takes true or false, not 'maybe'.",
        "details": {"parameter": "enabled"},
    }
    response = read_client.get("/api/connectors/", {"limit": 1, "offset": 1})
    assert _slugs(response) == ["perplexity"]
    assert response.json()["count"] == 3


def test_admin_creates_updates_and_deletes_a_connector(
    admin_client_token: Client, default_registry: dict
) -> None:
    response = admin_client_token.post("/api/connectors/", NEW_CONNECTOR, content_type="application/json")
    assert response.status_code == 201, response.json()
    assert response.json()["slug"] == "openalex" and response.json()["tools"] == []
    connector = Connector.objects.get(slug="openalex")
    assert (connector.auth_type, connector.ttl_seconds, connector.enabled) == ("none", 1800, True)

    response = admin_client_token.patch(
        "/api/connectors/openalex/",
        {"enabled": False, "last_sync_error": "ignored"},
        content_type="application/json",
    )
    assert response.status_code == 200
    connector.refresh_from_db()
    assert connector.enabled is False
    assert connector.last_sync_error == ""  # sync-owned: read-only

    assert admin_client_token.delete("/api/connectors/openalex/").status_code == 204
    assert not Connector.objects.filter(slug="openalex").exists()


def test_invalid_connector_is_refused_in_the_error_shape(
    admin_client_token: Client, default_registry: dict
) -> None:
    bad = {**NEW_CONNECTOR, "slug": "Open Alex", "transport": "pigeon", "endpoint": "not a url"}
    response = admin_client_token.post("/api/connectors/", bad, content_type="application/json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert sorted(error["details"]["fields"]) == ["endpoint", "slug", "transport"]

    response = admin_client_token.post(
        "/api/connectors/", {**NEW_CONNECTOR, "metadata": {"brand": "x"}}, content_type="application/json"
    )
    assert response.status_code == 422
    assert list(response.json()["error"]["details"]["fields"]) == ["metadata"]
    assert not Connector.objects.filter(slug="openalex").exists()


# --- Tools -----------------------------------------------------------------------------


def test_tool_detail_shows_aliases_drift_and_upstream_fields(
    read_client: Client, default_registry: dict
) -> None:
    RemoteTool.objects.filter(name="wikidata.sparql").update(
        drift=DriftState.SCHEMA_CHANGED, upstream_description="Run SPARQL"
    )
    body = read_client.get("/api/tools/wikidata.sparql/").json()
    assert body["connector"] == "wikidata"
    assert body["aliases"] == ["execute_sparql", "sparql"]
    assert body["upstream_name"] == "execute_sparql"
    assert body["drift"] == "schema_changed"
    assert body["upstream_description"] == "Run SPARQL"
    assert body["tags"] == ["sparql", "wikidata", "provenance"]


def test_tool_filters(read_client: Client, default_registry: dict) -> None:
    assert _names(read_client.get("/api/tools/", {"connector": "arxiv"})) == ["arxiv.search"]
    assert _names(read_client.get("/api/tools/", {"tags": "wikidata,provenance"})) == [
        "wikidata.get_claims",
        "wikidata.sparql",
    ]
    assert _names(read_client.get("/api/tools/", {"tags": "wikidata", "scopes": "entities"})) == [
        "wikidata.vector_search_items",
        "wikidata.get_hierarchy",
    ]
    assert _names(read_client.get("/api/tools/", {"scopes": "facts,properties"})) == []
    assert read_client.get("/api/tools/").json()["count"] == 6


@pytest.mark.parametrize("name", ["Wiki Data!", "x" * 65, ""])
def test_bad_tool_names_are_refused(admin_client_token: Client, default_registry: dict, name: str) -> None:
    response = admin_client_token.post(
        "/api/tools/", {"name": name, "connector": "wikidata"}, content_type="application/json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert list(error["details"]["fields"]) == ["name"]
    assert RemoteTool.objects.count() == 6


def test_tool_with_unknown_connector_is_refused(admin_client_token: Client, default_registry: dict) -> None:
    response = admin_client_token.post(
        "/api/tools/", {"name": "nowhere.tool", "connector": "nowhere"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert list(response.json()["error"]["details"]["fields"]) == ["connector"]


def test_admin_creates_updates_and_deletes_a_tool(admin_client_token: Client, default_registry: dict) -> None:
    response = admin_client_token.post(
        "/api/tools/",
        {
            "name": "wikidata.labels",
            "connector": "wikidata",
            "tags": ["labels", "wikidata"],
            "aliases": ["get_labels"],
            "drift": "in_sync",
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["aliases"] == ["get_labels"]
    assert response.json()["drift"] == "unsynced"  # sync-owned: read-only
    tool = RemoteTool.objects.get(name="wikidata.labels")
    assert tool.connector.slug == "wikidata"

    response = admin_client_token.patch(
        "/api/tools/wikidata.labels/",
        {"aliases": ["labels", "get_labels_v2"], "connector": "arxiv"},
        content_type="application/json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["aliases"] == ["get_labels_v2", "labels"]
    assert response.json()["connector"] == "arxiv"
    assert sorted(ToolAlias.objects.filter(tool=tool).values_list("name", flat=True)) == [
        "get_labels_v2",
        "labels",
    ]

    response = admin_client_token.patch(
        "/api/tools/wikidata.labels/", {"description": "Labels"}, content_type="application/json"
    )
    assert response.json()["aliases"] == ["get_labels_v2", "labels"]  # untouched when not sent

    assert admin_client_token.delete("/api/tools/wikidata.labels/").status_code == 204
    assert not ToolAlias.objects.filter(name="labels").exists()


def test_alias_conflicts_are_refused(admin_client_token: Client, default_registry: dict) -> None:
    cases = [
        (["sparql"], "'sparql' is already an alias of 'wikidata.sparql'."),
        (["arxiv.search"], "'arxiv.search' is a canonical tool name and cannot be an alias."),
        (["a", "a"], "Each alias may appear once."),
    ]
    for aliases, message in cases:
        response = admin_client_token.patch(
            "/api/tools/wikidata.get_hierarchy/", {"aliases": aliases}, content_type="application/json"
        )
        assert response.status_code == 422
        assert response.json()["error"]["details"] == {"fields": {"aliases": [message]}}
    assert sorted(
        ToolAlias.objects.filter(tool__name="wikidata.get_hierarchy").values_list("name", flat=True)
    ) == [
        "get_instance_and_class_hierarchy",
        "get_instance_and_subclass_hierarchy",
    ]
    response = admin_client_token.post(
        "/api/tools/", {"name": "sparql", "connector": "wikidata"}, content_type="application/json"
    )
    assert response.status_code == 422
    assert list(response.json()["error"]["details"]["fields"]) == ["name"]


@pytest.mark.django_db(transaction=True)
def test_tool_writes_invalidate_the_service_map(admin_client_token: Client, default_registry: dict) -> None:
    first = Client().get("/v1/connectors/service-map")
    assert first.status_code == 200
    response = admin_client_token.post(
        "/api/tools/",
        {"name": "arxiv.recent", "connector": "arxiv", "description": "Newest papers"},
        content_type="application/json",
    )
    assert response.status_code == 201
    second = Client().get("/v1/connectors/service-map")
    assert second["ETag"] != first["ETag"]
    assert second.json()["connectors"][0]["remoteTools"][1] == {
        "name": "arxiv.recent",
        "description": "Newest papers",
    }

    response = admin_client_token.patch(
        "/api/tools/arxiv.recent/", {"tags": ["papers"]}, content_type="application/json"
    )
    assert response.status_code == 200
    third = Client().get("/v1/connectors/service-map")
    assert third["ETag"] != second["ETag"]
    assert third.json()["connectors"][0]["remoteTools"][1]["tags"] == ["papers"]


def test_browsable_api_renders_for_read_and_admin_tokens(
    read_client: Client, admin_client_token: Client, default_registry: dict
) -> None:
    for client in (read_client, admin_client_token):
        for url in ("/api/connectors/", "/api/tools/wikidata.sparql/"):
            response = client.get(url, headers={"Accept": "text/html"})
            assert response.status_code == 200
            assert response["Content-Type"] == "text/html; charset=utf-8"
    content = read_client.get("/api/tools/", headers={"Accept": "text/html"}).content.decode()
    assert 'id="post-object-form"' not in content
    content = admin_client_token.get("/api/tools/", headers={"Accept": "text/html"}).content.decode()
    assert 'id="post-object-form"' in content
