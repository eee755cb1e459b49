"""``ontology_query``'s limits (issue 23): a query runs in a child process killed at the time limit,
so no operator — a backtracking regex included — delays the server's other requests; REGEX runs on
RE2; the text, the rows and the concurrent queries are capped; hostile inputs answer, never 500.
And ``owner_user_id`` of a proposal is the caller's, as ``agent_id`` is."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.test import Client
from rdflib.plugins.sparql import operators as rdflib_operators

from apps.mcp_server.services import Caller, mcp_tool_call
from apps.ontology import graph as ontology_graph_module
from apps.ontology import services, sparql_regex
from apps.ontology.models import OntologyProposal
from apps.ontology.sparql import KILL_GRACE_SECONDS, QUERY_MAX_LENGTH, RESULT_MAX_BYTES, _query_slots
from tests.mcp_server.conftest import stdio_session
from tests.ontology.test_query_and_propose import _STARTER_VECTORS, CREATE, ontology, propose, query, writer

__all__ = ["ontology", "writer"]  # fixtures used here

ISSUE_QUERY = 'ASK {{ cw:CWE89SqlInjection ?p ?o . FILTER(regex("{a}!", "^(a+)+$")) }}'
NARROWER = "Bind the patterns to each other (shared variables) or to known classes, and add a LIMIT."
# The time a fork, an answer over a pipe and a loaded 2-core machine may add to the limit.
MARGIN_SECONDS = 1.0
HEALTHZ_BOUND_SECONDS = 0.5


@pytest.fixture
def committed_ontology(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The starter ontology committed, for the live server's own connections."""

    def embed_cached(*, texts: list[str]) -> list[list[float]]:
        missing = [text for text in texts if text not in _STARTER_VECTORS]
        if missing:
            _STARTER_VECTORS.update(zip(missing, real_embed_texts(texts=missing), strict=True))
        return [_STARTER_VECTORS[text] for text in texts]

    real_embed_texts = services.embed_texts
    monkeypatch.setattr(services, "embed_texts", embed_cached)
    ontology_graph_module._cache.clear()
    services.ontology_load_default_if_empty()


@pytest.fixture
def backtracking_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    """REGEX on rdflib's own operator (Python's backtracking ``re``): work that holds the interpreter
    lock and reads no triple, which only the kill of the child can stop."""
    monkeypatch.setitem(sparql_regex._OPERATORS, "Builtin_REGEX", rdflib_operators.Builtin_REGEX)
    monkeypatch.setattr(sparql_regex, "pattern_problems", lambda nodes: [])


def _while_probing(url: str, sparql: str) -> tuple[Any, float, list[float]]:
    """The answer to ``sparql`` posted to the live server, how long it took, and the latency of each
    ``/healthz`` another thread asked meanwhile."""
    latencies: list[float] = []
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            while not done.is_set():
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                latencies.append(time.monotonic() - started)
                time.sleep(0.05)

    warm = httpx.post(f"{url}/ontology-agent/query", json={"sparql": "ASK {}"}, timeout=30)
    assert warm.status_code == 200  # the server has built the graph: only the query is timed
    prober = threading.Thread(target=probe)
    prober.start()
    try:
        time.sleep(0.1)  # the prober is connected and has measured an idle server
        started = time.monotonic()
        response = httpx.post(f"{url}/ontology-agent/query", json={"sparql": sparql}, timeout=30)
        elapsed = time.monotonic() - started
    finally:
        done.set()
        prober.join()
    assert response.status_code == 200, response.text
    return response.json(), elapsed, latencies


@pytest.mark.parametrize("count", [28, 40, 100])
def test_the_issue_regex_is_answered_at_once_on_re2_while_healthz_stays_fast(
    committed_ontology: None, cortex_server: Any, count: int
) -> None:
    answer, elapsed, healthz = _while_probing(cortex_server.url, ISSUE_QUERY.format(a="a" * count))
    assert answer == {
        "success": True,
        "validation": {"valid": True, "errors": [], "hints": []},
        "query_type": "ASK",
        "translated_sparql": None,
        "result": {"columns": ["ask"], "rows": [{"ask": False}], "row_count": 1, "truncated": False},
    }
    assert elapsed < 5.0 + MARGIN_SECONDS
    assert healthz and max(healthz) < HEALTHZ_BOUND_SECONDS, healthz


@pytest.mark.parametrize("count", [28, 40, 100])
def test_a_backtracking_regex_is_killed_at_the_limit_while_healthz_stays_fast(
    committed_ontology: None, cortex_server: Any, backtracking_regex: None, settings: Any, count: int
) -> None:
    settings.ONTOLOGY_QUERY_TIME_LIMIT_SECONDS = 1.0
    answer, elapsed, healthz = _while_probing(cortex_server.url, ISSUE_QUERY.format(a="a" * count))
    assert answer == {
        "success": False,
        "validation": {
            "valid": False,
            "errors": [
                "The query ran past the 1 s time limit and was stopped; no partial result is returned."
            ],
            "hints": [NARROWER],
        },
        "query_type": None,
        "translated_sparql": None,
        "result": None,
    }
    assert 1.0 <= elapsed < 1.0 + KILL_GRACE_SECONDS + MARGIN_SECONDS
    assert healthz and max(healthz) < HEALTHZ_BOUND_SECONDS, healthz


def test_the_mcp_tool_is_killed_at_the_same_limit(
    ontology: None, backtracking_regex: None, settings: Any
) -> None:
    settings.ONTOLOGY_QUERY_TIME_LIMIT_SECONDS = 0.5
    query("ASK {}")  # the graph built first: only the query is timed
    started = time.monotonic()
    outcome = mcp_tool_call(
        name="ontology_query",
        arguments={"sparql": ISSUE_QUERY.format(a="a" * 25)},
        caller=Caller(transport="mcp-http", token=None),
    )
    assert time.monotonic() - started < 0.5 + KILL_GRACE_SECONDS + MARGIN_SECONDS
    assert outcome.is_error is False
    assert outcome.structured["validation"]["errors"] == [
        "The query ran past the 0.5 s time limit and was stopped; no partial result is returned."
    ]
    assert "result" not in outcome.structured  # absent when stopped


def test_over_stdio_the_child_writes_nothing_on_the_protocol_channel(committed_ontology: None) -> None:
    """``manage.py mcp_stdio`` speaks JSON-RPC on stdout, which each query's child inherits: two
    calls in a row answer, so nothing but the server's own messages reached the client."""

    async def go() -> list[Any]:
        async with stdio_session() as client:
            return [
                await client.call_tool("ontology_query", {"sparql": ISSUE_QUERY.format(a="a" * 100)}),
                await client.call_tool("ontology_query", {"sparql": "ASK { cw:CWE89SqlInjection ?p ?o }"}),
            ]

    regex, plain = asyncio.run(go())
    assert regex.is_error is False and regex.structured_content["result"]["rows"] == [{"ask": False}]
    assert plain.is_error is False and plain.structured_content["result"]["rows"] == [{"ask": True}]


def test_a_query_longer_than_the_cap_is_a_422_saying_so(ontology: None) -> None:
    padding = "#" + "x" * (QUERY_MAX_LENGTH - len("ASK {}\n#"))
    assert query("ASK {}\n" + padding)["success"] is True  # exactly the cap
    response = Client().post(
        "/ontology-agent/query", {"sparql": "ASK {}\n" + padding + "x"}, content_type="application/json"
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["details"]["fields"][0]["path"] == "body.payload.sparql"
    assert f"at most {QUERY_MAX_LENGTH} characters" in error["details"]["fields"][0]["message"]


def _refused(errors: list[str], hints: list[str]) -> dict[str, Any]:
    return {
        "success": False,
        "validation": {"valid": False, "errors": errors, "hints": hints},
        "query_type": None,
        "translated_sparql": None,
        "result": None,
    }


NESTING = (
    ["The query nests too deeply to be parsed."],
    ["Flatten the nested groups ({ { … } }) or parentheses: about 30 levels parse."],
)
RE2_HINT = ["REGEX and REPLACE use RE2 syntax: no backreferences, no look-around."]


@pytest.mark.parametrize(
    ("sparql", "expected"),
    [
        (
            "SELECT * WHERE { GRAPH <http://x/> { ?s ?p ?o } }",
            _refused(
                ["GRAPH is not served: the ontology is one default graph, with no named graphs."],
                ["Write the pattern without GRAPH { … }."],
            ),
        ),
        (
            "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }",
            _refused(
                ["GRAPH is not served: the ontology is one default graph, with no named graphs."],
                ["Write the pattern without GRAPH { … }."],
            ),
        ),
        ("ASK " + "{" * 4000 + "}" * 4000, _refused(*NESTING)),
        ("ASK { FILTER(" + "(" * 4000 + "1" + ")" * 4000 + ") }", _refused(*NESTING)),
        (
            'ASK { FILTER(regex("a", "(")) }',
            _refused(
                [
                    "REGEX: regex '(' is not supported: missing ): ( (the RE2 syntax has no backreferences "
                    "or look-around)."
                ],
                RE2_HINT,
            ),
        ),
        (
            'ASK { FILTER(regex("aa", "(?=a)")) }',
            _refused(
                [
                    "REGEX: regex '(?=a)' is not supported: invalid perl operator: (?= "
                    "(the RE2 syntax has no backreferences or look-around)."
                ],
                RE2_HINT,
            ),
        ),
        (
            'SELECT (REPLACE("abc", "b", "$1x") AS ?r) WHERE {}',
            _refused(["REPLACE: the replacement names group $1; the pattern has 0."], RE2_HINT),
        ),
        (
            'ASK { FILTER(regex("a", "a", "x")) }',
            _refused(["REGEX: regex flag 'x' is not supported (only i, s and m)."], RE2_HINT),
        ),
    ],
)
def test_hostile_queries_are_refused_with_a_reason(
    ontology: None, sparql: str, expected: dict[str, Any]
) -> None:
    assert query(sparql) == expected


def test_huge_limits_offsets_and_numbers_answer_valid_json(ontology: None) -> None:
    limited = query("SELECT ?c WHERE { ?c rdfs:subClassOf cw:CWE74Injection } LIMIT 99999999999999999999999")
    assert limited["success"] is True and limited["result"]["row_count"] == 7
    assert limited["validation"]["hints"] == [
        "LIMIT 99999999999999999999999 is above the row cap: at most 1000 rows are returned."
    ]
    offset = query("SELECT ?c WHERE { ?c ?p ?o } OFFSET 99999999999999999999999 LIMIT 2")
    assert offset["success"] is True and offset["result"]["rows"] == []
    numbers = query(
        "SELECT (1e309 AS ?inf) (-1e309 AS ?ninf) (9007199254740993 AS ?big) (42 AS ?small) "
        '(xsd:integer("12a") AS ?bad) WHERE {}'
    )
    assert numbers["result"]["rows"] == [
        {"inf": "INF", "ninf": "-INF", "big": "9007199254740993", "small": 42, "bad": None}
    ]


def test_regex_and_replace_run_on_re2_with_xpath_flags_and_groups(ontology: None) -> None:
    answer = query(
        'SELECT (regex("ABC", "^b", "i") AS ?anchored) (regex("xABC", "b", "i") AS ?found) '
        '(REPLACE("a-b", "(a)-(b)", "$2\\\\$$1") AS ?swapped) (regex("a\\nb", "^b$", "m") AS ?lines) '
        "WHERE {}"
    )
    assert answer["result"]["rows"] == [{"anchored": False, "found": True, "swapped": "b$a", "lines": True}]


def test_regex_in_every_position_is_re2(ontology: None, settings: Any) -> None:
    """A FILTER, a BIND, an ORDER BY, an EXISTS and a sub-select: none backtracks (each would take
    minutes on Python's re with 40 a's)."""
    settings.ONTOLOGY_QUERY_TIME_LIMIT_SECONDS = 3.0
    evil = '"' + "a" * 40 + '!"'
    answer = query(
        "SELECT ?m WHERE { "
        f"{{ SELECT (regex({evil}, '^(a+)+$') AS ?m) WHERE {{ }} }} "
        f"FILTER(!regex({evil}, '^(a+)+$')) "
        f"FILTER NOT EXISTS {{ FILTER(regex({evil}, '^(a+)+$')) }} "
        f"BIND(REPLACE({evil}, '^(a+)+$', 'x') AS ?r) "
        f"}} ORDER BY (regex({evil}, '^(a+)+$'))"
    )
    assert answer["success"] is True, answer
    assert answer["result"]["rows"] == [{"m": False}]


def test_rows_are_cut_at_the_result_size_cap(ontology: None) -> None:
    # Each row: {"x": "a" × 100,000} = 100,009 bytes of JSON: 9 fit in 1,000,000, the 10th does not.
    grown = '"a"'
    for _ in range(5):
        grown = f'REPLACE({grown}, "a", "aaaaaaaaaa")'
    answer = query(f"SELECT ?x WHERE {{ ?s ?p ?o BIND({grown} AS ?x) }} LIMIT 20")
    assert answer["success"] is True
    assert answer["result"]["row_count"] == RESULT_MAX_BYTES // 100_009 == 9
    assert answer["result"]["truncated"] is True
    assert answer["validation"]["hints"] == [
        f"The rows are cut at {RESULT_MAX_BYTES} bytes: select fewer or shorter values."
    ]


def test_a_query_past_the_memory_cap_is_stopped(ontology: None) -> None:
    doubled = "".join(f"BIND(CONCAT(?v{n}, ?v{n}) AS ?v{n + 1}) " for n in range(31))
    answer = query(f'SELECT (STRLEN(?v31) AS ?n) WHERE {{ BIND("a" AS ?v0) {doubled} }}')
    assert answer["success"] is False and answer["result"] is None
    assert answer["validation"]["errors"] == ["The query needed more than 512 MB and was stopped."]


@pytest.fixture
def one_slot_taken(settings: Any) -> Iterator[None]:
    settings.ONTOLOGY_QUERY_CONCURRENCY = 1
    settings.ONTOLOGY_QUERY_TIME_LIMIT_SECONDS = 0.2
    with _query_slots(1).held(wait=0):
        yield


def test_a_query_finding_every_slot_taken_is_a_503_with_retry_after(
    ontology: None, one_slot_taken: None
) -> None:
    response = Client().post("/ontology-agent/query", {"sparql": "ASK {}"}, content_type="application/json")
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    assert response.json()["error"] == {
        "code": "service_unavailable",
        "message": "1 ontology queries are already running in this server process; retry in 1 s.",
        "details": {"retryAfter": 1},
    }


# ---------------------------------------------------------------------------------------------- propose


def test_owner_user_id_is_the_callers_like_agent_id(ontology: None, writer: tuple[Any, Client]) -> None:
    token, client = writer
    response = propose(client, {**CREATE, "owner_user_id": "admin"}, {"agent_id": "someone-else"})
    assert response.status_code == 200, response.content
    staged = OntologyProposal.objects.get(pk=response.json()["proposal"]["proposal_id"])
    assert staged.proposal["owner_user_id"] == f"token:{token.pk}"
    assert staged.agent_context == {
        "agent_id": f"token:{token.prefix}",
        "user_id": f"token:{token.pk}",
        "claimed_agent_id": "someone-else",
        "claimed_owner_user_id": "admin",
    }
    unclaimed = propose(client, {**CREATE, "owl_class": "cw:OtherTemplateInjection"})
    row = OntologyProposal.objects.get(pk=unclaimed.json()["proposal"]["proposal_id"])
    assert (
        row.proposal["owner_user_id"] == f"token:{token.pk}"
        and "claimed_owner_user_id" not in row.agent_context
    )
