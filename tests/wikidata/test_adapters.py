"""The native ``wikidata.*`` tools, and the gateway falling back to them when the MCP server is down.

Upstreams are respx routes replaying the recordings in ``tests/fixtures/wikidata``, ``vectordb``
and ``wdqs``; answers marked **constructed** are built here because no recording has them
(labels of the vector hits, Q5's claims for a two-level hierarchy, an ASK answer, HTTP failures).
The MCP side is the fake Wikidata MCP server of ``tests.connectors.mcp_server`` or a closed port.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import respx
from django.conf import settings as django_settings

from apps.connectors.gateway import tool_call
from apps.connectors.models import ToolCall, ToolCallStatus
from apps.connectors.services import manifest_import
from apps.core.errors import UpstreamError, ValidationFailed
from apps.core.ratelimit import RateLimiter
from apps.wikidata import action_api, adapters, clients, sparql, vectordb
from tests.connectors.mcp_server import (  # noqa: F401 - fixtures
    UNAVAILABLE,
    free_port,
    mcp_servers_fixture,
    wikidata_mcp_fixture,
)
from tests.wikidata.conftest import label_cache_reset

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MANIFEST = Path(django_settings.BASE_DIR) / "config" / "connectors.manifest.json"
API_URL = "https://www.wikidata.org/w/api.php"
VECTOR_URL = "https://wd-vectordb.wmcloud.org"
SPARQL_URL = "https://query.wikidata.org/sparql"
Q42_P31_GUID = "Q42$F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"
Q42_P31_URI = "http://www.wikidata.org/entity/statement/Q42-F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def reply(name: str, status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=fixture_bytes(name), headers={"Content-Type": "application/json"})


def constructed(body: Any, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json=body)


def tool(name: str) -> Any:
    """What an adapter reads of its ``RemoteTool``: the canonical name and the connector's timeout."""
    return SimpleNamespace(name=name, connector=SimpleNamespace(timeout_seconds=10.0))


def structured(result: dict[str, Any]) -> dict[str, Any]:
    """The structured content, after checking the MCP result shape around it."""
    assert set(result) >= {"content", "structuredContent", "isError", "source"}
    assert result["isError"] is False
    assert result["source"] == "native"
    assert result["content"] == [
        {"type": "text", "text": json.dumps(result["structuredContent"], ensure_ascii=False)}
    ]
    return result["structuredContent"]


def _limiters_reset() -> None:
    for upstream in (action_api.UPSTREAM, vectordb.UPSTREAM, sparql.UPSTREAM):
        clients.upstream_limiter(upstream).reset()
    RateLimiter("connector:wikidata", interval=1.0).reset()


@pytest.fixture(autouse=True)
def _fast_wikidata(settings) -> Iterator[None]:
    """The public endpoints (replayed by respx), limiter intervals and backoff small so nothing waits."""
    settings.WIKIDATA_API_URL = API_URL
    settings.WIKIDATA_VECTOR_URL = VECTOR_URL
    settings.WIKIDATA_SPARQL_URL = SPARQL_URL
    settings.WIKIDATA_API_INTERVAL_SECONDS = 0.001
    settings.WIKIDATA_VECTOR_INTERVAL_SECONDS = 0.001
    settings.WIKIDATA_SPARQL_INTERVAL_SECONDS = 0.001
    settings.WIKIDATA_BACKOFF_BASE_SECONDS = 0.001
    settings.WIKIDATA_MAX_RETRIES = 2
    _limiters_reset()
    yield
    _limiters_reset()


@pytest.fixture(autouse=True)
def _native_endpoints_after_mcp_fixture(request, settings) -> None:
    """The MCP fixture points the native tools at a closed port; here respx replays the public
    endpoints, so point them back once that fixture has run."""
    if "wikidata_mcp" in request.fixturenames:
        request.getfixturevalue("wikidata_mcp")
        settings.WIKIDATA_API_URL = API_URL
        settings.WIKIDATA_VECTOR_URL = VECTOR_URL
        settings.WIKIDATA_SPARQL_URL = SPARQL_URL
        settings.WIKIDATA_MAX_RETRIES = 2


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    # Labels come from the workflow's shared cache: one test's would hide another's label requests.
    label_cache_reset()
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        yield router
    label_cache_reset()


@pytest.fixture
def default_registry(db: None) -> None:
    """The default manifest imported (the fake MCP server's fixture asks for it by this name)."""
    manifest_import(data=json.loads(MANIFEST.read_text(encoding="utf-8")), actor="tests")


def labels_route(mock: respx.MockRouter, body: httpx.Response | None = None) -> respx.Route:
    return mock.get(API_URL, params={"action": "wbgetentities", "props": "labels"}).mock(
        return_value=body or reply("wikidata/wbgetentities_formatversion2_P31_Q5_labels_only.json")
    )


def claims_route(mock: respx.MockRouter) -> respx.Route:
    return mock.get(API_URL, params={"action": "wbgetclaims", "entity": "Q42", "property": "P31"}).mock(
        return_value=reply("wikidata/wbgetclaims_Q42_P31_qualifier_references_2025.json")
    )


# ----------------------------------------------------------------------------------------------- claims


def test_get_claims_of_one_property_with_guid_rank_qualifiers_references_and_labels(mock) -> None:
    claims = claims_route(mock)
    labels = labels_route(mock)

    result = adapters.get_claims(tool("wikidata.get_claims"), {"entity_id": "q42", "property_id": "P31"})

    data = structured(result)
    assert dict(claims.calls.last.request.url.params) == {
        "action": "wbgetclaims",
        "entity": "Q42",
        "property": "P31",
        "format": "json",
        "formatversion": "2",
        "maxlag": "5",
    }
    asked = set(labels.calls.last.request.url.params["ids"].split("|"))
    assert asked == {"Q42", "P31", "Q5", "P805", "Q42395533"}
    assert labels.calls.last.request.url.params["languages"] == "en|mul"
    assert (data["entity_id"], data["property_id"], data["lang"], data["count"]) == ("Q42", "P31", "en", 1)
    assert data["omittedExternalIds"] == 0
    assert data["labels"] == {"P31": "instance of", "Q5": "human"}
    (statement,) = data["statements"]
    assert statement["guid"] == Q42_P31_GUID
    assert statement["statementUri"] == Q42_P31_URI
    assert statement["rank"] == "normal"
    assert statement["mainsnak"]["value"] == {"type": "wikibase-entityid", "id": "Q5", "entityType": "item"}
    assert [q["property"] for q in statement["qualifiers"]] == ["P805"]
    assert [r["hash"] for r in statement["references"]] == [
        "a4d108601216cffd2ff1819ccf12b483486b62e7",
        "f38b0c50096908694fe215d33497be11eb3f9d3b",
        "3822724d621668aeee62ec03b07d3a36251b552f",
    ]
    assert [s["property"] for s in statement["references"][0]["snaks"]] == ["P248", "P268", "P407", "P813"]


def test_get_claims_labels_come_from_the_shared_cache_the_second_time(mock) -> None:
    claims_route(mock)
    labels = labels_route(mock)

    first = structured(
        adapters.get_claims(tool("wikidata.get_claims"), {"entity_id": "Q42", "property_id": "P31"})
    )
    again = structured(
        adapters.get_claims(tool("wikidata.get_claims"), {"entity_id": "Q42", "property_id": "P31"})
    )

    assert labels.call_count == 1
    assert again["labels"] == first["labels"] == {"P31": "instance of", "Q5": "human"}


def test_get_claims_leaves_out_external_ids_unless_asked_and_keeps_deprecated_statements(mock) -> None:
    mock.get(API_URL, params={"action": "wbgetclaims", "entity": "Q42196"}).mock(
        return_value=reply("wikidata/wbgetclaims_Q42196_blue_whale_deprecated_rank.json")
    )
    labels = labels_route(mock)

    default = structured(adapters.get_claims(tool("wikidata.get_claims"), {"entity_id": "Q42196"}))
    everything = structured(
        adapters.get_claims(
            tool("wikidata.get_claims"), {"entity_id": "Q42196", "include_external_ids": True, "lang": "de"}
        )
    )

    assert (default["count"], default["omittedExternalIds"]) == (47, 75)
    assert all(s["mainsnak"]["datatype"] != "external-id" for s in default["statements"])
    assert (everything["count"], everything["omittedExternalIds"]) == (122, 0)
    assert [(s["guid"], s["propertyId"]) for s in everything["statements"] if s["deprecated"]] == [
        ("Q42196$c63f6d65-4cf6-3a7e-ace4-a2eaa537cd9f", "P2924")
    ]
    # Labels for at most 100 ids, in batches of at most 50, in the fallback chain of the language asked.
    assert all(len(call.request.url.params["ids"].split("|")) <= 50 for call in labels.calls)
    assert labels.calls.last.request.url.params["languages"] == "de|mul|en"


def test_get_claims_of_an_id_wikibase_never_issues_is_refused_before_sending(mock) -> None:
    # Wikidata answers no-such-entity "Invalid id: Q0" (error_no_such_entity_Q0.json): refused here.
    route = mock.get(API_URL, params={"action": "wbgetclaims"}).mock(
        return_value=reply("wikidata/error_no_such_entity_Q0.json")
    )
    with pytest.raises(ValidationFailed) as raised:
        adapters.get_claims(tool("wikidata.get_claims"), {"entity_id": "Q0"})
    assert raised.value.message == (
        "Invalid arguments for tool 'wikidata.get_claims': $.entity_id: must be a Wikidata id such as Q42 "
        "or P31, not 'Q0'."
    )
    assert route.call_count == 0


def test_labels_are_best_effort(mock) -> None:
    claims_route(mock)
    labels_route(mock, constructed({"detail": "down"}, status=503))  # constructed
    data = structured(
        adapters.get_claims(tool("wikidata.get_claims"), {"entity_id": "Q42", "property_id": "P31"})
    )
    assert data["labels"] == {}
    assert [s["guid"] for s in data["statements"]] == [Q42_P31_GUID]


# ------------------------------------------------------------------------------------------ bad arguments


@pytest.mark.parametrize(
    ("adapter", "name", "arguments", "message"),
    [
        (
            adapters.get_claims,
            "wikidata.get_claims",
            {"entity_id": "Douglas Adams", "lang": 5, "depth": 2},
            "Invalid arguments for tool 'wikidata.get_claims': "
            "$.depth: unknown argument; wikidata.get_claims takes entity_id, property_id, lang, "
            "include_external_ids; "
            "$.entity_id: must be a Wikidata id such as Q42 or P31, not 'Douglas Adams'; "
            "$.lang: must be a string, not int.",
        ),
        (
            adapters.get_claims,
            "wikidata.get_claims",
            {"entity_id": " ", "property_id": "Q5", "include_external_ids": "yes"},
            "Invalid arguments for tool 'wikidata.get_claims': "
            "$.entity_id: must not be empty; "
            "$.include_external_ids: must be true or false, not str; "
            "$.property_id: must be a Wikidata id such as P31, not 'Q5'.",
        ),
        (
            adapters.vector_search_items,
            "wikidata.vector_search_items",
            {"K": 51, "instanceof": "Q5,human", "lang": "English"},
            "Invalid arguments for tool 'wikidata.vector_search_items': "
            "$.K: must be an integer from 1 to 50 (got 51); "
            "$.instanceof: takes item ids such as Q5, not HUMAN; "
            "$.lang: must be a language code such as en, de or pt-br, not 'english'; "
            "$.query: is required (a non-empty string).",
        ),
        (
            adapters.vector_search_properties,
            "wikidata.vector_search_properties",
            {"query": "x" * 1001, "K": "ten"},
            "Invalid arguments for tool 'wikidata.vector_search_properties': "
            "$.K: must be an integer, not str; $.query: must be at most 1000 characters (got 1001).",
        ),
        (
            adapters.sparql,
            "wikidata.sparql",
            {"query": "SELECT * WHERE { ?s ?p ?o }", "K": 0},
            "Invalid arguments for tool 'wikidata.sparql': "
            "$.K: must be an integer from 1 to 1000 (got 0); "
            "$.query: unknown argument; wikidata.sparql takes sparql, K; "
            "$.sparql: is required (a non-empty string).",
        ),
        (
            adapters.get_hierarchy,
            "wikidata.get_hierarchy",
            {"entity_id": "Q42", "max_depth": -1},
            "Invalid arguments for tool 'wikidata.get_hierarchy': $.max_depth: must be an integer at least 0 "
            "(got -1).",
        ),
    ],
)
def test_bad_arguments_say_what_to_fix_and_call_nothing(mock, adapter, name, arguments, message) -> None:
    with pytest.raises(ValidationFailed) as raised:
        adapter(tool(name), arguments)
    assert raised.value.message == message
    assert raised.value.details["tool"] == name
    assert not mock.calls


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(ValidationFailed) as raised:
        adapters.get_hierarchy(tool("wikidata.get_hierarchy"), ["Q42"])  # type: ignore[arg-type]
    assert (
        raised.value.message
        == "'arguments' of tool 'wikidata.get_hierarchy' must be a JSON object, not list."
    )


# ----------------------------------------------------------------------------------------------- search

# constructed: wbgetentities labels/descriptions of the first vector hits (the service sends none)
EINSTEIN_TERMS = {
    "entities": {
        "Q937": {
            "type": "item",
            "id": "Q937",
            "labels": {"en": {"language": "en", "value": "Albert Einstein"}},
            "descriptions": {
                "en": {"language": "en", "value": "German-born theoretical physicist (1879–1955)"}
            },
        },
        "Q103998": {"type": "item", "id": "Q103998", "labels": {}, "descriptions": {}},
    }
}


def test_vector_search_items_with_labels(mock) -> None:
    vector = mock.get(f"{VECTOR_URL}/item/query/").mock(
        return_value=reply("vectordb/item_query_albert_einstein_lang_en.json")
    )
    terms = mock.get(API_URL, params={"action": "wbgetentities", "props": "labels|descriptions"}).mock(
        return_value=constructed(EINSTEIN_TERMS)
    )

    data = structured(
        adapters.vector_search_items(
            tool("wikidata.vector_search_items"), {"query": "Albert Einstein", "K": 3, "instanceof": ["q5"]}
        )
    )

    assert list(vector.calls.last.request.url.params.multi_items()) == [
        ("query", "Albert Einstein"),
        ("lang", "en"),
        ("K", "3"),
        ("instanceof", "Q5"),
    ]
    assert terms.calls.last.request.url.params["ids"] == "Q937|Q103998|Q57072"
    assert (data["via"], data["kind"], data["query"], data["lang"]) == (
        "vector",
        "item",
        "Albert Einstein",
        "en",
    )
    assert "fallback" not in data
    assert data["results"] == [
        {
            "id": "Q937",
            "kind": "item",
            "rank": 1,
            "similarity_score": 0.8606601,
            "rrf_score": 0.0196078431372549,
            "source": "Keyword Search",
            "label": "Albert Einstein",
            "description": "German-born theoretical physicist (1879–1955)",
        },
        {
            "id": "Q103998",
            "kind": "item",
            "rank": 2,
            "similarity_score": 0.74509645,
            "rrf_score": 0.0196078431372549,
            "source": "Vector Search",
            "label": None,
            "description": None,
        },
        {
            "id": "Q57072",
            "kind": "item",
            "rank": 3,
            "similarity_score": 0.72515714,
            "rrf_score": 0.019230769230769232,
            "source": "Vector Search",
        },
    ]


def test_nothing_found_by_the_vector_database_is_the_answer_not_a_fallback(mock) -> None:
    # Unlike the fact workflow's search: an instanceof filter keyword search cannot apply matched nothing.
    mock.get(f"{VECTOR_URL}/item/query/").mock(return_value=constructed([]))  # constructed
    keyword = mock.get(API_URL, params={"action": "wbsearchentities"})

    data = structured(
        adapters.vector_search_items(
            tool("wikidata.vector_search_items"), {"query": "abc", "instanceof": "Q5"}
        )
    )

    assert (data["via"], data["results"]) == ("vector", [])
    assert "fallback" not in data and keyword.call_count == 0


def test_vector_database_failure_falls_back_to_keyword_search(mock) -> None:
    vector = mock.get(f"{VECTOR_URL}/item/query/").mock(
        return_value=constructed({"detail": "Internal Server Error"}, status=503)  # constructed
    )
    keyword = mock.get(API_URL, params={"action": "wbsearchentities"}).mock(
        return_value=reply("wikidata/wbsearchentities_abc_2017.json")
    )

    data = structured(
        adapters.vector_search_items(tool("wikidata.vector_search_items"), {"query": "abc", "K": 2})
    )

    assert vector.call_count == 3  # the first try and WIKIDATA_MAX_RETRIES retries
    params = keyword.calls.last.request.url.params
    assert (params["search"], params["language"], params["type"], params["limit"]) == (
        "abc",
        "en",
        "item",
        "2",
    )
    assert data["via"] == "keyword"
    assert data["fallback"] == {
        "from": "vector",
        "reason": "the Wikidata vector database is busy or failing (HTTP 503: Internal Server Error); "
        "retry later",
    }
    # wbsearchentities ignored our limit in this 2017 recording; its hits are passed on in its order.
    assert [(hit["id"], hit["rank"], hit["source"]) for hit in data["results"][:2]] == [
        ("Q169889", 1, "keyword"),
        ("Q286874", 2, "keyword"),
    ]
    assert data["results"][0] == {
        "id": "Q169889",
        "kind": "item",
        "rank": 1,
        "source": "keyword",
        "label": "American Broadcasting Company",
        "description": "American broadcast television network",
        "match": {"type": "alias", "language": "en", "text": "ABC"},
        "aliases": ["ABC"],
    }


def test_property_search_unreachable_vector_database_falls_back_and_both_down_is_an_upstream_error(
    mock,
) -> None:
    mock.get(f"{VECTOR_URL}/property/query/").mock(side_effect=httpx.ConnectError("refused"))
    keyword = mock.get(API_URL, params={"action": "wbsearchentities"}).mock(
        side_effect=[
            reply("wikidata/wbsearchentities_abc_2017.json"),
            httpx.ConnectError("refused"),
            httpx.ConnectError("refused"),
            httpx.ConnectError("refused"),
        ]
    )

    data = structured(
        adapters.vector_search_properties(
            tool("wikidata.vector_search_properties"), {"query": "abc", "lang": "all"}
        )
    )
    assert data["via"] == "keyword"
    assert data["fallback"]["reason"] == (
        "could not reach the Wikidata vector database (ConnectError: refused)"
    )
    # "all" is a vector-database language only; keyword search gets English.
    assert (keyword.calls[0].request.url.params["type"], keyword.calls[0].request.url.params["language"]) == (
        "property",
        "en",
    )

    with pytest.raises(UpstreamError) as raised:
        adapters.vector_search_properties(tool("wikidata.vector_search_properties"), {"query": "abc"})
    assert raised.value.retryable is True
    assert raised.value.message == "could not reach the Wikidata Action API (ConnectError: refused)"


# ------------------------------------------------------------------------------------------------ SPARQL

SELECT = (
    "SELECT ?entity ?entityLabel ?year WHERE { ?entity wdt:P31 wd:Q5 ; wdt:P569 ?born . "
    'BIND(YEAR(?born) AS ?year) SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } } LIMIT 3'
)


def test_sparql_select_returns_at_most_k_rows(mock) -> None:
    route = mock.get(SPARQL_URL).mock(return_value=reply("wdqs/sparql_entity_label_year_integer.json"))

    data = structured(adapters.sparql(tool("wikidata.sparql"), {"sparql": SELECT, "K": 2}))

    assert route.calls.last.request.url.params["query"] == SELECT
    assert (data["form"], data["rowCount"], data["truncated"]) == ("SELECT", 3, True)
    assert data["vars"] == ["entity", "entityLabel", "year"]
    assert data["endpoint"] == SPARQL_URL
    assert data["query"] == SELECT
    assert data["rows"] == [
        {
            "entity": {"type": "uri", "value": "http://www.wikidata.org/entity/Q3731207"},
            "entityLabel": {"type": "literal", "value": "Ercole Patti", "xml:lang": "en"},
            "year": {
                "type": "literal",
                "value": "1903",
                "datatype": "http://www.w3.org/2001/XMLSchema#integer",
            },
        },
        {
            "entity": {"type": "uri", "value": "http://www.wikidata.org/entity/Q8302875"},
            "entityLabel": {"type": "literal", "value": "Jean-Claude Lalumière", "xml:lang": "en"},
            "year": {
                "type": "literal",
                "value": "1970",
                "datatype": "http://www.w3.org/2001/XMLSchema#integer",
            },
        },
    ]


def test_sparql_ask(mock) -> None:
    mock.get(SPARQL_URL).mock(return_value=constructed({"head": {}, "boolean": True}))  # constructed
    data = structured(adapters.sparql(tool("wikidata.sparql"), {"sparql": "ASK { wd:Q42 wdt:P31 wd:Q5 }"}))
    assert (data["form"], data["boolean"], data["rows"], data["truncated"]) == ("ASK", True, [], False)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            'INSERT DATA { wd:Q42 rdfs:label "vandalism" }',
            "$.sparql: only read-only SPARQL queries are allowed; found the update keyword INSERT DATA",
        ),
        (
            "PREFIX wd: <http://www.wikidata.org/entity/>\nDELETE WHERE { wd:Q42 ?p ?o }",
            "$.sparql: only read-only SPARQL queries are allowed; found the update keyword DELETE WHERE",
        ),
        (
            "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 1",
            "$.sparql: must be a SELECT or ASK query, not CONSTRUCT (this tool returns result rows, not RDF)",
        ),
    ],
)
def test_sparql_updates_and_rdf_queries_are_refused_before_any_request(mock, query, message) -> None:
    with pytest.raises(ValidationFailed) as raised:
        adapters.sparql(tool("wikidata.sparql"), {"sparql": query})
    assert raised.value.message == f"Invalid arguments for tool 'wikidata.sparql': {message}."
    assert raised.value.details["errors"][0]["path"] == "$.sparql"
    assert not mock.calls


def test_sparql_rejected_by_wdqs_is_a_terminal_upstream_error(mock) -> None:
    route = mock.get(SPARQL_URL).mock(  # constructed: WDQS's 400 for a query it cannot parse
        return_value=httpx.Response(
            400,
            text="SPARQL-QUERY: queryStr=SELECT ?x WHERE { ?x wdt:P31 }\n"
            "java.util.concurrent.ExecutionException: org.openrdf.query.MalformedQueryException: "
            'Encountered " "}" "} "" at line 1, column 30.',
        )
    )
    with pytest.raises(UpstreamError) as raised:
        adapters.sparql(tool("wikidata.sparql"), {"sparql": "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"})
    assert raised.value.retryable is False
    assert raised.value.message.startswith("the Wikidata Query Service refused the query: ")
    assert route.call_count == 1


# --------------------------------------------------------------------------------------------- hierarchy


def _entity_with(entity_id: str, label: str, claims: dict[str, list[tuple[str, str]]]) -> dict[str, Any]:
    """constructed: an item with ``P31``/``P279`` statements ``(value id, rank)``."""

    def statement(property_id: str, value: str, rank: str, index: int) -> dict[str, Any]:
        return {
            "mainsnak": {
                "snaktype": "value",
                "property": property_id,
                "datavalue": {"value": {"entity-type": "item", "id": value}, "type": "wikibase-entityid"},
                "datatype": "wikibase-item",
            },
            "type": "statement",
            "id": f"{entity_id}$00000000-0000-0000-0000-{index:012d}",
            "rank": rank,
        }

    return {
        "type": "item",
        "id": entity_id,
        "labels": {"en": {"language": "en", "value": label}},
        "claims": {
            property_id: [statement(property_id, value, rank, i) for i, (value, rank) in enumerate(values)]
            for property_id, values in claims.items()
        },
    }


def test_hierarchy_one_level_from_the_recorded_q42(mock) -> None:
    level0 = mock.get(API_URL, params={"action": "wbgetentities", "ids": "Q42"}).mock(
        return_value=reply("wikidata/wbgetentities_Q42_labels_descriptions_aliases_claims_2025.json")
    )
    last = mock.get(API_URL, params={"action": "wbgetentities", "ids": "Q5"}).mock(
        return_value=reply("wikidata/wbgetentities_formatversion2_P31_Q5_labels_only.json")
    )

    data = structured(
        adapters.get_hierarchy(tool("wikidata.get_hierarchy"), {"entity_id": "Q42", "max_depth": 1})
    )

    assert level0.calls.last.request.url.params["props"] == "labels|claims"
    assert last.calls.last.request.url.params["props"] == "labels"
    assert data == {
        "entity_id": "Q42",
        "lang": "en",
        "maxDepth": 1,
        "truncated": False,
        "nodes": {
            # The 2025 Q42 has its name only in "mul": the language fallback finds it.
            "Q42": {
                "id": "Q42",
                "label": "Douglas Adams",
                "depth": 0,
                "instanceof": ["Q5"],
                "subclassof": [],
            },
            "Q5": {"id": "Q5", "label": "human", "depth": 1},
        },
    }


def test_hierarchy_two_levels_skips_deprecated_statements_and_clamps_the_depth(mock) -> None:
    mock.get(API_URL, params={"action": "wbgetentities", "ids": "Q42"}).mock(
        return_value=reply("wikidata/wbgetentities_Q42_labels_descriptions_aliases_claims_2025.json")
    )
    q5 = _entity_with(
        "Q5",
        "human",
        {"P31": [("Q55983715", "normal")], "P279": [("Q215627", "preferred"), ("Q729", "deprecated")]},
    )
    mock.get(API_URL, params={"action": "wbgetentities", "ids": "Q5"}).mock(
        return_value=constructed({"entities": {"Q5": q5}})
    )
    mock.get(API_URL, params={"action": "wbgetentities", "ids": "Q55983715|Q215627"}).mock(
        return_value=constructed(
            {
                "entities": {
                    "Q55983715": _entity_with("Q55983715", "organisms known by a particular common name", {}),
                    "Q215627": _entity_with("Q215627", "person", {}),
                }
            }
        )
    )

    data = structured(
        adapters.get_hierarchy(tool("wikidata.get_hierarchy"), {"entity_id": "Q42", "max_depth": 50})
    )

    # 50 levels asked, 5 at most walked: the classes ran out at level 2, so nothing is left out.
    assert (data["maxDepth"], data["truncated"]) == (5, False)
    assert data["nodes"] == {
        "Q42": {"id": "Q42", "label": "Douglas Adams", "depth": 0, "instanceof": ["Q5"], "subclassof": []},
        "Q5": {
            "id": "Q5",
            "label": "human",
            "depth": 1,
            "instanceof": ["Q55983715"],
            "subclassof": ["Q215627"],
        },
        "Q55983715": {
            "id": "Q55983715",
            "label": "organisms known by a particular common name",
            "depth": 2,
            "instanceof": [],
            "subclassof": [],
        },
        "Q215627": {"id": "Q215627", "label": "person", "depth": 2, "instanceof": [], "subclassof": []},
    }


def test_hierarchy_stops_at_the_node_bound_and_says_so(mock, monkeypatch) -> None:
    monkeypatch.setattr(adapters, "MAX_HIERARCHY_NODES", 2)
    mock.get(API_URL, params={"action": "wbgetentities", "ids": "Q42"}).mock(
        return_value=reply("wikidata/wbgetentities_Q42_labels_descriptions_aliases_claims_2025.json")
    )
    q5 = _entity_with("Q5", "human", {"P279": [("Q215627", "normal")]})
    mock.get(API_URL, params={"action": "wbgetentities", "ids": "Q5"}).mock(
        return_value=constructed({"entities": {"Q5": q5}})
    )

    data = structured(adapters.get_hierarchy(tool("wikidata.get_hierarchy"), {"entity_id": "Q42"}))

    assert (data["maxDepth"], data["truncated"]) == (5, True)
    assert sorted(data["nodes"]) == ["Q42", "Q5"]
    assert data["nodes"]["Q5"] == {
        "id": "Q5",
        "label": "human",
        "depth": 1,
        "instanceof": [],
        "subclassof": [],
    }


def test_hierarchy_of_a_missing_entity_is_a_terminal_upstream_error(mock) -> None:
    mock.get(API_URL, params={"action": "wbgetentities"}).mock(
        return_value=reply("wikidata/constructed_wbgetentities_fv1_missing_id_and_sitelink.json")
    )
    with pytest.raises(UpstreamError) as raised:
        adapters.get_hierarchy(tool("wikidata.get_hierarchy"), {"entity_id": "Q99999999999"})
    assert raised.value.retryable is False
    assert raised.value.message == "Entity Q99999999999 not found on Wikidata."


def test_every_canonical_tool_has_its_adapter() -> None:
    from apps.connectors.adapters import adapter_for

    tools = [
        t["name"]
        for c in json.loads(MANIFEST.read_text())["connectors"]
        if c["id"] == "wikidata"
        for t in c["remoteTools"]
    ]
    assert sorted(tools) == sorted(adapters.ADAPTERS)
    assert all(adapter_for(name) is adapters.ADAPTERS[name] for name in tools)


# ------------------------------------------------------------------------------------ gateway fallback


def test_unreachable_mcp_server_falls_back_to_the_native_adapter(default_registry, mock, monkeypatch) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp/"
    monkeypatch.setenv("WIKIDATA_MCP_URL", url)
    claims = claims_route(mock)
    labels_route(mock)

    outcome = tool_call(name="get_statements", arguments={"entity_id": "Q42", "property_id": "P31"})

    assert (outcome["tool"], outcome["connector"]) == ("wikidata.get_claims", "wikidata")
    result = outcome["result"]
    assert result["fallback"] == {
        "from": "mcp",
        "reason": "MCP server 'wikidata' could not be reached: All connection attempts failed.",
    }
    data = structured(result)
    assert [(s["guid"], s["rank"], s["statementUri"]) for s in data["statements"]] == [
        (Q42_P31_GUID, "normal", Q42_P31_URI)
    ]
    assert claims.call_count == 1
    call = ToolCall.objects.get()
    assert (call.tool_name, call.status, call.error) == ("wikidata.get_claims", ToolCallStatus.OK, "")


def test_mcp_5xx_falls_back_but_terminal_mcp_errors_are_not_masked(wikidata_mcp, mock) -> None:
    claims = claims_route(mock)
    labels_route(mock)

    wikidata_mcp.fail_status = 503
    result = tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42", "property_id": "P31"})[
        "result"
    ]
    assert result["fallback"] == {"from": "mcp", "reason": "MCP server 'wikidata' answered HTTP 503."}
    assert result["source"] == "native"
    assert claims.call_count == 1

    # A refusal (401), a rate limit (429), and failures the server reports as text are answers: no fallback.
    for status, retryable in ((401, False), (429, True)):
        wikidata_mcp.fail_status = status
        with pytest.raises(UpstreamError) as raised:
            tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
        assert (raised.value.message, raised.value.retryable) == (
            f"MCP server 'wikidata' answered HTTP {status}.",
            retryable,
        )
    wikidata_mcp.fail_status = None
    with pytest.raises(UpstreamError) as raised:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": ""})
    assert raised.value.message == (
        "Tool 'wikidata.get_claims' of connector 'wikidata' reported a failure: Entity ID cannot be empty."
    )
    assert raised.value.retryable is False
    wikidata_mcp.unavailable = True
    with pytest.raises(UpstreamError) as raised:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})
    assert raised.value.message == (
        f"Tool 'wikidata.get_claims' of connector 'wikidata' reported a failure: {UNAVAILABLE}"
    )
    assert claims.call_count == 1  # none of these reached the native adapter
    assert [c.status for c in ToolCall.objects.order_by("pk")] == ["ok"] + ["upstream_error"] * 4


def test_native_path_down_too_raises_the_mcp_error(default_registry, mock, monkeypatch) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp/"
    monkeypatch.setenv("WIKIDATA_MCP_URL", url)
    native = mock.get(API_URL).mock(side_effect=httpx.ConnectError("refused"))

    with pytest.raises(UpstreamError) as raised:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})

    assert (
        raised.value.message == "MCP server 'wikidata' could not be reached: All connection attempts failed."
    )
    assert raised.value.details == {"connector": "wikidata", "endpoint": url, "retryable": True}
    assert native.call_count == 3  # tried, with its bounded retries


def test_terminal_native_answer_after_the_fallback_is_raised(default_registry, mock, monkeypatch) -> None:
    monkeypatch.setenv("WIKIDATA_MCP_URL", f"http://127.0.0.1:{free_port()}/mcp/")
    # Not JSON where JSON was promised: terminal (a retry would get the same page).
    mock.get(API_URL).mock(return_value=httpx.Response(200, text="<html>maintenance</html>"))

    with pytest.raises(UpstreamError) as raised:
        tool_call(name="wikidata.get_claims", arguments={"entity_id": "Q42"})

    assert raised.value.retryable is False
