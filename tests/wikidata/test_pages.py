"""The /facts pages: asking a question (form errors, an unplannable question, a queued run), recent
runs and stored-fact search, a run's page polling while pending, and a fact's provenance page."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.test import Client

from apps.wikidata import tasks
from apps.wikidata.models import Fact, FactRun, FactRunStatus
from tests.conftest import role_client

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
GUID = "Q42$D8404CDA-25E4-4334-AF13-A3290BCD9C0F"
STATEMENT_URI = "http://www.wikidata.org/entity/statement/Q42-D8404CDA-25E4-4334-AF13-A3290BCD9C0F"
SPARQL = "SELECT ?v WHERE { wd:Q42 wdt:P569 ?v } # a&b <c>"
SPARQL_ENCODED = "SELECT%20%3Fv%20WHERE%20%7B%20wd%3AQ42%20wdt%3AP569%20%3Fv%20%7D%20%23%20a%26b%20%3Cc%3E"
PLAN = {
    "intent": "fact_query",
    "query": "When was Douglas Adams born?",
    "scope": "facts",
    "steps": [
        {
            "order": 1,
            "tool": "wikidata.vector_search_items",
            "connector": "wikidata",
            "purpose": "Find the Wikidata items the question is about (vector search).",
            "optional": False,
        },
        {
            "order": 2,
            "tool": "wikidata.get_claims",
            "connector": "wikidata",
            "purpose": "Read the claims of the top 3 results.",
            "optional": False,
        },
    ],
}
DEGRADED_BADGES = (
    '<span class="badge status-degraded">Degraded</span> · '
    '<span class="run-answered">answered from 1 stored fact</span>'
)
FORM = {"query": "When was Douglas Adams born?", "top_k": "3", "scope": "facts", "include_sparql": "on"}


def make_run(question: str = "When was Douglas Adams born?", **fields) -> FactRun:
    defaults = {
        "status": FactRunStatus.SUCCEEDED,
        "plan": PLAN,
        "finished_at": datetime(2024, 5, 1, 10, 0, 2, tzinfo=UTC),
        "duration_ms": 1834.5,
        "executions": 1,
    }
    defaults.update(fields)
    return FactRun.objects.create(question=question, **defaults)


def make_fact(run: FactRun, **fields) -> Fact:
    defaults = {
        "position": 1,
        "text": "Douglas Adams — date of birth — 1952-03-11",
        "score": 0.81234,
        "qid": "Q42",
        "qid_label": "Douglas Adams",
        "pid": "P569",
        "pid_label": "date of birth",
        "snaktype": "value",
        "datatype": "time",
        "value": {
            "type": "time",
            "time": "+1952-03-11T00:00:00Z",
            "precision": 11,
            "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
            "timezone": 0,
            "before": 0,
            "after": 0,
        },
        "value_text": "1952-03-11",
        "claim_guid": GUID,
        "rank": "normal",
        "endpoint": "https://www.wikidata.org/w/api.php",
        "retrieved_at": datetime(2024, 5, 1, 10, 0, 1, tzinfo=UTC),
    }
    defaults.update(fields)
    return Fact.objects.create(run=run, **defaults)


def snak(prop: str, label: str, text: str, *, datatype: str = "string", value: dict | None = None) -> dict:
    return {
        "property": prop,
        "propertyLabel": label,
        "snaktype": "value",
        "datatype": datatype,
        "value": value if value is not None else {"type": "string", "value": text},
        "hash": f"hash-{prop}-{text[:8]}",
        "text": text,
    }


@pytest.fixture
def client() -> Client:
    """Signed in as staff who may ask questions (and so read runs and provenance): docs/security.md."""
    return role_client("wikidata.add_factrun")


@pytest.fixture
def fact() -> Fact:
    run = make_run()
    return make_fact(
        run,
        qualifiers=[
            snak(
                "P1480",
                "sourcing circumstances",
                "circa",
                datatype="wikibase-item",
                value={"type": "wikibase-entityid", "id": "Q5727902", "entityType": "item"},
            )
        ],
        references=[
            {
                "hash": "ref-1",
                "snaks": [
                    snak("P854", "reference URL", "https://example.org/adams?a=1&b=2", datatype="url"),
                    snak(
                        "P813",
                        "retrieved",
                        "2013-12-07",
                        datatype="time",
                        value={"type": "time", "time": "+2013-12-07T00:00:00Z"},
                    ),
                ],
                "snaksOrder": ["P854", "P813"],
            },
            {
                "hash": "ref-2",
                "snaks": [snak("P854", "reference URL", "javascript:alert(1)", datatype="url")],
                "snaksOrder": ["P854"],
            },
        ],
        sparql=SPARQL,
        sparql_endpoint="https://query.wikidata.org/sparql",
        sparql_results={
            "query": SPARQL,
            "endpoint": "https://query.wikidata.org/sparql",
            "vars": ["statement", "value"],
            "rows": [
                {
                    "statement": {"type": "uri", "value": STATEMENT_URI},
                    "value": {"type": "literal", "value": "1952-03-11T00:00:00Z"},
                }
            ],
            "retrievedAt": "2024-05-01T10:00:01+00:00",
        },
    )


# --- One fact ------------------------------------------------------------------------------------


def test_fact_page_shows_the_statement_and_where_it_came_from(client: Client, fact: Fact) -> None:
    response = client.get(f"/facts/{fact.pk}")
    assert response.status_code == 200
    content = response.content.decode()
    assert content.startswith("<!doctype html>")
    assert "<h1>Douglas Adams — date of birth — 1952-03-11</h1>" in content
    assert (
        '<dt>Item</dt><dd>Douglas Adams <a href="https://www.wikidata.org/wiki/Q42" '
        'rel="noopener noreferrer"><code>Q42</code></a></dd>' in content
    )
    # The statement's anchor on its item's page is the GUID itself, "$" included.
    assert (
        f'<dt>Statement GUID</dt><dd><a href="https://www.wikidata.org/wiki/Q42#{GUID}" '
        f'rel="noopener noreferrer"><code>{GUID}</code></a></dd>' in content
    )
    assert (
        f'<a href="https://www.wikidata.org/wiki/Q42#{GUID}" rel="noopener noreferrer">'
        "Statement on Wikidata</a>" in content
    )
    assert (
        '<dt>Property</dt><dd>date of birth <a href="https://www.wikidata.org/wiki/Property:P569" '
        'rel="noopener noreferrer"><code>P569</code></a></dd>' in content
    )
    assert '<dt>Value</dt><dd>1952-03-11 <span class="tag">time</span></dd>' in content
    assert "<dt>Rank</dt><dd>normal</dd>" in content
    assert "<dt>Read from</dt><dd><code>https://www.wikidata.org/w/api.php</code></dd>" in content
    assert '<time datetime="2024-05-01T10:00:01+00:00">2024-05-01 10:00:01 UTC</time>' in content
    run = fact.run
    assert (
        f'<dt>Run</dt><dd><a href="/facts/runs/{run.pk}">When was Douglas Adams born?</a> '
        f'<a href="/facts/runs/{run.pk}"><code>{run.pk}</code></a></dd>' in content
    )
    assert f'<a href="/facts/runs/{run.pk}/prov.ttl">Run provenance (PROV-O Turtle)</a>' in content
    # Qualifiers: the property's label and the value's text.
    assert (
        '<li>sourcing circumstances <a href="https://www.wikidata.org/wiki/Property:P1480" '
        'rel="noopener noreferrer"><code>P1480</code></a>: circa</li>' in content
    )
    # References: an http(s) reference URL is a link; other snaks are text.
    assert (
        '<li>reference URL <a href="https://www.wikidata.org/wiki/Property:P854" '
        'rel="noopener noreferrer"><code>P854</code></a>: <a href="https://example.org/adams?a=1&amp;b=2" '
        'rel="noopener noreferrer">https://example.org/adams?a=1&amp;b=2</a></li>' in content
    )
    assert (
        '<li>retrieved <a href="https://www.wikidata.org/wiki/Property:P813" rel="noopener noreferrer">'
        "<code>P813</code></a>: 2013-12-07</li>" in content
    )
    assert "This statement cites no references." not in content
    assert "This fact was copied" not in content and "degraded run" not in content


def test_a_javascript_reference_url_is_text_not_a_link(client: Client, fact: Fact) -> None:
    content = client.get(f"/facts/{fact.pk}").content.decode()
    assert (
        '<li>reference URL <a href="https://www.wikidata.org/wiki/Property:P854" rel="noopener noreferrer">'
        "<code>P854</code></a>: javascript:alert(1)</li>" in content
    )
    assert 'href="javascript:' not in content
    links = re.findall(r'<a href="([^"]+)" rel="noopener noreferrer">', content)
    # Every id links to Wikidata; of the reference URLs only the http(s) one is a link.
    assert [link for link in links if not link.startswith("https://www.wikidata.org/")] == [
        "https://example.org/adams?a=1&amp;b=2",
        f"https://query.wikidata.org/#{SPARQL_ENCODED}",
        STATEMENT_URI,
    ]


def test_fact_page_shows_the_sparql_query_and_its_rows(client: Client, fact: Fact) -> None:
    content = client.get(f"/facts/{fact.pk}").content.decode()
    assert (
        '<pre class="sparql"><code>SELECT ?v WHERE { wd:Q42 wdt:P569 ?v } # a&amp;b &lt;c&gt;</code></pre>'
        in content
    )
    assert (
        f'<a href="https://query.wikidata.org/#{SPARQL_ENCODED}" rel="noopener noreferrer">'
        "Open in the Wikidata Query Service</a>" in content
    )
    assert "<dt>SPARQL endpoint</dt><dd><code>https://query.wikidata.org/sparql</code></dd>" in content
    assert '<time datetime="2024-05-01T10:00:01+00:00">2024-05-01T10:00:01+00:00</time>' in content
    assert '<th scope="col">?statement</th><th scope="col">?value</th>' in content
    assert (
        f'<tr><td><a href="{STATEMENT_URI}" rel="noopener noreferrer">{STATEMENT_URI}</a></td>'
        "<td>1952-03-11T00:00:00Z</td></tr>" in content
    )


def test_fact_without_sparql_qualifiers_or_references(client: Client) -> None:
    fact = make_fact(make_run(), value=None, value_text="", snaktype="somevalue", datatype="")
    content = client.get(f"/facts/{fact.pk}").content.decode()
    assert '<p class="empty">No qualifiers.</p>' in content
    assert '<p class="empty">This statement cites no references.</p>' in content
    assert '<p class="empty">This fact was not enriched with SPARQL.</p>' in content
    assert '<dt>Value</dt><dd>— <span class="tag">somevalue</span></dd>' in content
    assert "query.wikidata.org/#" not in content


def test_a_copied_fact_links_to_the_stored_fact_it_came_from(client: Client, fact: Fact) -> None:
    degraded = make_run(degraded=True, degraded_reason="Wikidata search failed: HTTP 503")
    copy_ = make_fact(degraded, derived_from=fact, score=0.7)
    content = client.get(f"/facts/{copy_.pk}").content.decode()
    assert (
        "this fact was copied by a degraded run from\n"
        f'        <a href="/facts/{fact.pk}">stored fact {fact.pk}</a> (found by run '
        f'<a href="/facts/runs/{fact.run_id}"><code>{fact.run_id}</code></a>).' in content
    )
    assert f'<a href="/facts/runs/{degraded.pk}">When was Douglas Adams born?</a>' in content


def test_unknown_fact_is_a_404_page(client: Client) -> None:
    response = client.get("/facts/999999")
    assert response.status_code == 404
    content = response.content.decode()
    assert "<h1>Fact not found</h1>" in content
    assert "No stored fact has the id <code>999999</code>." in content


# --- One run -------------------------------------------------------------------------------------


def test_finished_run_page_shows_plan_steps_and_results(client: Client, fact: Fact) -> None:
    run = fact.run
    run.steps = [
        {
            "name": "search",
            "tool": "wikidata.vector_search_items",
            "status": "ok",
            "startedAt": "2024-05-01T10:00:00+00:00",
            "durationMs": 412.5,
            "fallback": "the vector database failed: HTTP 503",
            "detail": {"via": "keyword", "hits": 4},
        },
        {
            "name": "labels",
            "status": "partial",
            "startedAt": "2024-05-01T10:00:01+00:00",
            "durationMs": 90.25,
            "error": "Wikidata answered <HTTP 429>",
            "errorType": "rate_limited",
            "retryable": True,
            "upstream": "wikidata-action-api",
        },
        {
            "name": "sparql",
            "tool": "wikidata.sparql",
            "status": "failed",
            "startedAt": "2024-05-01T10:00:02+00:00",
            "durationMs": 30.0,
            "error": "Malformed JSON",
            "errorType": "terminal",
            "retryable": False,
        },
    ]
    run.save()
    make_fact(
        run,
        position=2,
        claim_guid="Q42$other",
        text="Douglas Adams — sex — male",
        score=0.5,
        rank="preferred",
    )

    response = client.get(f"/facts/runs/{run.pk}")
    assert response.status_code == 200
    assert response["Vary"] == "HX-Request, Cookie"
    content = response.content.decode()
    assert "<h1>When was Douglas Adams born?</h1>" in content
    assert '<span class="badge status-succeeded">Succeeded</span></dd>' in content
    assert "degraded" not in content
    assert f'<a href="/facts/runs/{run.pk}/prov.ttl">Provenance (PROV-O Turtle)</a>' in content
    # The plan: tool and purpose of each step.
    assert re.findall(
        r'<tr><th scope="row">(\d)</th><td><code>([^<]+)</code> \(wikidata\)</td><td>([^<]+)</td>', content
    ) == [
        (
            "1",
            "wikidata.vector_search_items",
            "Find the Wikidata items the question is about (vector search).",
        ),
        ("2", "wikidata.get_claims", "Read the claims of the top 3 results."),
    ]
    # The executed steps: status, duration, errors, fallback.
    assert re.findall(r'<tr class="step-(\w+)">\s*<th scope="row">(\w+)</th>', content) == [
        ("ok", "search"),
        ("partial", "labels"),
        ("failed", "sparql"),
    ]
    assert "<td>412.5 ms</td>" in content and "<td>90.25 ms</td>" in content
    assert "Fell back to keyword search: the vector database failed: HTTP 503" in content
    assert (
        '<span class="step-detail">hits <strong>4</strong> · via <strong>keyword</strong></span>' in content
    )
    assert (
        '<p class="step-error">Wikidata answered &lt;HTTP 429&gt; (type <code>rate_limited</code>, '
        "retryable, upstream <code>wikidata-action-api</code>)</p>" in content
    )
    assert '<p class="step-error">Malformed JSON (type <code>terminal</code>, not retryable)</p>' in content
    # The results, best first, each linking to the item and to its provenance page.
    rows = re.findall(
        r'<tr data-fact-id="(\d+)">\s*<th scope="row">(\d)</th>\s*'
        r"<td>([^<]+)</td>\s*<td>([^<]+)</td>\s*<td>(\w+)</td>",
        content,
    )
    second = Fact.objects.get(claim_guid="Q42$other")
    assert rows == [
        (str(fact.pk), "1", "Douglas Adams — date of birth — 1952-03-11", "0.8123", "normal"),
        (str(second.pk), "2", "Douglas Adams — sex — male", "0.5000", "preferred"),
    ]
    assert (
        '<td>Douglas Adams <a href="https://www.wikidata.org/wiki/Q42" '
        'rel="noopener noreferrer"><code>Q42</code></a></td>' in content
    )
    assert (
        '<td><a href="https://www.wikidata.org/wiki/Property:P569" rel="noopener noreferrer">'
        "<code>P569</code></a> date of birth</td>" in content
    )
    assert f'<td><a href="/facts/{fact.pk}">/facts/{fact.pk}</a></td>' in content
    # Finished: nothing polls.
    assert "hx-trigger" not in content.split('<div id="run-results"')[1]
    assert "every 1s" not in content


def test_degraded_run_shows_its_reason_and_the_copied_facts(client: Client, fact: Fact) -> None:
    run = make_run(
        status=FactRunStatus.DEGRADED,
        degraded=True,
        degraded_reason="Wikidata search failed: the upstream timed out",
        error="the upstream timed out",
        error_type="timeout",
    )
    make_fact(run, derived_from=fact, score=0.93)
    content = client.get(f"/facts/runs/{run.pk}").content.decode()
    assert DEGRADED_BADGES in content
    assert (
        "<dt>Degraded</dt><dd>Answered from 1 stored fact: "
        "Wikidata search failed: the upstream timed out</dd>" in content
    )
    assert (
        '<td>Douglas Adams — date of birth — 1952-03-11 <span class="badge badge-warn">stored</span></td>'
        in content
    )


def test_failed_run_shows_its_error(client: Client) -> None:
    run = make_run(status=FactRunStatus.FAILED, error="list index out of range", error_type="internal")
    content = client.get(f"/facts/runs/{run.pk}").content.decode()
    assert '<span class="badge status-failed">Failed</span>' in content
    assert "<dt>Error</dt><dd>list index out of range (<code>internal</code>)</dd>" in content
    assert '<p class="empty">This run found no facts.</p>' in content


def test_pending_run_polls_every_second_until_it_finishes(client: Client) -> None:
    run = make_run(status=FactRunStatus.QUEUED, finished_at=None, duration_ms=None, executions=0)
    trigger = f'hx-get="/facts/runs/{run.pk}" hx-trigger="every 1s" hx-target="this" hx-swap="outerHTML"'
    page = client.get(f"/facts/runs/{run.pk}")
    assert page.status_code == 200
    content = page.content.decode()
    assert content.startswith("<!doctype html>")
    assert trigger in content
    assert "This run is queued; this page refreshes by itself." in content
    assert '<p class="empty">No step has run yet.</p>' in content

    # The poll gets only the fragment.
    run.status = FactRunStatus.RUNNING
    run.steps = [{"name": "search", "status": "running", "startedAt": "2024-05-01T10:00:00+00:00"}]
    run.save()
    fragment = client.get(f"/facts/runs/{run.pk}", headers=HTMX)
    assert fragment.status_code == 200
    content = fragment.content.decode()
    assert content.startswith('<div id="run-results" class="run-results run-running" aria-live="polite"\n')
    assert "<html" not in content and "<h1>" not in content
    assert trigger in content
    assert '<tr class="step-running">' in content

    run.status, run.finished_at, run.duration_ms = (
        FactRunStatus.SUCCEEDED,
        datetime(2024, 5, 1, tzinfo=UTC),
        12.0,
    )
    run.save()
    make_fact(run)
    content = client.get(f"/facts/runs/{run.pk}", headers=HTMX).content.decode()
    assert content.startswith('<div id="run-results" class="run-results run-succeeded" aria-live="polite">')
    assert "hx-trigger" not in content and "every 1s" not in content
    assert "Douglas Adams — date of birth — 1952-03-11" in content


def test_unknown_run_is_a_404_page(client: Client) -> None:
    response = client.get("/facts/runs/00000000-0000-0000-0000-000000000000")
    assert response.status_code == 404
    assert "No fact run has the id <code>00000000-0000-0000-0000-000000000000</code>." in (
        response.content.decode()
    )
    assert client.get("/facts/runs/not-a-uuid").status_code == 404


def test_questions_are_escaped(client: Client) -> None:
    run = make_run("<script>alert('x')</script> born?", status=FactRunStatus.QUEUED, finished_at=None)
    escaped = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; born?"
    for url in ("/facts", f"/facts/runs/{run.pk}"):
        content = client.get(url).content.decode()
        assert "<script>alert" not in content
        assert escaped in content


# --- Asking, recent runs, stored facts -----------------------------------------------------------


def test_facts_page_has_the_form_recent_runs_and_stored_facts(client: Client, fact: Fact) -> None:
    pending = make_run(
        "Who wrote Hitchhiker?", status=FactRunStatus.RUNNING, finished_at=None, duration_ms=None
    )
    degraded = make_run(
        "Where was Adams born?",
        status=FactRunStatus.DEGRADED,
        degraded=True,
        degraded_reason="search failed",
        duration_ms=95.0,
    )
    make_fact(degraded, derived_from=fact)
    response = client.get("/facts")
    assert response.status_code == 200
    content = response.content.decode()
    assert '<a href="/facts" aria-current="page">Facts</a>' in content
    # The form, with its defaults: top 5, facts, SPARQL on; posted with the CSRF token.
    assert 'hx-post="/facts" hx-target="#fact-query" hx-swap="outerHTML"' in content
    assert re.search(r'<input type="hidden" name="csrfmiddlewaretoken" value="[A-Za-z0-9]{64}">', content)
    assert '<input type="number" name="top_k" value="5" min="1" max="20" required id="id_top_k">' in content
    assert '<option value="facts" selected>Facts about items</option>' in content
    assert '<input type="checkbox" name="include_sparql" id="id_include_sparql" checked>' in content
    assert 'maxlength="512" minlength="2" required' in content
    # Recent runs, newest first, with status, degraded badge, fact count and duration.
    rows = re.findall(
        r'<tr data-run-id="([^"]+)">\s*<th scope="row"><a href="/facts/runs/\1">([^<]+)</a></th>\s*'
        r"<td>(.*?)</td>\s*<td>(\d+)</td>\s*<td><time[^>]*>[^<]+</time></td>\s*<td>([^<]+)</td>",
        content,
    )
    assert rows == [
        (
            str(degraded.pk),
            "Where was Adams born?",
            DEGRADED_BADGES,
            "1",
            "95.0 ms",
        ),
        (
            str(pending.pk),
            "Who wrote Hitchhiker?",
            '<span class="badge status-running">Running</span>',
            "0",
            "—",
        ),
        (
            str(fact.run_id),
            "When was Douglas Adams born?",
            '<span class="badge status-succeeded">Succeeded</span>',
            "1",
            "1834.5 ms",
        ),
    ]
    # Stored facts, newest first, linking to their provenance pages.
    assert 'hx-get="/facts" hx-target="#fact-results" hx-swap="outerHTML" hx-push-url="true"' in content
    assert re.findall(r'<tr data-fact-id="(\d+)">', content) == [
        str(pk) for pk in Fact.objects.order_by("-created_at").values_list("pk", flat=True)
    ]


def test_stored_fact_search_answers_htmx_with_the_fragment(client: Client, fact: Fact) -> None:
    other = make_fact(
        make_run("Who is Ada?"),
        qid="Q7259",
        qid_label="Ada Lovelace",
        claim_guid="Q7259$x",
        text="Ada Lovelace — occupation — mathematician",
        pid="P106",
        pid_label="occupation",
    )
    response = client.get("/facts", {"q": "Q42"}, headers=HTMX)
    assert response.status_code == 200
    content = response.content.decode()
    assert content.startswith('<div id="fact-results" class="fact-results" aria-live="polite">')
    assert "<html" not in content and "<form" not in content
    assert re.findall(r'<tr data-fact-id="(\d+)">', content) == [str(fact.pk)]
    assert (
        f'<th scope="row"><a href="/facts/{fact.pk}">Douglas Adams — date of birth — 1952-03-11</a></th>\n'
        '            <td><a href="https://www.wikidata.org/wiki/Q42" rel="noopener noreferrer">'
        "<code>Q42</code></a></td>\n"
        '            <td><a href="https://www.wikidata.org/wiki/Property:P569" rel="noopener noreferrer">'
        "<code>P569</code></a> date of birth</td>\n"
        "            <td>normal</td>" in content
    )
    content = client.get("/facts", {"q": "mathematician"}, headers=HTMX).content.decode()
    assert re.findall(r'<tr data-fact-id="(\d+)">', content) == [str(other.pk)]
    content = client.get("/facts", {"q": GUID}).content.decode()  # full page, search applied
    assert content.startswith("<!doctype html>")
    assert re.findall(r'<tr data-fact-id="(\d+)">', content) == [str(fact.pk)]
    assert f'value="{GUID}"' in content
    content = client.get("/facts", {"q": "<b>nothing</b>"}, headers=HTMX).content.decode()
    assert "No stored fact matches “&lt;b&gt;nothing&lt;/b&gt;”." in content


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({**FORM, "query": ""}, "This field is required."),
        ({**FORM, "query": "   "}, "This field is required."),
        ({**FORM, "query": "x"}, "Ensure this value has at least 2 characters (it has 1)."),
        ({**FORM, "top_k": "0"}, "Ensure this value is greater than or equal to 1."),
        ({**FORM, "top_k": "21"}, "Ensure this value is less than or equal to 20."),
        (
            {**FORM, "scope": "everything"},
            "Select a valid choice. everything is not one of the available choices.",
        ),
    ],
)
def test_bad_form_is_a_400_with_the_message_and_no_run(
    client: Client, wikidata_registry: None, form: dict, message: str
) -> None:
    response = client.post("/facts", form)
    assert response.status_code == 400
    content = response.content.decode()
    assert content.startswith("<!doctype html>")
    assert f'<small class="field-error" role="alert">{message}</small>' in content
    fragment = client.post("/facts", form, headers=HTMX)
    assert fragment.status_code == 200  # htmx swaps only 2xx
    content = fragment.content.decode()
    assert content.startswith('<div id="fact-query" class="live-search">')
    assert f'<small class="field-error" role="alert">{message}</small>' in content
    assert "HX-Redirect" not in fragment
    assert FactRun.objects.count() == 0


def test_a_question_the_registry_cannot_plan_is_a_400_with_the_reason(client: Client) -> None:
    response = client.post("/facts", FORM)  # no connector registered: no tool can search
    assert response.status_code == 400
    content = response.content.decode()
    assert (
        '<p class="notice notice-error" role="alert">Cannot plan this step (Find the Wikidata items the '
        "question is about (vector search).): no enabled tool has tag &#x27;vector&#x27; or scope "
        "&#x27;facts&#x27;. Add or enable such a tool in the registry.</p>" in content
    )
    assert 'value="When was Douglas Adams born?"' in content  # the form keeps what was asked
    assert client.post("/facts", FORM, headers=HTMX).status_code == 200
    assert FactRun.objects.count() == 0


def test_a_valid_question_queues_a_run_and_redirects_to_it(
    client: Client, wikidata_registry: None, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    enqueued: list[str] = []
    monkeypatch.setattr(tasks.fact_run_execute_task, "delay", enqueued.append)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/facts", {"query": "  When was Douglas Adams born? ", "top_k": "3", "scope": "facts"}
        )
    run = FactRun.objects.get()
    assert response.status_code == 303
    assert response["Location"] == f"/facts/runs/{run.pk}"
    assert enqueued == [str(run.pk)]
    assert (run.question, run.top_k, run.scope, run.include_sparql, run.include_deprecated, run.language) == (
        "When was Douglas Adams born?",
        3,
        "facts",
        False,  # an unticked checkbox is not sent
        False,
        "en",
    )
    assert run.status == FactRunStatus.QUEUED
    assert [step["tool"] for step in run.plan["steps"]] == [
        "wikidata.vector_search_items",
        "wikidata.get_claims",
        "wikidata.sparql",
    ]

    response = client.post("/facts", {**FORM, "scope": "properties"}, headers=HTMX)
    second = FactRun.objects.exclude(pk=run.pk).get()
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/facts/runs/{second.pk}"
    assert (second.scope, second.include_sparql, second.top_k) == ("properties", True, 3)


def test_asking_requires_csrf(wikidata_registry: None) -> None:
    client = role_client("wikidata.add_factrun", enforce_csrf_checks=True)
    assert client.post("/facts", FORM).status_code == 403
    assert FactRun.objects.count() == 0
    page = client.get("/facts")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    response = client.post("/facts", FORM, headers={**HTMX, "X-CSRFToken": token})
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/facts/runs/{FactRun.objects.get().pk}"


def test_the_run_provenance_export_is_readable_from_the_pages(client) -> None:
    run = FactRun.objects.create(question="Who?", status="succeeded")
    turtle = client.get(f"/facts/runs/{run.pk}/prov.ttl")
    assert turtle.status_code == 200 and turtle["Content-Type"].startswith("text/turtle")
    assert "prov:Activity" in turtle.content.decode()
    jsonld = client.get(f"/facts/runs/{run.pk}/prov.jsonld")
    assert jsonld.status_code == 200 and jsonld["Content-Type"] == "application/ld+json"
    assert client.get("/facts/runs/6b1f7c1e-5d0b-4a47-9f55-2f0c3f4b1a11/prov.ttl").status_code == 404
