"""SparqlClient: typed results from recorded WDQS answers, error classification, and the read-only guard.

Recorded answers come from ``tests/fixtures/wdqs`` (copies of the shared recordings); every
other answer is **constructed** here and says so (see that folder's README).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest
import respx
from rdflib.plugins.sparql.parser import parseQuery

from apps.core.errors import UpstreamError, ValidationFailed
from apps.wikidata import sparql as sparql_module
from apps.wikidata.sparql import (
    MAX_GET_QUERY_BYTES,
    RESULTS_MEDIA_TYPE,
    SparqlClient,
    SparqlValue,
    convert_literal,
    ensure_read_only,
    guid_from_statement_uri,
    parse_results,
    sparql_budget,
    sparql_url,
    statement_provenance_query,
    statement_uri,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "wdqs"
ENDPOINT = "https://query.wikidata.org/sparql"
XSD = "http://www.w3.org/2001/XMLSchema#"
SIMPLE = "SELECT ?item WHERE { ?item wdt:P31 wd:Q5 } LIMIT 1"
GUID = "Q42$F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def reply(body: bytes | str | object, status: int = 200, **headers: str) -> httpx.Response:
    headers.setdefault("Content-Type", f"{RESULTS_MEDIA_TYPE}; charset=utf-8")
    if isinstance(body, bytes | str):
        return httpx.Response(status, content=body, headers=headers)
    return httpx.Response(status, content=json.dumps(body).encode(), headers=headers)


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router:
        yield router


@pytest.fixture
def client() -> SparqlClient:
    return SparqlClient(endpoint=ENDPOINT)


# ------------------------------------------------------------------------------------- recorded answers


def test_film_result_typed_literals_languages_and_unbound_vars(mock, client):
    mock.get(ENDPOINT).mock(
        return_value=reply(fixture("sparql_film_optional_unbound_vars_lang_decimal_datetime.json"))
    )

    result = client.select(SIMPLE)

    assert len(result.vars) == 15
    assert result.vars[:3] == ["label", "wikiLink", "originalTitle"]
    assert len(result) == 1
    row = result.rows[0]
    # Unbound OPTIONAL variables are absent from the row.
    assert {"genre", "genreLabel", "musicBrainzRGId"}.isdisjoint(row)
    assert len(row) == 12
    assert row["label"] == SparqlValue("literal", "Tarzan", lang="fr", python="Tarzan")
    assert (row["originalTitle"].value, row["originalTitle"].lang) == ("Tarzan", "en")
    assert row["countryOfOriginLabel"].lang == "fr"
    assert row["countryOfOriginLabel"].value == "Allemagne"
    duration = row["duration"]
    assert duration.datatype == XSD + "decimal"
    assert duration.python == Decimal("94")
    assert isinstance(duration.python, Decimal)
    published = row["publicationDate"]
    assert published.value == "2013-01-01T00:00:00Z"
    assert published.python == datetime(2013, 1, 1, tzinfo=UTC)
    assert published.datetime == datetime(2013, 1, 1, tzinfo=UTC)
    imdb = row["imdbId"]
    assert (imdb.type, imdb.value, imdb.lang, imdb.datatype, imdb.python) == (
        "literal",
        "tt1705952",
        None,
        None,
        "tt1705952",
    )
    assert row["wikiLink"].is_uri
    assert row["wikiLink"].value == "https://fr.wikipedia.org/wiki/Tarzan%20%28film%2C%202013%29"
    assert row["wikiLink"].entity_id is None
    assert row["composer"].entity_id == "Q952428"
    assert row["director"].entity_id == "Q13704719"
    assert row["publicationDate"].as_dict() == {
        "type": "literal",
        "value": "2013-01-01T00:00:00Z",
        "datatype": XSD + "dateTime",
    }
    assert row["label"].as_dict() == {"type": "literal", "value": "Tarzan", "xml:lang": "fr"}


def test_integer_literals_and_non_ascii_labels(mock, client):
    mock.get(ENDPOINT).mock(return_value=reply(fixture("sparql_entity_label_year_integer.json")))

    result = client.select(SIMPLE)

    assert result.vars == ["entity", "entityLabel", "year"]
    assert [row["year"].python for row in result.rows] == [1903, 1970, 1937]
    assert all(type(row["year"].python) is int for row in result.rows)
    assert [row["entity"].entity_id for row in result.rows] == ["Q3731207", "Q8302875", "Q505932"]
    assert result.rows[1]["entityLabel"].value == "Jean-Claude Lalumière"
    assert result.rows[1]["entityLabel"].lang == "en"


def test_fifty_rows_with_label_service_and_the_recorded_query(mock, client):
    query = fixture("sparql_pseudonyms_label_description_altlabel_50rows.rq").decode()
    route = mock.get(ENDPOINT).mock(
        return_value=reply(fixture("sparql_pseudonyms_label_description_altlabel_50rows.json"))
    )

    result = client.select(query)

    request = route.calls.last.request
    assert request.url.params["query"] == query
    assert request.url.params["format"] == "json"
    assert request.headers["Accept"] == RESULTS_MEDIA_TYPE
    assert result.query == query
    assert result.endpoint == ENDPOINT
    assert result.vars == ["item", "pseudonyme", "itemLabel", "itemDescription", "itemAltLabel"]
    assert len(result) == 50
    unbound = sum(1 for row in result.rows for var in result.vars if var not in row)
    assert unbound == 21
    assert sum(1 for row in result.rows if "itemDescription" not in row) == 6
    assert sum(1 for row in result.rows if "itemAltLabel" not in row) == 15
    first = result.rows[0]
    assert first["item"].entity_id == "Q5798647"
    assert (first["pseudonyme"].value, first["pseudonyme"].lang, first["pseudonyme"].python) == (
        "11",
        None,
        "11",
    )
    assert (first["itemLabel"].value, first["itemLabel"].lang) == ("Daniel Rojo", "en")
    assert result.rows[1]["itemLabel"].value == "Søren Kierkegaard"
    assert result.rows[1]["itemAltLabel"].value.startswith("Climacus, Kierkegaard, Anti-Climacus, ")
    assert "itemDescription" not in result.rows[4]
    assert result.rows[4]["itemLabel"].value == "Ernesto Pérez Donaz"
    assert result.rows[-1]["itemAltLabel"].value == "Atom™"
    assert result.column("item")[-1].entity_id == "Q65843"
    assert result.as_dict()["rows"][4] == {
        "item": {"type": "uri", "value": "http://www.wikidata.org/entity/Q33188341"},
        "pseudonyme": {"type": "literal", "value": "E"},
        "itemLabel": {"type": "literal", "value": "Ernesto Pérez Donaz", "xml:lang": "en"},
    }


def test_long_queries_are_posted_as_a_form(mock, client):
    query = SIMPLE + "\n# " + "x" * MAX_GET_QUERY_BYTES
    route = mock.post(ENDPOINT).mock(return_value=reply(fixture("sparql_entity_label_year_integer.json")))

    result = client.select(query)

    request = route.calls.last.request
    assert request.url.params["format"] == "json"
    assert "query" not in request.url.params
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert parse_qs(request.content.decode())["query"] == [query]
    assert len(result) == 3


def test_gate_wraps_each_request_and_per_query_timeout(mock, client, monkeypatch):
    mock.get(ENDPOINT).mock(return_value=reply(fixture("sparql_entity_label_year_integer.json")))
    entered: list[int] = []
    timeouts: list[float | None] = []
    real_build_client = sparql_module.build_client

    def recording_build_client(**kwargs):
        timeouts.append(kwargs.get("timeout"))
        return real_build_client(**kwargs)

    @contextlib.contextmanager
    def gate() -> Iterator[None]:
        entered.append(1)
        yield

    monkeypatch.setattr(sparql_module, "build_client", recording_build_client)
    gated = SparqlClient(endpoint=ENDPOINT, timeout=20.0, gate=gate)
    gated.select(SIMPLE)
    gated.select(SIMPLE, timeout=5.0)

    assert entered == [1, 1]
    assert timeouts == [20.0, 5.0]


# -------------------------------------------------------------------------------- constructed values


def test_ask_result_constructed(mock, client):
    # Constructed: the documented ASK shape.
    mock.get(ENDPOINT).mock(return_value=reply({"head": {}, "boolean": True}))
    result = client.select("ASK { wd:Q42 wdt:P31 wd:Q5 }")
    assert result.boolean is True
    assert result.rows == []
    assert result.vars == []


def test_other_cell_types_constructed():
    # Constructed: cells the recordings do not have.
    body = {
        "head": {"vars": ["b", "d", "f", "t", "bce", "day", "wkt", "old", "n", "stmt", "weird"]},
        "results": {
            "bindings": [
                {
                    "b": {"type": "bnode", "value": "t284055162"},
                    "d": {"type": "literal", "value": "1.5E3", "datatype": XSD + "double"},
                    "f": {"type": "literal", "value": "INF", "datatype": XSD + "float"},
                    "t": {"type": "literal", "value": "true", "datatype": XSD + "boolean"},
                    "bce": {
                        "type": "literal",
                        "value": "-0500-01-01T00:00:00Z",
                        "datatype": XSD + "dateTime",
                    },
                    "day": {"type": "literal", "value": "2001-02-03", "datatype": XSD + "date"},
                    "wkt": {
                        "type": "literal",
                        "value": "Point(13.4 52.5)",
                        "datatype": "http://www.opengis.net/ont/geosparql#wktLiteral",
                    },
                    "old": {"type": "typed-literal", "value": "7", "datatype": XSD + "integer"},
                    "n": {"type": "literal", "value": "not a number", "datatype": XSD + "integer"},
                    "stmt": {
                        "type": "uri",
                        "value": "http://www.wikidata.org/entity/statement/q42-" + GUID[4:],
                    },
                    "weird": {"type": "literal", "value": "x", "datatype": XSD + "boolean"},
                }
            ]
        },
    }
    row = parse_results(body).rows[0]
    assert row["b"].is_bnode
    assert row["b"].python == "t284055162"
    assert row["d"].python == 1500.0
    assert row["f"].python == float("inf")
    assert row["t"].python is True
    assert row["bce"].python == "-0500-01-01T00:00:00Z"  # not representable: the string is kept
    assert row["bce"].datetime is None
    assert row["day"].python == date(2001, 2, 3)
    assert row["wkt"].python == "Point(13.4 52.5)"
    assert (row["old"].type, row["old"].python) == ("literal", 7)
    assert row["n"].python == "not a number"
    assert row["stmt"].claim_guid == "q42$" + GUID[4:]
    assert row["weird"].python == "x"
    assert convert_literal("0", XSD + "boolean") is False
    assert convert_literal("12.50", XSD + "decimal") == Decimal("12.50")


def test_provenance_query_round_trip_constructed(mock, client):
    query = statement_provenance_query("Q42", GUID)
    # Constructed: the shape WDQS gives for this query (statement node, value, rank, a reference URL).
    statement = "http://www.wikidata.org/entity/statement/Q42-F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"
    body = {
        "head": {"vars": ["statement", "property", "value", "rank", "reference", "refProperty", "refValue"]},
        "results": {
            "bindings": [
                {
                    "statement": {"type": "uri", "value": statement},
                    "property": {"type": "uri", "value": "http://www.wikidata.org/entity/P31"},
                    "value": {"type": "uri", "value": "http://www.wikidata.org/entity/Q5"},
                    "rank": {"type": "uri", "value": "http://wikiba.se/ontology#NormalRank"},
                    "reference": {"type": "uri", "value": "http://www.wikidata.org/reference/abc"},
                    "refProperty": {"type": "uri", "value": "http://www.wikidata.org/entity/P854"},
                    "refValue": {"type": "uri", "value": "https://example.org/source"},
                }
            ]
        },
    }
    route = mock.get(ENDPOINT).mock(return_value=reply(body))

    result = client.select(query)

    assert route.calls.last.request.url.params["query"] == query
    row = result.rows[0]
    assert row["statement"].claim_guid == GUID
    assert row["property"].entity_id == "P31"
    assert row["refProperty"].entity_id == "P854"
    assert result.query == query


# ------------------------------------------------------------------------------- errors (constructed)


def test_429_with_retry_after_is_retryable(mock, client):
    mock.get(ENDPOINT).mock(return_value=reply("Too Many Requests", 429, **{"Retry-After": "120"}))
    with pytest.raises(UpstreamError) as caught:
        client.select(SIMPLE)
    assert caught.value.retryable
    assert caught.value.retry_after == 120.0
    assert caught.value.details["retryAfter"] == 120.0


def test_429_with_http_date_retry_after(mock, client):
    mock.get(ENDPOINT).mock(
        return_value=reply("Too Many Requests", 429, **{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    )
    with pytest.raises(UpstreamError) as caught:
        client.select(SIMPLE)
    assert caught.value.retryable
    assert caught.value.retry_after == 0.0  # a date in the past: retry now


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_is_retryable(mock, client, status):
    mock.get(ENDPOINT).mock(return_value=reply("<html>Service Unavailable</html>", status))
    with pytest.raises(UpstreamError) as caught:
        client.select(SIMPLE)
    assert caught.value.retryable
    assert caught.value.details["status"] == status


def test_server_side_query_timeout_is_terminal(mock, client):
    body = (
        "SPARQL-QUERY: queryStr=SELECT ...\n"
        "java.util.concurrent.ExecutionException: java.util.concurrent.TimeoutException\n"
        "\tat java.util.concurrent.FutureTask.report(FutureTask.java:122)\n"
    )
    mock.get(ENDPOINT).mock(return_value=reply(body, 500, **{"Content-Type": "text/plain"}))
    with pytest.raises(UpstreamError) as caught:
        client.select(SIMPLE)
    assert not caught.value.retryable
    assert caught.value.details["reason"] == "query_timeout"


@pytest.mark.parametrize(
    ("error", "reason"),
    [(httpx.ReadTimeout("slow"), "timeout"), (httpx.ConnectError("refused"), "connection")],
)
def test_transport_failures_are_retryable(mock, client, error, reason):
    mock.get(ENDPOINT).mock(side_effect=error)
    with pytest.raises(UpstreamError) as caught:
        client.select(SIMPLE)
    assert caught.value.retryable
    assert caught.value.details["reason"] == reason


def test_400_syntax_error_is_terminal_with_the_servers_message(mock, client):
    body = (
        "SPARQL-QUERY: queryStr=SELECT ?x WHERE { ?x wdt:P31 }\n"
        "java.util.concurrent.ExecutionException: org.openrdf.query.MalformedQueryException: "
        'Encountered " "}" "} "" at line 1, column 30.\n'
        "\tat java.util.concurrent.FutureTask.report(FutureTask.java:122)\n"
    )
    mock.get(ENDPOINT).mock(return_value=reply(body, 400, **{"Content-Type": "text/plain"}))
    with pytest.raises(UpstreamError) as caught:
        client.select("SELECT ?x WHERE { ?x wdt:P31 }")
    error = caught.value
    assert not error.retryable
    assert error.details["reason"] == "query_rejected"
    assert "MalformedQueryException" in error.message
    assert 'Encountered " "}" "} "" at line 1, column 30.' in error.details["message"]


def test_403_is_terminal(mock, client):
    mock.get(ENDPOINT).mock(return_value=reply("Forbidden", 403, **{"Content-Type": "text/plain"}))
    with pytest.raises(UpstreamError) as caught:
        client.select(SIMPLE)
    assert not caught.value.retryable
    assert "User-Agent" in caught.value.message


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not json</html>",
        b'{"head": {"vars": ["x"]}, "results": {"bindings": [',
        b'{"head": {"vars": ["x"]}}',
        b'{"head": {"vars": "x"}, "results": {"bindings": []}}',
        b'{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"value": "no type"}}]}}',
        b'{"head": {"vars": ["x"]}, "results": {"bindings": ["row"]}}',
        b'{"head": {}, "boolean": "yes"}',
        b"[]",
    ],
)
def test_malformed_results_are_terminal(mock, client, body):
    mock.get(ENDPOINT).mock(return_value=reply(body))
    with pytest.raises(UpstreamError) as caught:
        client.select(SIMPLE)
    assert not caught.value.retryable
    assert caught.value.details["reason"] == "malformed"


def test_settings_helpers(settings):
    assert sparql_url() == ENDPOINT
    settings.WIKIDATA_SPARQL_URL = "http://127.0.0.1:9/sparql"
    settings.WIKIDATA_SPARQL_TIMEOUT_SECONDS = 12
    assert SparqlClient().endpoint == "http://127.0.0.1:9/sparql"
    assert SparqlClient().timeout == 12.0
    assert sparql_budget() == (1.0, 1)


# ------------------------------------------------------------------------------------------- read-only


@pytest.mark.parametrize(
    ("query", "keyword"),
    [
        ("INSERT DATA { wd:Q42 wdt:P31 wd:Q5 }", "INSERT DATA"),
        ("PREFIX ex: <http://example.org/>\nDELETE WHERE { ?s ?p ?o }", "DELETE WHERE"),
        ("LOAD <http://example.org/data.ttl>", "LOAD"),
        ("SELECT * WHERE { ?s ?p ?o } # a comment\nDROP ALL", "DROP"),
        ("# only a comment first\nDROP GRAPH <http://example.org/g>", "DROP"),
        ("SELECT * WHERE { ?s ?p ?o } ; drop all", "DROP"),
        ("WITH <http://example.org/g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", "WITH"),
        ("CLEAR DEFAULT", "CLEAR"),
        ("CREATE GRAPH <http://example.org/g>", "CREATE"),
        ("COPY <http://a/> TO <http://b/>", "COPY"),
        ("MOVE DEFAULT TO <http://b/>", "MOVE"),
        ("ADD <http://a/> TO <http://b/>", "ADD"),
        ('SELECT * WHERE { ?s ?p "\\u0022 } ; DROP ALL #" }', "DROP"),  # \u escapes apply before tokens
        ("SELECT * WHERE { ?s ?p ?o.DELETE { ?s ?p ?o } }", "DELETE"),
    ],
)
def test_updates_are_refused_naming_the_keyword(mock, client, query, keyword):
    route = mock.route().mock(return_value=reply({"head": {}, "boolean": True}))
    with pytest.raises(ValidationFailed) as caught:
        ensure_read_only(query)
    assert caught.value.details["keyword"] == keyword
    assert keyword in caught.value.message
    with pytest.raises(ValidationFailed):
        client.select(query)
    assert not route.called


@pytest.mark.parametrize(
    ("query", "form"),
    [
        ('SELECT ?s WHERE { ?s rdfs:label "INSERT DATA { <a> <b> <c> }"@en }', "SELECT"),
        ("SELECT ?s WHERE { ?s ?p <http://example.org/drop/delete?load=clear> }", "SELECT"),
        ("SELECT ?s WHERE { ?s ?p ?o } # DROP ALL; DELETE WHERE { ?s ?p ?o }", "SELECT"),
        ("# INSERT DATA { <a> <b> <c> }\nSELECT ?s WHERE { ?s ?p ?o }", "SELECT"),
        ("SELECT ?delete ?insert WHERE { ?delete ex:drop ?insert . ?insert ex:a.load _:clear }", "SELECT"),
        ("SELECT ?s WHERE { ?s ?p '''multi\nline DROP ALL\n''' }", "SELECT"),
        ('SELECT ?s WHERE { ?s ?p "x"@add }', "SELECT"),
        ("ASK { wd:Q42 wdt:P31 wd:Q5 }", "ASK"),
        ("CONSTRUCT WHERE { wd:Q42 ?p ?o }", "CONSTRUCT"),
        ("DESCRIBE wd:Q42", "DESCRIBE"),
        ("PREFIX ex: <http://example.org/>\nBASE <http://example.org/>\nselect * { ?s ?p ?o }", "SELECT"),
        # Blazegraph's named subquery: WITH { … } AS %name is a query, not SPARQL Update's WITH <g>.
        (
            "SELECT ?x WITH { SELECT ?x WHERE { ?x wdt:P31 wd:Q5 } LIMIT 5 } AS %people "
            "WHERE { INCLUDE %people }",
            "SELECT",
        ),
    ],
)
def test_queries_mentioning_update_words_elsewhere_are_allowed(query, form):
    assert ensure_read_only(query) == form


def test_wdqs_predeclared_prefixes_need_no_declaration():
    query = (
        "SELECT ?item ?statement ?value ?ref WHERE {\n"
        "  ?item wdt:P31 wd:Q5 ; p:P569 ?statement .\n"
        "  ?statement ps:P569 ?value ; pq:P1480 ?q ; prov:wasDerivedFrom ?ref .\n"
        "  ?ref pr:P248 ?source . ?source schema:name ?n ; rdfs:label ?l ; skos:altLabel ?a .\n"
        "  ?statement wikibase:rank wikibase:PreferredRank .\n"
        '  SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". }\n'
        "} LIMIT 10"
    )
    assert ensure_read_only(query) == "SELECT"


def test_the_update_grammar_refuses_what_the_tokenizer_misses(monkeypatch):
    # Both layers are independent: with the tokenizer blinded, rdflib's Update grammar still refuses.
    monkeypatch.setattr(sparql_module, "_lexical_verdict", lambda query: ("SELECT", None))
    sparql_module._cached_verdict.cache_clear()
    try:
        with pytest.raises(ValidationFailed) as caught:
            ensure_read_only("INSERT DATA { wd:Q42 wdt:P31 wd:Q5 }")
        assert caught.value.details["keyword"] == "INSERT DATA"
    finally:
        sparql_module._cached_verdict.cache_clear()


def test_the_query_grammar_overrules_a_false_alarm(monkeypatch):
    # A text rdflib parses as exactly one query is allowed even if the tokenizer objected.
    monkeypatch.setattr(sparql_module, "_lexical_verdict", lambda query: ("SELECT", "DROP"))
    sparql_module._cached_verdict.cache_clear()
    try:
        assert ensure_read_only("SELECT ?s WHERE { ?s ?p ?o }") == "SELECT"
    finally:
        sparql_module._cached_verdict.cache_clear()


@pytest.mark.parametrize("query", ["", "   ", "hello world", "{ ?s ?p ?o }", "PREFIX ex: <http://e/>"])
def test_non_queries_are_refused(query):
    with pytest.raises(ValidationFailed):
        ensure_read_only(query)


def test_select_refuses_construct_and_describe(mock, client):
    route = mock.route().mock(return_value=reply(b"{}"))
    with pytest.raises(ValidationFailed) as caught:
        client.select("CONSTRUCT WHERE { wd:Q42 ?p ?o }")
    assert caught.value.details["keyword"] == "CONSTRUCT"
    assert not route.called


# ------------------------------------------------------------------------------------------ provenance


def test_statement_uri_replaces_the_dollar():
    assert (
        statement_uri(GUID)
        == "http://www.wikidata.org/entity/statement/Q42-F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"
    )
    lower = "q42$D8404CDA-25E4-4334-AF13-A3290BCD9C0F"
    assert statement_uri(lower).endswith("/statement/q42-D8404CDA-25E4-4334-AF13-A3290BCD9C0F")
    assert guid_from_statement_uri(statement_uri(lower)) == lower
    assert guid_from_statement_uri("http://www.wikidata.org/entity/Q42") is None


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"qid": "Q42", "claim_guid": GUID},
            ["VALUES ?statement { <http://www.wikidata.org/entity/statement/Q42-F078"],
        ),
        (
            {"qid": "q42", "property_id": "p31"},
            ["wd:Q42 p:P31 ?statement .", "ps:P31 ?value", "VALUES ?property { wd:P31 }"],
        ),
        ({"qid": "Q42", "claim_guid": GUID, "property_id": "P31"}, ["wd:Q42 p:P31 ?statement ."]),
        ({"qid": "Q42"}, ["wd:Q42 ?claim ?statement .", "wikibase:statementProperty"]),
    ],
)
def test_provenance_query_is_a_valid_read_only_select(kwargs, expected):
    query = statement_provenance_query(**kwargs)
    for fragment in expected:
        assert fragment in query
    assert "prov:wasDerivedFrom ?reference" in query
    assert "PREFIX prov: <http://www.w3.org/ns/prov#>" in query
    assert "LIMIT 500" in query
    assert parseQuery(query)[1].name == "SelectQuery"
    assert ensure_read_only(query) == "SELECT"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"qid": "Q42 } ; DROP ALL #"},
        {"qid": "Q0"},
        {"qid": "P31"},
        {"qid": "Q42>"},
        {"qid": "Q42", "property_id": "P31 . ?s ?p ?o"},
        {"qid": "Q42", "property_id": "Q5"},
        {"qid": "Q42", "claim_guid": "Q42$not-a-guid"},
        {"qid": "Q42", "claim_guid": "Q42$F078E5B3-F9A8-480E-B7AC-D97778CBBEF9> } DROP ALL"},
        {"qid": "Q43", "claim_guid": GUID},
        {"qid": "Q42", "limit": 0},
        {"qid": "Q42", "limit": True},
    ],
)
def test_provenance_query_refuses_bad_ids(kwargs):
    with pytest.raises(ValidationFailed):
        statement_provenance_query(**kwargs)
