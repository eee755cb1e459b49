"""The read-only SPARQL guard refuses federated queries (``SERVICE``), found by parsing, not by
substring: the word in a string, comment, IRI or name is not a ``SERVICE`` clause (issue 12)."""

from __future__ import annotations

import pytest

from apps.connectors.models import Connector, RemoteTool
from apps.core.errors import ValidationFailed
from apps.wikidata import adapters
from apps.wikidata.sparql import SparqlClient, ensure_read_only


def _refused(query: str, **kwargs) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as refused:
        ensure_read_only(query, **kwargs)
    return refused.value


def test_a_service_clause_is_refused_before_any_request(listener) -> None:
    query = f"SELECT ?s WHERE {{ SERVICE <{listener.url}> {{ ?s ?p ?o }} }}"

    with pytest.raises(ValidationFailed) as refused:
        SparqlClient(endpoint=listener.url).select(query)

    assert refused.value.message == (
        f"federated SPARQL queries are not allowed; found SERVICE <{listener.url}>; "
        "only the query service's own services (e.g. wikibase:label) are"
    )
    assert refused.value.details == {"field": "query", "keyword": "SERVICE", "service": listener.url}
    assert listener.connections == 0


def test_the_sparql_tool_refuses_it_as_an_invalid_argument(listener, settings) -> None:
    settings.WIKIDATA_SPARQL_URL = listener.url
    tool = RemoteTool(name="wikidata.sparql", connector=Connector(slug="wikidata"))
    query = f"SELECT * WHERE {{ ?s ?p ?o . SERVICE SILENT <{listener.url}sparql> {{ ?s ?q ?v }} }}"

    with pytest.raises(ValidationFailed) as refused:
        adapters.sparql(tool, {"sparql": query})

    message = (
        f"federated SPARQL queries are not allowed; found SERVICE <{listener.url}sparql>; "
        "only the query service's own services (e.g. wikibase:label) are"
    )
    assert refused.value.details == {
        "tool": "wikidata.sparql",
        "errors": [{"path": "$.sparql", "message": message}],
    }
    assert listener.connections == 0


@pytest.mark.parametrize(
    ("query", "service"),
    [
        ("select * where { service <http://127.0.0.1:9/> { ?s ?p ?o } }", "http://127.0.0.1:9/"),
        (
            "SELECT * WHERE { SERVICE ?endpoint { ?s ?p ?o } VALUES ?endpoint { <http://10.0.0.1/> } }",
            "?endpoint",
        ),
        (
            "SELECT * WHERE { OPTIONAL { SERVICE <http://169.254.169.254/> { ?s ?p ?o } } }",
            "http://169.254.169.254/",
        ),
        (
            "SELECT * WHERE { { SELECT ?s WHERE { SERVICE <http://x.test/> { ?s ?p ?o } } } }",
            "http://x.test/",
        ),
        # WDQS's prefix redeclared to somewhere else: the declaration wins.
        (
            "PREFIX wikibase: <http://127.0.0.1:9/> SELECT * WHERE { SERVICE wikibase:label { ?s ?p ?o } }",
            "http://127.0.0.1:9/label",
        ),
        (
            "PREFIX ex: <http://127.0.0.1:9/> SELECT * WHERE { SERVICE ex:sparql { ?s ?p ?o } }",
            "http://127.0.0.1:9/sparql",
        ),
        ("SELECT * WHERE { SERVICE undeclared:endpoint { ?s ?p ?o } }", "undeclared:endpoint"),
        # The grammar expands \\u escapes before it reads keywords; so does the guard.
        ("SELECT * WHERE { SERV\\u0049CE <http://127.0.0.1:9/> { ?s ?p ?o } }", "http://127.0.0.1:9/"),
        ("SELECT * WHERE { SERVICE <http://127.0.0.1:9/\\u003e { ?s ?p ?o } }", "<"),
    ],
)
def test_federated_queries_are_refused(query: str, service: str) -> None:
    error = _refused(query)
    assert (error.details["keyword"], error.details["service"]) == ("SERVICE", service)


@pytest.mark.parametrize(
    "query",
    [
        'SELECT ?item WHERE { ?item rdfs:label "customer service"@en }',
        "SELECT ?item WHERE { ?item rdfs:label 'SERVICE <http://127.0.0.1:9/> { }' }",
        'SELECT ?item WHERE { ?item schema:description """a federated SERVICE clause""" }',
        "SELECT ?item WHERE { ?item ?p ?o } # SERVICE <http://127.0.0.1:9/> { ?item ?p ?o }",
        "SELECT ?service WHERE { ?service wdt:P31 wd:Q7397 ; ex:service <http://example.org/service> }",
        "SELECT ?i ?iLabel WHERE { ?i wdt:P31 wd:Q5 . "
        'SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }',
        "SELECT * WHERE { SERVICE <http://wikiba.se/ontology#label> "
        "{ bd:serviceParam wikibase:language 'en' } }",
        "SELECT * WHERE { SERVICE bd:sample { ?s ?p ?o . bd:serviceParam bd:sample.limit 10 } }",
    ],
)
def test_the_word_elsewhere_and_the_endpoints_own_services_pass(query: str) -> None:
    assert ensure_read_only(query) == "SELECT"


def test_a_local_graph_allows_no_service_at_all() -> None:
    query = 'SELECT * WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "en" } }'
    error = _refused(query, allowed_services=frozenset())
    assert (
        error.message
        == "federated SPARQL queries are not allowed; found SERVICE <http://wikiba.se/ontology#label>"
    )
