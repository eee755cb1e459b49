"""GET /v1/tools filtering and POST /v1/agents/plan, both driven only by tags and scopes."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.connectors.models import Connector, RemoteTool
from apps.connectors.planner import PROVENANCE_SPARQL, plan_create
from apps.connectors.services import manifest_import
from apps.core.errors import ValidationFailed

pytestmark = pytest.mark.django_db


def _names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [tool["name"] for tool in response.json()]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "",
            [
                "arxiv.search",
                *(
                    f"wikidata.{n}"
                    for n in (
                        "vector_search_items",
                        "vector_search_properties",
                        "get_claims",
                        "sparql",
                        "get_hierarchy",
                    )
                ),
            ],
        ),
        ("?tags=vector", ["wikidata.vector_search_items", "wikidata.vector_search_properties"]),
        ("?tags=vector&scopes=facts", ["wikidata.vector_search_items"]),
        ("?tags=wikidata,provenance", ["wikidata.get_claims", "wikidata.sparql"]),
        ("?scopes=entities", ["wikidata.vector_search_items", "wikidata.get_hierarchy"]),
        ("?tags=vector,papers", []),
        ("?tags=%20vector%20,,", ["wikidata.vector_search_items", "wikidata.vector_search_properties"]),
    ],
)
def test_tools_are_filtered_by_all_given_tags_and_scopes(
    default_registry: dict, query: str, expected
) -> None:
    assert _names(Client().get(f"/v1/tools{query}")) == expected


def test_tools_of_disabled_connectors_are_not_listed(default_registry: dict) -> None:
    Connector.objects.filter(slug="wikidata").update(enabled=False)
    assert _names(Client().get("/v1/tools")) == ["arxiv.search"]


def test_tool_entries_carry_connector_and_schema(default_registry: dict) -> None:
    RemoteTool.objects.filter(name="wikidata.sparql").update(
        upstream_input_schema={"type": "object", "required": ["sparql"]}
    )
    [tool] = Client().get("/v1/tools?tags=sparql").json()
    assert tool == {
        "name": "wikidata.sparql",
        "connector": "wikidata",
        "description": "Execute SPARQL queries",
        "tags": ["sparql", "wikidata", "provenance"],
        "scopes": [],
        "inputSchema": {"type": "object", "required": ["sparql"]},
    }


def _plan(client: Client, **body):
    return client.post("/v1/agents/plan", body, content_type="application/json")


def test_fact_query_plan_is_vector_search_then_claims_then_optional_sparql(
    default_registry: dict, read_client: Client
) -> None:
    response = _plan(read_client, intent="fact_query", query="Einstein's birthplace")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "intent": "fact_query",
        "query": "Einstein's birthplace",
        "scope": "facts",
        "steps": [
            {
                "order": 1,
                "tool": "wikidata.vector_search_items",
                "connector": "wikidata",
                "purpose": "Find the Wikidata items the question is about (vector search).",
                "arguments": {"query": "Einstein's birthplace"},
                "optional": False,
            },
            {
                "order": 2,
                "tool": "wikidata.get_claims",
                "connector": "wikidata",
                "purpose": "Read the claims of the top 3 results.",
                "arguments": {"entity_id": {"fromStep": 1, "field": "id", "top": 3}},
                "optional": False,
            },
            {
                "order": 3,
                "tool": "wikidata.sparql",
                "connector": "wikidata",
                "purpose": "Enrich the top result's statements with their references (provenance).",
                "arguments": {
                    "sparql": PROVENANCE_SPARQL,
                    "bindings": {"$ENTITY": {"fromStep": 1, "field": "id", "top": 1}},
                },
                "optional": True,
            },
        ],
    }


def test_properties_scope_selects_property_search(default_registry: dict) -> None:
    steps = plan_create(intent="fact_query", query="date of birth", scope="properties")["steps"]
    assert [step["tool"] for step in steps] == [
        "wikidata.vector_search_properties",
        "wikidata.get_claims",
        "wikidata.sparql",
    ]


def test_a_tool_renamed_in_the_manifest_appears_under_its_new_name(default_manifest: dict) -> None:
    wikidata = default_manifest["connectors"][2]
    wikidata["remoteTools"][0]["name"] = "wd.entity_search"
    manifest_import(data=default_manifest)
    assert plan_create(intent="fact_query", query="x")["steps"][0]["tool"] == "wd.entity_search"


def test_ties_go_to_the_tool_matching_more_requested_tags_then_to_the_first_name(
    default_manifest: dict,
) -> None:
    tools = default_manifest["connectors"][2]["remoteTools"]
    tools.append({"name": "aaa.claims", "tags": ["claims"]})  # fewer preferred tags: loses despite its name
    tools.append({"name": "wikidata.claims_b", "tags": ["claims", "wikidata", "provenance"]})
    manifest_import(data=default_manifest)
    # wikidata.claims_b and wikidata.get_claims score alike; the name decides.
    assert plan_create(intent="fact_query", query="x")["steps"][1]["tool"] == "wikidata.claims_b"


def test_missing_optional_capability_is_left_out(default_manifest: dict) -> None:
    tools = default_manifest["connectors"][2]["remoteTools"]
    tools[3]["tags"] = ["wikidata", "provenance"]  # nothing is tagged sparql any more
    manifest_import(data=default_manifest)
    assert [step["order"] for step in plan_create(intent="fact_query", query="x")["steps"]] == [1, 2]


def test_a_missing_capability_is_a_422_naming_the_tag_or_scope(
    default_registry: dict, read_client: Client
) -> None:
    RemoteTool.objects.filter(name="wikidata.vector_search_properties").delete()
    response = _plan(read_client, intent="fact_query", query="x", scope="properties")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert "no enabled tool has scope 'properties'" in error["message"]
    assert error["details"]["missingScopes"] == ["properties"]
    assert error["details"]["missingTags"] == []


def test_tools_of_a_disabled_connector_cannot_be_planned(default_registry: dict) -> None:
    Connector.objects.filter(slug="arxiv").update(enabled=False)
    with pytest.raises(ValidationFailed, match="no enabled tool has tag 'academic' or tag 'papers'"):
        plan_create(intent="literature_search", query="transformers")


def test_literature_search_selects_the_academic_papers_tool(default_registry: dict) -> None:
    assert plan_create(intent="literature_search", query="attention")["steps"] == [
        {
            "order": 1,
            "tool": "arxiv.search",
            "connector": "arxiv",
            "purpose": "Search the scholarly literature for papers on the question.",
            "arguments": {"query": "attention", "maxResults": 10},
            "optional": False,
        }
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"intent": "weather", "query": "x"},
        {"intent": "fact_query", "query": ""},
        {"intent": "fact_query", "query": "x", "scope": "everything"},
        {"intent": "fact_query", "query": "x", "extra": 1},
        {"query": "x"},
    ],
)
def test_bad_plan_requests_are_422(default_registry: dict, read_client: Client, body: dict) -> None:
    response = _plan(read_client, **body)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"


def test_planning_needs_a_token(default_registry: dict) -> None:
    assert _plan(Client(), intent="fact_query", query="x").status_code == 401
