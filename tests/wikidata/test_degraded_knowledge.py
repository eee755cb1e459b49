"""A degraded fact run that answered from knowledge entries: its page lists them (each linking to the
entry's page), the step detail reads as words, and the PROV export carries them."""

from __future__ import annotations

import json

import pytest
from rdflib import RDF, Graph, Literal, URIRef
from rdflib.namespace import PROV, RDFS

from apps.wikidata.provenance import CORTEX, fact_run_prov, knowledge_answer_uri, knowledge_entry_uri
from tests.conftest import role_client
from tests.wikidata.test_pages import make_run

pytestmark = pytest.mark.django_db

KNOWLEDGE = [
    {
        "entryId": "SEC-031",
        "domain": "security",
        "topic": "Password storage",
        "content": "Passwords must be stored with an adaptive one-way hash such as Argon2id.",
        "source": "OWASP Password Storage Cheat Sheet",
        "url": "https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html",
        "similarity": 0.7312,
    },
    {
        "entryId": "SEC-032",
        "domain": "security",
        "topic": "MD5 <is> broken",
        "content": "MD5 must not be used for passwords.",
        "source": "NIST SP 800-63B",
        "url": "javascript:alert(1)",
        "similarity": 0.6,
    },
]


def degraded_run():
    return make_run(
        question="How should passwords be hashed?",
        degraded=True,
        degraded_reason="Wikidata search failed: the upstream timed out",
        error="the upstream timed out",
        error_type="timeout",
        knowledge=KNOWLEDGE,
        steps=[{"name": "local", "status": "ok", "durationMs": 4.5, "detail": {"facts": 0, "knowledge": 2}}],
    )


def test_the_run_page_lists_its_knowledge_answers(django_assert_num_queries) -> None:
    run = degraded_run()
    client = role_client("wikidata.view_factrun")
    client.get(f"/facts/runs/{run.pk}")  # the session and permission caches warm
    # session, user, the user's and group permissions, the run, its facts.
    with django_assert_num_queries(6):
        response = client.get(f"/facts/runs/{run.pk}")
    assert response.status_code == 200
    content = response.content.decode()
    assert "This run found no facts." not in content
    assert "{&quot;facts&quot;" not in content
    assert (
        '<span class="step-detail">facts <strong>0</strong> · knowledge <strong>2</strong></span>' in content
    )
    assert (
        '<tr data-entry-id="SEC-031">\n                <th scope="row">1</th>\n'
        '                <td><a href="/knowledge/SEC-031"><code>SEC-031</code></a> Password storage</td>\n'
        '                <td class="answer-content">Passwords must be stored with an adaptive one-way hash '
        "such as Argon2id.</td>\n"
        "                <td>0.7312</td>\n"
        "                <td>security</td>\n"
        f'                <td><a href="{KNOWLEDGE[0]["url"]}" rel="noopener noreferrer">'
        "OWASP Password Storage Cheat Sheet</a></td>" in content
    )
    # Stored text is escaped; a non-http(s) URL is not a link.
    assert "MD5 &lt;is&gt; broken" in content
    assert "<td>NIST SP 800-63B</td>" in content and 'href="javascript:' not in content


def test_a_run_with_neither_facts_nor_knowledge_still_says_so() -> None:
    run = make_run(degraded=True, degraded_reason="Wikidata search failed", knowledge=[])
    content = role_client("wikidata.view_factrun").get(f"/facts/runs/{run.pk}").content.decode()
    assert '<p class="empty">This run found no facts.</p>' in content


def test_the_prov_export_has_the_knowledge_answers() -> None:
    run = degraded_run()
    graph = Graph().parse(data=fact_run_prov(run=run, fmt="turtle"), format="turtle")
    activity = URIRef(f"urn:cortexweb:fact-run:{run.pk}")
    answer, entry = knowledge_answer_uri(run.pk, 1), knowledge_entry_uri("SEC-031")
    assert entry == URIRef("urn:cortexweb:knowledge-entry:SEC-031")
    assert set(graph.objects(answer, RDF.type)) == {PROV.Entity, CORTEX.KnowledgeAnswer}
    assert (answer, PROV.wasGeneratedBy, activity) in graph
    assert (answer, PROV.wasDerivedFrom, entry) in graph
    assert (activity, PROV.used, entry) in graph
    assert graph.value(answer, RDFS.label) == Literal(KNOWLEDGE[0]["content"])
    assert graph.value(answer, CORTEX.score).toPython() == 0.7312
    assert graph.value(entry, CORTEX.entryId) == Literal("SEC-031")
    assert (entry, PROV.wasDerivedFrom, URIRef(KNOWLEDGE[0]["url"])) in graph
    # The second answer: its javascript: URL is not an IRI of the graph.
    second = knowledge_entry_uri("SEC-032")
    assert list(graph.objects(second, PROV.wasDerivedFrom)) == []
    # JSON-LD carries the same.
    document = json.loads(fact_run_prov(run=run, fmt="json-ld"))
    ids = {node["@id"] for node in document["@graph"]}
    assert {str(answer), str(entry), str(knowledge_answer_uri(run.pk, 2)), str(second)} <= ids


def test_the_page_export_is_served() -> None:
    run = degraded_run()
    response = role_client("wikidata.view_factrun").get(f"/facts/runs/{run.pk}/prov.ttl")
    assert response.status_code == 200
    assert b"cortex:KnowledgeAnswer" in response.content


def test_an_item_without_a_label_shows_its_id_once() -> None:
    from tests.wikidata.test_pages import make_fact

    run = make_run()
    fact = make_fact(run, qid_label="", pid_label="")
    client = role_client("wikidata.view_factrun")
    content = client.get(f"/facts/{fact.pk}").content.decode()
    assert (
        '<dt>Item</dt><dd><a href="https://www.wikidata.org/wiki/Q42" rel="noopener noreferrer">'
        "<code>Q42</code></a></dd>" in content
    )
    assert (
        '<dt>Property</dt><dd><a href="https://www.wikidata.org/wiki/Property:P569" '
        'rel="noopener noreferrer"><code>P569</code></a></dd>' in content
    )
    content = client.get(f"/facts/runs/{run.pk}").content.decode()
    assert (
        '<td><a href="https://www.wikidata.org/wiki/Q42" rel="noopener noreferrer"><code>Q42</code></a></td>'
        in content
    )
