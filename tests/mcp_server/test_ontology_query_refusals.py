"""``ontology_query`` over MCP (issue 25, item 3): every query the ontology refuses — an update, a
syntax error, an unknown ``cw:`` name, GRAPH, SERVICE, a query stopped at the time limit — is a
tool RESULT with ``valid: false`` and the errors and hints REST's ``/ontology-agent/query`` answers
for the same text, over streamable HTTP and over stdio alike; never ``internal_error``. A query over
the length cap is the input error REST's 422 describes, in the same words."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest

from apps.ontology.sparql import QUERY_MAX_LENGTH
from tests.mcp_server.conftest import http_session, stdio_session, text_of
from tests.ontology.test_query_limits import committed_ontology

__all__ = ["committed_ontology"]  # a fixture used here

pytestmark = pytest.mark.django_db(transaction=True)

# The limit the stopped query meets, the same in this process (the live server) and the stdio child.
TIME_LIMIT = "0.5"
# Three unbound patterns over the ontology's closure: far more than half a second of work.
ENDLESS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"

REFUSED = {
    "insert": "INSERT DATA { cw:CWE89SqlInjection rdfs:label 'x' }",
    "delete": "DELETE WHERE { ?s ?p ?o }",
    "syntax": "SELECT ?s WHERE { ?s ?p }",
    "unknown name": "SELECT ?s WHERE { ?s rdfs:subClassOf cw:SqlInjektion }",
    "graph": "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }",
    "service": "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
    "bad regex": 'ASK { FILTER(regex("a", "(")) }',
    "time limit": ENDLESS,
}
TOO_LONG = "ASK {}\n#" + "x" * QUERY_MAX_LENGTH


def _steady_text(lines: list[str]) -> list[str]:
    # How far a stopped query got before the time limit differs from one run to the next.
    return [re.sub(r"\(\d+ rows read\)", "(N rows read)", line) for line in lines]


def _steady(validation: dict[str, Any]) -> dict[str, Any]:
    return {**validation, "errors": _steady_text(validation["errors"])}


def _rest(url: str, sparql: str) -> httpx.Response:
    return httpx.post(f"{url}/ontology-agent/query", json={"sparql": sparql}, timeout=60)


def _rest_validations(url: str) -> dict[str, dict[str, Any]]:
    answers = {}
    for kind, sparql in REFUSED.items():
        response = _rest(url, sparql)
        assert response.status_code == 200, (kind, response.text)
        answer = response.json()
        assert answer["success"] is False and answer["validation"]["errors"], (kind, answer)
        answers[kind] = answer["validation"]
    return answers


async def _calls(client: Any) -> dict[str, Any]:
    results = {
        kind: await client.call_tool("ontology_query", {"sparql": sparql}) for kind, sparql in REFUSED.items()
    }
    results["too long"] = await client.call_tool("ontology_query", {"sparql": TOO_LONG})
    return results


def _assert_as_rest(
    results: dict[str, Any], rest: dict[str, dict[str, Any]], too_long: dict[str, Any]
) -> None:
    for kind in REFUSED:
        result = results[kind]
        assert result.is_error is False, (kind, text_of(result))
        structured = result.structured_content
        assert structured["success"] is False, kind
        assert _steady(structured["validation"]) == _steady(rest[kind]), kind
        assert "result" not in structured, kind  # nothing ran, or nothing partial is returned
        # The text a host shows the user says the same, error by error and hint by hint.
        assert _steady_text(text_of(result).splitlines()) == _steady_text(
            [
                *(f"error: {error}" for error in rest[kind]["errors"]),
                *(f"hint: {hint}" for hint in rest[kind]["hints"]),
            ]
        ), kind
    refused = results["too long"]
    assert refused.is_error is True
    field = too_long["details"]["fields"][0]
    assert text_of(refused).splitlines()[0] == (
        f"validation_error: Invalid arguments for tool 'ontology_query': sparql: {field['message']}."
    )


@pytest.fixture
def time_limit(settings: Any) -> str:
    settings.ONTOLOGY_QUERY_TIME_LIMIT_SECONDS = float(TIME_LIMIT)
    return TIME_LIMIT


@pytest.fixture
def rest_answers(cortex_server, committed_ontology: None, time_limit: str) -> tuple[dict, dict]:
    too_long = _rest(cortex_server.url, TOO_LONG)
    assert too_long.status_code == 422
    return _rest_validations(cortex_server.url), too_long.json()["error"]


def test_the_rest_refusals_are_the_kinds_named(rest_answers: tuple[dict, dict]) -> None:
    """The REST answers the MCP ones are compared with are the refusals this module means."""
    rest, too_long = rest_answers
    assert "update keyword INSERT DATA" in rest["insert"]["errors"][0]
    assert "update keyword DELETE" in rest["delete"]["errors"][0]
    assert rest["time limit"]["valid"] is True  # a valid query, stopped
    assert _steady_text(rest["time limit"]["errors"]) == [
        f"The query ran past the {TIME_LIMIT} s time limit and was stopped (N rows read); no partial "
        "result is returned."
    ]
    assert [rest[kind]["valid"] for kind in REFUSED if kind != "time limit"] == [False] * 7
    assert rest["unknown name"]["errors"] == ["cw:SqlInjektion is not a class or property of the ontology."]
    assert f"at most {QUERY_MAX_LENGTH} characters" in too_long["details"]["fields"][0]["message"]


def test_every_refusal_is_a_result_over_http(cortex_server, rest_answers: tuple[dict, dict]) -> None:
    async def go() -> dict[str, Any]:
        async with http_session(cortex_server.mcp_url) as client:
            return await _calls(client)

    _assert_as_rest(asyncio.run(go()), *rest_answers)


def test_every_refusal_is_a_result_over_stdio(rest_answers: tuple[dict, dict], time_limit: str) -> None:
    async def go() -> dict[str, Any]:
        async with stdio_session(ONTOLOGY_QUERY_TIME_LIMIT_SECONDS=time_limit) as client:
            return await _calls(client)

    _assert_as_rest(asyncio.run(go()), *rest_answers)
