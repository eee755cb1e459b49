"""VectorDbClient: the requests it sends and how it classifies every answer (respx replays, no network).

Recorded answers come from ``tests/fixtures/vectordb`` (copies of the shared recordings); every
other answer is **constructed** here and says so (see that folder's README).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx

from apps.core.errors import UpstreamError, ValidationFailed
from apps.wikidata.vectordb import (
    DEFAULT_INTERVAL_SECONDS,
    MAX_K,
    VectorDbClient,
    VectorHit,
    parse_hits,
    search_params,
    user_agent_problem,
    vector_budget,
    vector_url,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "vectordb"
BASE = "https://wd-vectordb.wmcloud.org"
ITEM_URL = f"{BASE}/item/query/"
PROPERTY_URL = f"{BASE}/property/query/"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def reply(body: bytes | str | object, status: int = 200, **headers: str) -> httpx.Response:
    headers.setdefault("Content-Type", "application/json")
    if isinstance(body, bytes | str):
        return httpx.Response(status, content=body, headers=headers)
    return httpx.Response(status, content=json.dumps(body).encode(), headers=headers)


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router:
        yield router


@pytest.fixture
def client() -> VectorDbClient:
    return VectorDbClient(base_url=BASE)


def query_params(route: respx.Route) -> list[tuple[str, str]]:
    return list(route.calls.last.request.url.params.multi_items())


# ------------------------------------------------------------------------------------- recorded answers


def test_item_search_albert_einstein_recording(mock, client):
    route = mock.get(ITEM_URL).mock(return_value=reply(fixture("item_query_albert_einstein_lang_en.json")))

    hits = client.search_items("Albert Einstein", lang="en", k=20)

    assert query_params(route) == [("query", "Albert Einstein"), ("lang", "en"), ("K", "20")]
    assert len(hits) == 20
    assert hits[0] == VectorHit(
        id="Q937",
        kind="item",
        rank=1,
        similarity_score=0.8606601,
        rrf_score=0.0196078431372549,
        source="Keyword Search",
    )
    assert hits[1].as_dict() == {
        "id": "Q103998",
        "kind": "item",
        "rank": 2,
        "similarity_score": 0.74509645,
        "rrf_score": 0.0196078431372549,
        "source": "Vector Search",
    }
    assert (hits[-1].id, hits[-1].similarity_score, hits[-1].rrf_score) == (
        "Q49987066",
        0.6999694,
        0.014705882352941176,
    )
    # The server's order (by rrf_score, with ties) is kept; similarity_score is not monotonic.
    rrf = [hit.rrf_score for hit in hits]
    assert rrf == sorted(rrf, reverse=True)
    assert hits[0].rrf_score == hits[1].rrf_score
    assert hits[4].similarity_score > hits[3].similarity_score  # Q1357500 0.7246764 after Q2030894 0.68468267
    assert {hit.source for hit in hits} == {"Keyword Search", "Vector Search"}
    assert [hit.rank for hit in hits] == list(range(1, 21))
    assert all(hit.label is None and hit.description is None for hit in hits)


def test_item_search_raw_body_recording(mock, client):
    mock.get(ITEM_URL).mock(return_value=reply(fixture("item_query_einstein_lang_en_raw_body.json")))

    hits = client.search_items("Einstein", k=MAX_K)

    assert len(hits) == 20
    assert (hits[0].id, hits[0].similarity_score, hits[0].rrf_score, hits[0].source) == (
        "Q123371",
        0.7842163,
        0.0196078431372549,
        "Vector Search",
    )
    assert (hits[1].id, hits[1].source) == ("Q46202", "Keyword Search")
    assert (hits[-1].id, hits[-1].similarity_score) == ("Q45842726", 0.6816297)


def test_item_search_arabic_translated_recording(mock, client):
    route = mock.get(ITEM_URL).mock(return_value=reply(fixture("item_query_hallo_lang_ar_translated.json")))

    hits = client.search_items("Hallo", lang="ar", k=20)

    assert ("lang", "ar") in query_params(route)
    assert [(h.id, h.similarity_score, h.source) for h in hits[:2]] == [
        ("Q3135069", 0.8231541, "Vector Search"),
        ("Q21976521", 0.79608405, "Keyword Search"),
    ]
    assert (hits[2].id, hits[2].rrf_score) == ("Q11975306", 0.019230769230769232)
    assert (hits[-1].id, hits[-1].similarity_score, hits[-1].rrf_score) == (
        "Q3296627",
        0.7971525,
        0.014492753623188406,
    )


def test_at_most_k_hits_are_returned(mock, client):
    mock.get(ITEM_URL).mock(return_value=reply(fixture("item_query_albert_einstein_lang_en.json")))

    hits = client.search_items("Albert Einstein", k=5)

    assert [hit.id for hit in hits] == ["Q937", "Q103998", "Q57072", "Q2030894", "Q1357500"]


def test_request_parameters_and_user_agent(mock, client, settings):
    route = mock.get(ITEM_URL).mock(return_value=reply(b"[]"))

    assert (
        client.search_items("  physicist  ", lang="EN", k=7, instanceof=["q5", "Q634", "Q5"], rerank=True)
        == []
    )

    request = route.calls.last.request
    assert query_params(route) == [
        ("query", "physicist"),
        ("lang", "en"),
        ("K", "7"),
        ("instanceof", "Q5,Q634"),
        ("rerank", "true"),
    ]
    assert "k" not in request.url.params  # the service reads the uppercase K only
    assert request.headers["User-Agent"] == settings.CORTEX_USER_AGENT
    # The factory's default User-Agent passes the service's rule (>= 10 chars, with a space).
    assert user_agent_problem(settings.CORTEX_USER_AGENT) is None


def test_instanceof_as_comma_string(mock, client):
    route = mock.get(ITEM_URL).mock(return_value=reply(b"[]"))

    client.search_items("river", instanceof="Q4022, Q355304")

    assert ("instanceof", "Q4022,Q355304") in query_params(route)


def test_property_search_constructed(mock, client):
    # Constructed: no /property/query/ recording exists; shape from the service's source (PID, not QID).
    body = [
        {"PID": "P569", "similarity_score": 0.71, "rrf_score": 0.0196, "source": "Vector Search"},
        {
            "PID": "P19",
            "similarity_score": 0.65,
            "rrf_score": 0.0192,
            "source": "Keyword Search",
            "reranker_score": 0.9,
        },
    ]
    route = mock.get(PROPERTY_URL).mock(return_value=reply(body))

    hits = client.search_properties("date of birth", k=2, exclude_external_ids=True)

    assert query_params(route) == [
        ("query", "date of birth"),
        ("lang", "en"),
        ("K", "2"),
        ("exclude_external_ids", "true"),
    ]
    assert [(h.id, h.kind) for h in hits] == [("P569", "property"), ("P19", "property")]
    assert hits[1].as_dict()["reranker_score"] == 0.9
    assert "reranker_score" not in hits[0].as_dict()


def test_labels_are_kept_when_present_constructed():
    # Constructed: the service sends no label today; a future one is kept, not dropped.
    body = [{"QID": "Q42", "similarity_score": 1, "label": "Douglas Adams", "description": "writer"}]
    (hit,) = parse_hits(body, kind="item")
    assert hit.as_dict() == {
        "id": "Q42",
        "kind": "item",
        "rank": 1,
        "similarity_score": 1.0,
        "label": "Douglas Adams",
        "description": "writer",
    }


def test_gate_wraps_each_request(mock, client):
    mock.get(ITEM_URL).mock(return_value=reply(b"[]"))
    entered: list[int] = []

    @contextlib.contextmanager
    def gate() -> Iterator[None]:
        entered.append(1)
        yield

    VectorDbClient(base_url=BASE, gate=gate).search_items("x")
    assert entered == [1]


def test_settings_helpers(settings):
    assert vector_url() == BASE
    settings.WIKIDATA_VECTOR_URL = "http://127.0.0.1:9/"
    assert vector_url() == "http://127.0.0.1:9"
    assert VectorDbClient().base_url == "http://127.0.0.1:9"
    assert vector_budget() == (DEFAULT_INTERVAL_SECONDS, 3)


# ---------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs",
    [
        {"query": ""},
        {"query": "   "},
        {"query": "x" * 1001},
        {"query": "x", "k": 0},
        {"query": "x", "k": MAX_K + 1},
        {"query": "x", "k": True},
        {"query": "x", "k": "5"},
        {"query": "x", "lang": "e n"},
        {"query": "x", "lang": ""},
        {"query": "x", "instanceof": "Q5,human"},
        {"query": "x", "instanceof": ["P31"]},
    ],
)
def test_bad_input_is_refused_before_any_request(mock, client, kwargs):
    route = mock.get(ITEM_URL).mock(return_value=reply(b"[]"))
    query = kwargs.pop("query")
    with pytest.raises(ValidationFailed):
        client.search_items(query, **kwargs)
    assert not route.called


def test_search_params_allows_lang_all_and_max_k():
    assert search_params("x", lang="all", k=MAX_K) == [("query", "x"), ("lang", "all"), ("K", "50")]


def test_a_user_agent_the_service_would_refuse_fails_before_sending(mock, client, settings):
    route = mock.get(ITEM_URL).mock(return_value=reply(b"[]"))
    settings.CORTEX_USER_AGENT = "python-httpx/0.28"  # no space: refused by the service

    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")

    assert not caught.value.retryable
    assert "CORTEX_USER_AGENT" in caught.value.message
    assert caught.value.details["reason"] == "user_agent"
    assert not route.called
    assert user_agent_problem("") == "it is empty"
    assert "shorter" in str(user_agent_problem("a b"))


# ------------------------------------------------------------------------------- errors (constructed)


def test_422_string_detail_is_terminal(mock, client):
    # Constructed from the service's own message (routes/item.py).
    mock.get(ITEM_URL).mock(return_value=reply({"detail": "K must be less than 50"}, 422))
    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")
    assert not caught.value.retryable
    assert caught.value.message.endswith("K must be less than 50")
    assert caught.value.details["detail"] == "K must be less than 50"
    assert caught.value.details["status"] == 422


def test_422_fastapi_list_detail_is_terminal(mock, client):
    # Constructed: FastAPI's own validation error for a missing parameter.
    body = {
        "detail": [
            {"type": "missing", "loc": ["query", "query"], "msg": "Field required", "input": None},
            {"type": "int_parsing", "loc": ["query", "K"], "msg": "Input should be a valid integer"},
        ]
    }
    mock.get(ITEM_URL).mock(return_value=reply(body, 422))
    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")
    assert not caught.value.retryable
    assert caught.value.details["detail"] == (
        "query.query: Field required; query.K: Input should be a valid integer"
    )


def test_user_agent_rejection_is_terminal_with_a_clear_message(mock, client):
    # Constructed from the service's dependency (HTTP 400, FastAPI detail).
    mock.get(ITEM_URL).mock(return_value=reply({"detail": "A more descriptive User-Agent is required"}, 400))
    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")
    assert not caught.value.retryable
    assert caught.value.details["reason"] == "user_agent"
    assert "User-Agent" in caught.value.message
    assert "CORTEX_USER_AGENT" in caught.value.message


def test_429_is_retryable_with_retry_after(mock, client):
    # Constructed: slowapi's answer with a Retry-After header.
    mock.get(ITEM_URL).mock(
        return_value=reply({"error": "Rate limit exceeded: 30 per 1 minute"}, 429, **{"Retry-After": "42"})
    )
    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")
    assert caught.value.retryable
    assert caught.value.retry_after == 42.0
    assert caught.value.details["retryAfter"] == 42.0
    assert "Rate limit exceeded" in caught.value.message


@pytest.mark.parametrize(
    ("status", "body"),
    [(500, {"detail": "Internal Server Error"}), (502, "<html>bad gateway</html>"), (503, "")],
)
def test_5xx_is_retryable(mock, client, status, body):
    # Constructed.
    mock.get(ITEM_URL).mock(return_value=reply(body, status))
    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")
    assert caught.value.retryable
    assert caught.value.retry_after is None
    assert caught.value.details["status"] == status


@pytest.mark.parametrize(
    ("error", "reason"),
    [(httpx.ReadTimeout("slow"), "timeout"), (httpx.ConnectError("refused"), "connection")],
)
def test_transport_failures_are_retryable(mock, client, error, reason):
    mock.get(ITEM_URL).mock(side_effect=error)
    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")
    assert caught.value.retryable
    assert caught.value.details["reason"] == reason


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not json</html>",
        b'[{"QID": "Q1", "similarity_score": 0.5}',
        b'{"results": []}',
        b'[{"similarity_score": 0.5}]',
        b'[{"QID": "Q1"}]',
        b'[{"QID": "Q1", "similarity_score": "high"}]',
        b'["Q1"]',
    ],
)
def test_malformed_answers_are_terminal(mock, client, body):
    # Constructed.
    mock.get(ITEM_URL).mock(return_value=reply(body))
    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")
    assert not caught.value.retryable
    assert caught.value.details["reason"] == "malformed"


def test_redirect_and_other_statuses_are_terminal(mock, client):
    # Constructed.
    mock.get(ITEM_URL).mock(return_value=httpx.Response(307, headers={"Location": "https://elsewhere/"}))
    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")
    assert not caught.value.retryable
    assert "WIKIDATA_VECTOR_URL" in caught.value.message

    mock.get(ITEM_URL).mock(return_value=reply({"detail": "Not Found"}, 404))
    with pytest.raises(UpstreamError) as caught:
        client.search_items("x")
    assert not caught.value.retryable
    assert caught.value.message.endswith("HTTP 404: Not Found")
