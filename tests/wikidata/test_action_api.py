"""ActionApiClient: the requests it sends and how it classifies every answer (respx replays, no network)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx

from apps.core.errors import UpstreamError, ValidationFailed
from apps.wikidata.action_api import (
    DEFAULT_INTERVAL_SECONDS,
    MAX_IDS_PER_REQUEST,
    ActionApiClient,
    ActionApiError,
    Redirect,
    action_api_budget,
    action_api_url,
    parse_retry_after,
)
from apps.wikidata.statements import EntityIdValue

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "wikidata"
API_URL = "https://www.wikidata.org/w/api.php"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def reply(name: str, status: int = 200, **headers: str) -> httpx.Response:
    headers.setdefault("Content-Type", "application/json; charset=utf-8")
    return httpx.Response(status, content=fixture(name), headers=headers)


@pytest.fixture
def api() -> Iterator[respx.Router]:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as mock:
        yield mock


@pytest.fixture
def client() -> ActionApiClient:
    return ActionApiClient(api_url=API_URL, timeout=5)


def params_of(route: respx.Route, call: int = 0) -> dict[str, str]:
    return dict(route.calls[call].request.url.params)


# ------------------------------------------------------------------------------------------- settings


def test_settings_helpers_have_public_defaults_and_overrides(settings):
    if hasattr(settings, "WIKIDATA_API_URL"):
        del settings.WIKIDATA_API_URL
    assert action_api_url() == API_URL
    assert action_api_budget() == (DEFAULT_INTERVAL_SECONDS, 5)
    settings.WIKIDATA_API_URL = "http://127.0.0.1:9/w/api.php"
    settings.WIKIDATA_API_INTERVAL_SECONDS = 1.5
    assert ActionApiClient().api_url == "http://127.0.0.1:9/w/api.php"
    assert action_api_budget()[0] == 1.5


# -------------------------------------------------------------------------------- recorded: wbgetentities


def test_get_entities_sends_the_common_parameters_and_parses_q42(api, client):
    route = api.get(API_URL).mock(
        return_value=reply("wbgetentities_Q42_labels_descriptions_aliases_claims_2025.json")
    )
    result = client.get_entities(["Q42"], languages=["en"])
    params = params_of(route)
    assert params == {
        "action": "wbgetentities",
        "ids": "Q42",
        "props": "labels|descriptions|aliases|claims",
        "languages": "en|mul",
        "languagefallback": "1",
        "redirects": "yes",
        "format": "json",
        "formatversion": "2",
        "maxlag": "5",
    }
    assert route.calls[0].request.headers["User-Agent"]
    q42 = result.get("q42")
    assert q42 is not None
    assert result.label("Q42", "en") == "Douglas Adams"  # only a mul label exists
    assert q42.description("en") == "British science fiction writer and humorist (1952–2001)"
    assert q42.terms.aliases_for("en")[0].value == "Douglas Noël Adams"
    assert len(q42.statements) == 332
    assert (result.missing, result.redirects, result.requests) == ([], [], 1)
    ranks = {s.guid: s.rank for s in q42.statements if s.rank != "normal"}
    assert ranks == {
        "Q42$BE724F6B-6981-4DE9-B90C-338768A4BFC4": "preferred",
        "Q42$f51945ed-4554-b916-d01a-9d8f4048925a": "deprecated",
    }
    json.dumps(result.as_dict())


def test_formatversion2_property_and_item_labels(api, client):
    route = api.get(API_URL).mock(return_value=reply("wbgetentities_formatversion2_P31_Q5_labels_only.json"))
    result = client.get_entities(["P31", "Q5"], props=["labels"], languages=["en"])
    assert params_of(route)["ids"] == "P31|Q5"
    assert params_of(route)["props"] == "labels"
    assert result.labels("en") == {"P31": "instance of", "Q5": "human"}
    assert (result.entities["P31"].type, result.entities["P31"].datatype) == ("property", "wikibase-item")
    assert result.entities["Q5"].type == "item"


def test_sitelink_lookup_oliver_kahn(api, client):
    route = api.get(API_URL).mock(
        return_value=reply("wbgetentities_sites_enwiki_titles_Oliver_Kahn_Q131261.json")
    )
    result = client.get_entities_by_titles("enwiki", ["Oliver Kahn"])
    params = params_of(route)
    assert (params["sites"], params["titles"]) == ("enwiki", "Oliver Kahn")
    assert "ids" not in params
    assert list(result.entities) == ["Q131261"]
    kahn = result.entities["Q131261"]
    assert kahn.label("en") == "Oliver Kahn"
    assert kahn.sitelinks["enwiki"] == "Oliver Kahn"
    assert len(kahn.statements) == 35


def test_an_id_wikibase_never_issues_is_refused_before_sending(api, client):
    # Wikidata answers Q0 with no-such-entity "Invalid id: Q0" (recorded in
    # error_no_such_entity_Q0.json); the one entity-id pattern refuses it here instead.
    route = api.get(API_URL).mock(return_value=reply("error_no_such_entity_Q0.json"))
    for invalid in ("Q0", "Q042", "X1", "L7-F0"):
        with pytest.raises(ValidationFailed) as caught:
            client.get_entities([invalid])
        assert caught.value.details == {"field": "ids", "value": invalid}
    assert route.call_count == 0


# ----------------------------------------------------------------------------------- recorded: wbgetclaims


def test_get_claims_q42_p31(api, client):
    route = api.get(API_URL).mock(return_value=reply("wbgetclaims_Q42_P31_qualifier_references_2025.json"))
    (statement,) = client.get_claims("Q42", property_id="p31")
    params = params_of(route)
    assert (params["action"], params["entity"], params["property"]) == ("wbgetclaims", "Q42", "P31")
    assert (params["format"], params["formatversion"], params["maxlag"]) == ("json", "2", "5")
    assert statement.guid == "Q42$F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"
    assert statement.value == EntityIdValue(id="Q5", entity_type="item")
    assert [q.value.id for q in statement.qualifiers] == ["Q42395533"]
    assert statement.references[0].hash == "a4d108601216cffd2ff1819ccf12b483486b62e7"
    assert statement.references[0].snaks_order == ("P248", "P268", "P407", "P813")


def test_get_claims_blue_whale_keeps_the_deprecated_statement_marked(api, client):
    route = api.get(API_URL).mock(return_value=reply("wbgetclaims_Q42196_blue_whale_deprecated_rank.json"))
    statements = client.get_claims("Q42196")
    assert "property" not in params_of(route)
    assert len(statements) == 122
    assert [(s.guid, s.property_id) for s in statements if s.deprecated] == [
        ("Q42196$c63f6d65-4cf6-3a7e-ace4-a2eaa537cd9f", "P2924")
    ]
    assert {s.entity_id for s in statements} == {"Q42196"}


# ----------------------------------------------------------------------------- recorded: wbsearchentities


def test_search_entities_2017_shape_without_display(api, client):
    route = api.get(API_URL).mock(return_value=reply("wbsearchentities_abc_2017.json"))
    hits = client.search_entities("  abc ", language="en", limit=7)
    params = params_of(route)
    assert (params["action"], params["search"], params["language"], params["type"], params["limit"]) == (
        "wbsearchentities",
        "abc",
        "en",
        "item",
        "7",
    )
    assert len(hits) == 7
    assert hits[0] == {
        "id": "Q169889",
        "label": "American Broadcasting Company",
        "description": "American broadcast television network",
        "match": {"type": "alias", "language": "en", "text": "ABC"},
        "aliases": ["ABC"],
    }
    assert hits[1]["match"]["type"] == "label"
    assert hits[1]["aliases"] == []


def test_search_entities_prefers_display_terms(api, client):
    """Constructed: current Wikidata adds ``display``; the 2017 recording does not have it."""
    body = {
        "search": [
            {
                "id": "P31",
                "label": "instance of",
                "display": {
                    "label": {"value": "ist ein(e)", "language": "de"},
                    "description": {"value": "Typ", "language": "de"},
                },
                "match": {"type": "label", "language": "de", "text": "ist ein(e)"},
            }
        ],
        "success": 1,
    }
    route = api.get(API_URL).mock(return_value=httpx.Response(200, json=body))
    hits = client.search_entities("ist ein", language="de", type="property", limit=3)
    assert params_of(route)["type"] == "property"
    assert hits[0]["label"] == "ist ein(e)"
    assert hits[0]["description"] == "Typ"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": "", "language": "en"}, "query"),
        ({"query": "x" * 300, "language": "en"}, "query"),
        ({"query": "abc", "language": "en", "limit": 0}, "limit"),
        ({"query": "abc", "language": "en", "limit": 51}, "limit"),
        ({"query": "abc", "language": "en", "type": "sitelink"}, "type"),
        ({"query": "abc", "language": "not a language"}, "language"),
    ],
)
def test_search_rejects_bad_input_before_any_request(api, client, kwargs, field):
    query = kwargs.pop("query")
    with pytest.raises(ValidationFailed) as caught:
        client.search_entities(query, **kwargs)
    assert caught.value.details["field"] == field
    assert not api.calls


# ---------------------------------------------------------------------------------------- constructed


def test_constructed_redirect_missing_and_mul_fallback(api, client):
    """Constructed fixture (see tests/fixtures/wikidata/README.md): redirect, missing: true, mul label."""
    route = api.get(API_URL).mock(
        return_value=reply("constructed_wbgetentities_fv2_redirect_missing_mul_snaktypes.json")
    )
    result = client.get_entities(["Q100", "Q404404404"], languages=["de"])
    assert params_of(route)["languages"] == "de|mul|en"
    assert result.redirects == [Redirect("Q100", "Q200")]
    assert result.as_dict()["redirects"] == [{"from": "Q100", "to": "Q200"}]
    assert result.missing == ["Q404404404"]
    assert list(result.entities) == ["Q200"]
    assert result.resolve("Q100") == "Q200"
    assert result.get("Q100") is result.entities["Q200"]
    assert result.label("Q100", "de") == "Constructed Example"
    assert result.labels("de") == {"Q200": "Constructed Example", "Q100": "Constructed Example"}
    snaktypes = {s.guid: s.snaktype for s in result.statements()}
    assert snaktypes == {
        "Q200$1B1C7D44-0000-4000-8000-000000000001": "value",
        "Q200$1B1C7D44-0000-4000-8000-000000000002": "novalue",
        "Q200$1B1C7D44-0000-4000-8000-000000000003": "somevalue",
    }


def test_constructed_formatversion1_missing_id_and_failed_sitelink(api, client):
    """Constructed fixture: ``"missing": ""`` (formatversion 1) and a ``"-1"`` sitelink miss."""
    api.get(API_URL).mock(return_value=reply("constructed_wbgetentities_fv1_missing_id_and_sitelink.json"))
    result = client.get_entities(["Q99999999999"])
    assert result.entities == {}
    assert result.missing == ["Q99999999999"]
    assert result.missing_titles == [{"site": "enwiki", "title": "No Such Page For CortexWeb Tests"}]


def test_constructed_batching_120_ids_into_three_requests_through_the_gate(api):
    """Constructed: each batch answered with a formatversion 2 body naming its own ids."""

    def answer(request: httpx.Request) -> httpx.Response:
        ids = request.url.params["ids"].split("|")
        entities = {
            i: {"type": "item", "id": i, "labels": {"en": {"language": "en", "value": f"label {i}"}}}
            for i in ids
        }
        return httpx.Response(200, json={"entities": entities, "success": 1})

    route = api.get(API_URL).mock(side_effect=answer)
    entered: list[int] = []

    @contextlib.contextmanager
    def gate() -> Iterator[None]:
        entered.append(len(route.calls))
        yield

    ids = [f"Q{n}" for n in range(1, 121)]
    result = ActionApiClient(api_url=API_URL, gate=gate).get_entities(
        [*ids, "q1"], props=["labels"], languages=["en"]
    )
    assert route.call_count == 3
    assert entered == [0, 1, 2]  # the gate wraps each single request
    sizes = [len(params_of(route, n)["ids"].split("|")) for n in range(3)]
    assert sizes == [MAX_IDS_PER_REQUEST, MAX_IDS_PER_REQUEST, 20]
    assert params_of(route, 2)["ids"].split("|")[0] == "Q101"
    assert len(result.entities) == 120
    assert result.requests == 3
    assert result.label("Q120", "en") == "label Q120"


def test_constructed_failed_batch_keeps_what_earlier_batches_returned(api):
    first = {"entities": {"Q1": {"type": "item", "id": "Q1"}}, "success": 1}
    api.get(API_URL).mock(side_effect=[httpx.Response(200, json=first), httpx.Response(503)])
    with pytest.raises(UpstreamError) as caught:
        ActionApiClient(api_url=API_URL).get_entities([f"Q{n}" for n in range(1, 61)])
    assert caught.value.retryable
    assert list(caught.value.partial.entities) == ["Q1"]


def test_constructed_maxlag_is_retryable_with_retry_after_header(api, client):
    api.get(API_URL).mock(return_value=reply("constructed_error_maxlag.json", **{"Retry-After": "5"}))
    with pytest.raises(ActionApiError) as caught:
        client.get_claims("Q42")
    error = caught.value
    assert (error.retryable, error.retry_after, error.api_code) == (True, 5.0, "maxlag")
    assert error.details["retryAfter"] == 5.0


def test_constructed_maxlag_without_header_waits_the_advertised_lag(api, client):
    api.get(API_URL).mock(return_value=reply("constructed_error_maxlag.json"))
    with pytest.raises(ActionApiError) as caught:
        client.get_entities(["Q42"])
    assert (caught.value.retryable, caught.value.retry_after) == (True, 7.25)


@pytest.mark.parametrize(
    ("status", "headers", "retry_after"),
    [(429, {"Retry-After": "12"}, 12.0), (503, {"Retry-After": "3"}, 3.0), (502, {}, None), (500, {}, None)],
)
def test_constructed_429_and_5xx_are_retryable(api, client, status, headers, retry_after):
    api.get(API_URL).mock(return_value=httpx.Response(status, text="busy", headers=headers))
    with pytest.raises(UpstreamError) as caught:
        client.get_claims("Q42")
    assert caught.value.retryable
    assert caught.value.retry_after == retry_after
    assert caught.value.details["status"] == status


@pytest.mark.parametrize(
    "exception", [httpx.ReadTimeout("slow"), httpx.ConnectTimeout("slow"), httpx.ConnectError("refused")]
)
def test_constructed_timeouts_and_connection_errors_are_retryable(api, client, exception):
    api.get(API_URL).mock(side_effect=exception)
    with pytest.raises(UpstreamError) as caught:
        client.search_entities("abc", language="en")
    assert caught.value.retryable
    assert caught.value.details["reason"] in {"timeout", "connection"}


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="<html>not json</html>"),
        httpx.Response(200, content=b'{"entities": {"Q1": '),
        httpx.Response(200, json=["a", "list"]),
        httpx.Response(200, json={"success": 1}),
        httpx.Response(200, json={"entities": {"Q1": {"id": "Q1", "claims": {"P31": [{"rank": "normal"}]}}}}),
    ],
)
def test_constructed_malformed_answers_are_terminal(api, client, response):
    api.get(API_URL).mock(return_value=response)
    with pytest.raises(UpstreamError) as caught:
        client.get_entities(["Q1"])
    assert not caught.value.retryable


def test_constructed_other_4xx_is_terminal_and_claims_body_without_claims_is_malformed(api, client):
    api.get(API_URL).mock(side_effect=[httpx.Response(404, text="nope"), httpx.Response(200, json={"x": 1})])
    with pytest.raises(UpstreamError) as first:
        client.get_claims("Q42")
    assert (first.value.retryable, first.value.details["status"]) == (False, 404)
    with pytest.raises(UpstreamError) as second:
        client.get_claims("Q42")
    assert (second.value.retryable, second.value.details["reason"]) == (False, "malformed")


def test_bad_ids_are_rejected_without_a_request(api, client):
    with pytest.raises(ValidationFailed):
        client.get_entities(["Q42", "Douglas Adams"])
    assert client.get_entities([]).requests == 0  # nothing to look up: no request
    assert not api.calls


def test_parse_retry_after_seconds_and_dates():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("garbage") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
