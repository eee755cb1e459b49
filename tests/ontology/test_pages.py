# ruff: noqa: F811 - the fixtures imported from test_query_and_propose are parameters here
"""The ontology's pages (issue 14): the exports, the analysts' pages (search, a class with its
neighbourhood graph) and the operators' review queue with approve and reject."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rdflib import RDFS, Graph, URIRef

from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry
from apps.ontology.models import NAMESPACE, OntologyClass, OntologyProposal
from tests.conftest import make_user, role_client
from tests.ontology.test_query_and_propose import CREATE, ontology, propose, writer  # noqa: F401

CW = NAMESPACE
READER = "ontology.view_ontologyproposal"
REVIEWER = "ontology.change_ontologyproposal"


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, "no CSRF token on the page"
    return match.group(1)


# --- Exports -------------------------------------------------------------------------------------


def test_the_turtle_export_is_the_asserted_graph_and_the_closure_on_request(ontology: None) -> None:
    response = Client().get("/ontology/export.ttl")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/turtle; charset=utf-8"
    assert 'filename="ontology.ttl"' in response["Content-Disposition"]
    asserted = Graph().parse(data=response.content.decode(), format="turtle")
    sql, parent, inferred = (
        URIRef(CW + "CWE89SqlInjection"),
        URIRef(CW + "CWE943ImproperNeutralizationInDataQueryLogic"),
        URIRef(CW + "CWE74Injection"),
    )
    assert (sql, RDFS.subClassOf, parent) in asserted
    assert (sql, RDFS.subClassOf, inferred) not in asserted
    closure = Graph().parse(data=Client().get("/ontology/export.ttl?inferred=true").content, format="turtle")
    assert (sql, RDFS.subClassOf, inferred) in closure and len(closure) > len(asserted)


def test_the_markdown_export_zips_every_note_by_domain(ontology: None) -> None:
    response = Client().get("/ontology/export.zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    assert len(names) == OntologyClass.objects.count()
    assert "ontology/security/CWE89SqlInjection.md" in names
    note = (
        zipfile.ZipFile(io.BytesIO(response.content)).read("ontology/security/CWE89SqlInjection.md").decode()
    )
    assert "owl-class:: cw:CWE89SqlInjection" in note and "is-subclass-of:: [[CWE943" in note


# --- Analysts' pages -----------------------------------------------------------------------------


def test_the_index_lists_classes_by_domain_anonymously_and_searches(ontology: None) -> None:
    page = Client().get("/ontology")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'href="/ontology/CWE89SqlInjection"' in html and "<h3>security" in html
    assert 'href="/ontology"' in html and 'aria-current="page">Ontology' in html  # the nav link
    found = Client().get("/ontology", {"q": "SQL injection"}).content.decode()
    results = found.split('id="ontology-results"')[1].split("</div>")[0]
    assert results.index("CWE-89 SQL Injection") >= 0
    fragment = Client(headers={"HX-Request": "true"}).get("/ontology", {"q": "SQL injection"})
    assert (
        fragment.content.decode().startswith('<div id="ontology-results">')
        and b"<html" not in fragment.content
    )
    assert b"CWE-89 SQL Injection" in fragment.content
    short = Client().get("/ontology", {"q": "x"}).content.decode()
    assert "at least 2 characters" in short


def test_a_class_page_shows_hierarchy_relationships_and_the_graph(ontology: None) -> None:
    response = Client().get("/ontology/CWE89SqlInjection")
    assert response.status_code == 200
    html = response.content.decode()
    for text in (
        "CWE-89 SQL Injection",
        "CW-SEC-0018",
        "SQLi",
        'href="https://cwe.mitre.org/data/definitions/89.html"',
        "SEC-013",
        "mature",
    ):
        assert text in html, text
    parents = html.split('class="ontology-parents"')[1].split("</ul>")[0]
    assert 'href="/ontology/CWE943ImproperNeutralizationInDataQueryLogic"' in parents
    inferred = html.split('class="ontology-inferred"')[1].split("</ul>")[0]
    assert 'href="/ontology/CWE74Injection"' in inferred and "inferred (OWL 2 RL)" in inferred
    relations = html.split('class="ontology-relations"')[1].split("</ul>")[0]
    assert "<strong>relates-to</strong>" in relations and 'href="/ontology/Injection"' in relations
    assert (
        'href="/ontology/ParameterisedQuery"' in relations
        and "<strong>mitigates</strong> this class" in relations
    )
    svg = html.split("<svg")[1].split("</svg>")[0]
    assert "subClassOf" in svg and "mitigates" in svg and 'href="/ontology/Injection"' in svg
    assert "style=" not in html.split("<main")[1] and "<script>" not in html.split("<main")[1]


def test_a_definition_with_markup_is_escaped(ontology: None) -> None:
    OntologyClass.objects.filter(local_name="CWE89SqlInjection").update(
        definition='<script>alert("x")</script> inputs', preferred_term="SQL <b>Injection</b>"
    )
    from apps.ontology import services

    services.ontology_version_bump()
    html = Client().get("/ontology/CWE89SqlInjection").content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<b>Injection</b>" not in html and "SQL &lt;b&gt;Injection&lt;/b&gt;" in html


def test_a_class_about_text_links_its_references_and_escapes_the_rest(ontology: None) -> None:
    html = Client().get("/ontology/CWE89SqlInjection").content.decode()
    about = html.split('class="ontology-about">')[1].split("</p>")[0]
    assert "[[" not in about
    assert (
        'The primary defence is <a href="/ontology/ParameterisedQuery">Parameterised Query</a>; escaping'
        in about
    )
    assert 'Mapped to OWASP A03 <a href="/ontology/Injection">Injection</a>.' in about
    OntologyClass.objects.filter(local_name="CWE89SqlInjection").update(
        about='<i>x</i> [[NoSuchClass]] & [[Injection]]\n[[prov:Entity]] [[<script>]] "q"'
    )
    from apps.ontology import services

    services.ontology_version_bump()
    html = Client().get("/ontology/CWE89SqlInjection").content.decode()
    about = html.split('class="ontology-about">')[1].split("</p>")[0]
    assert about == (
        '&lt;i&gt;x&lt;/i&gt; NoSuchClass &amp; <a href="/ontology/Injection">Injection</a><br>'
        "prov:Entity &lt;script&gt; &quot;q&quot;"
    )


def _pack_entries(*entry_ids: str) -> list[dict[str, Any]]:
    """The entries ``entry_ids`` as the packs under config/knowledge/ have them."""
    found = {}
    for path in sorted(Path("config/knowledge").glob("*/*.json")):
        for entry in json.loads(path.read_text(encoding="utf-8"))["entries"]:
            found[entry["id"]] = {**entry, "domain": path.parent.name}
    return [found[entry_id] for entry_id in entry_ids]


def test_a_class_page_lists_the_knowledge_entries_about_it_and_entries_link_back(ontology: None) -> None:
    # CWE-89's note names SEC-013, SEC-021, SEC-027 and TECH-038; two of them are loaded here.
    base = KnowledgeBase.objects.create(name="default")
    for pack in _pack_entries("SEC-013", "SEC-021"):
        domain, _ = KnowledgeDomain.objects.get_or_create(base=base, name=pack["domain"])
        KnowledgeEntry.objects.create(
            entry_id=pack["id"],
            domain=domain,
            topic=pack["topic"],
            content=pack["content"],
            source=pack["source"],
            url=pack["url"],
        )
    KnowledgeEntry.objects.filter(entry_id="SEC-021").update(url="javascript:alert(1)")
    html = Client().get("/ontology/CWE89SqlInjection").content.decode()
    section = html.split('class="ontology-knowledge"')[1].split("</ul>")[0]
    items = [" ".join(item.split()) for item in section.split("<li>")[1:]]
    sec013, sec021 = _pack_entries("SEC-013", "SEC-021")
    assert items[0] == (
        f'<a href="/knowledge/SEC-013"><code>SEC-013</code></a> {sec013["topic"]} — '
        f'<a href="{sec013["url"]}" rel="noopener noreferrer">{sec013["source"]}</a> '
        '<span class="tag">security</span> </li>'
    )
    assert items[1] == (  # a URL that is not http(s) is no link
        f'<a href="/knowledge/SEC-021"><code>SEC-021</code></a> {sec021["topic"]} — {sec021["source"]} '
        '<span class="tag">security</span> </li>'
    )
    assert [item.split("</code>")[0].split("<code>")[1] for item in items] == [
        "SEC-013", "SEC-021", "SEC-027", "TECH-038"
    ]  # fmt: skip
    assert items[3].startswith("<code>TECH-038</code>")  # not loaded: no page to link to
    assert items[3].endswith('<span class="empty">not in the loaded knowledge packs</span> </li>')
    # The entry's side: the classes whose notes name it, linked, in the knowledge admin.
    admin = Client()
    admin.force_login(make_user("root", is_superuser=True))
    entry = KnowledgeEntry.objects.get(entry_id="SEC-013")
    page = admin.get(f"/admin/knowledge/knowledgeentry/{entry.pk}/change/").content.decode()
    assert (
        '<a href="/ontology/CWE89SqlInjection">CWE-89 SQL Injection</a>, '
        '<a href="/ontology/ParameterisedQuery">Parameterised Query</a>'
    ) in page.split("field-ontology_classes")[1]
    other = KnowledgeEntry.objects.get(entry_id="SEC-021")  # the CWE Top 25: four notes name it
    page = admin.get(f"/admin/knowledge/knowledgeentry/{other.pk}/change/").content.decode()
    assert (
        '<a href="/ontology/CweWeakness">CWE Weakness</a>, '
        '<a href="/ontology/CWE787OutOfBoundsWrite">CWE-787 Out-of-bounds Write</a>, '
        '<a href="/ontology/CWE79CrossSiteScripting">CWE-79 Cross-site Scripting</a>, '
        '<a href="/ontology/CWE89SqlInjection">CWE-89 SQL Injection</a></div>'
    ) in page


@pytest.mark.parametrize("name", ["NoSuchClass", "cwe89sqlinjection", "CWE89SqlInjection.md"])
def test_an_unknown_class_is_the_sites_404(ontology: None, name: str) -> None:
    response = Client().get(f"/ontology/{name}")
    assert response.status_code == 404 and b"<html" in response.content


# --- Review queue ----------------------------------------------------------------------------------


@pytest.fixture
def staged(ontology: None, writer: tuple[Any, Client]) -> dict[str, Any]:
    _, client = writer
    good = propose(client, CREATE).json()["proposal"]
    bad = propose(
        client,
        {**CREATE, "owl_class": "cw:Other", "preferred_term": "Other", "is_subclass_of": ["cw:NoSuchParent"]},
    ).json()["proposal"]
    return {"good": good, "bad": bad}


def test_the_queue_needs_its_permissions(staged: dict[str, Any]) -> None:
    assert Client().get("/ontology/proposals")["Location"].startswith("/admin/login/")
    assert role_client(username="plain").get("/ontology/proposals").status_code == 403
    reader = role_client(READER, username="reader")
    page = reader.get("/ontology/proposals")
    assert page.status_code == 200 and b"Approve" not in page.content
    good = staged["good"]["proposal_id"]
    assert reader.post(f"/ontology/proposals/{good}/approve").status_code == 403
    assert b"Approve" in role_client(REVIEWER, username="reviewer").get("/ontology/proposals").content


def test_the_queue_shows_check_score_preview_and_diff_escaped(staged: dict[str, Any]) -> None:
    html = role_client(REVIEWER, username="reviewer").get("/ontology/proposals").content.decode()
    assert html.count('class="proposal"') == 2
    assert "cw:NoSuchParent is not a class" in html and "inconsistent" in html
    assert "is-subclass-of:: [[CWE74Injection]]" in html
    assert f"{staged['good']['quality_score']:.2f}" in html
    merged = role_client(REVIEWER, username="r2").get("/ontology/proposals?status=merged").content.decode()
    assert "No merged proposals." in merged


def test_approve_and_reject_through_the_page(staged: dict[str, Any]) -> None:
    client = role_client(REVIEWER, username="reviewer")
    token = csrf_of(client.get("/ontology/proposals").content.decode())
    client_csrf = Client(enforce_csrf_checks=True)
    client_csrf.force_login(make_user("csrf-reviewer", REVIEWER))
    assert client_csrf.post(f"/ontology/proposals/{staged['good']['proposal_id']}/approve").status_code == 403
    good, bad = staged["good"]["proposal_id"], staged["bad"]["proposal_id"]
    response = client.post(f"/ontology/proposals/{good}/approve", {"csrfmiddlewaretoken": token})
    assert response.status_code == 303 and response["Location"] == "/ontology/proposals"
    assert OntologyProposal.objects.get(pk=good).status == "merged"
    assert Client().get("/ontology/ServerSideTemplateInjection").status_code == 200
    refused = client.post(f"/ontology/proposals/{bad}/approve")
    assert refused.status_code == 409 and b"inconsistent" in refused.content
    no_reason = client.post(f"/ontology/proposals/{bad}/reject", {"note": " "})
    assert no_reason.status_code == 400 and b"Say why" in no_reason.content
    htmx = Client(headers={"HX-Request": "true"})
    htmx.force_login(make_user("htmx-reviewer", REVIEWER))
    row = htmx.post(f"/ontology/proposals/{bad}/reject", {"note": "Unknown <parent>."})
    assert row.status_code == 200 and row.content.decode().startswith(f'<article id="proposal-{bad}"')
    assert (
        b"<html" not in row.content
        and b"Rejected." in row.content
        and b"Unknown &lt;parent&gt;." in row.content
    )
    rejected = OntologyProposal.objects.get(pk=bad)
    assert (rejected.status, rejected.review_note) == ("rejected", "Unknown <parent>.")


def test_reviews_count_against_the_page_submission_limit(staged: dict[str, Any], settings) -> None:
    settings.CORTEX_PAGE_SUBMISSIONS_PER_MINUTE = 1
    settings.CORTEX_PAGE_SUBMISSION_BURST = 1
    client = role_client(REVIEWER, username="limited")
    bad = staged["bad"]["proposal_id"]
    assert client.post(f"/ontology/proposals/{bad}/reject", {"note": " "}).status_code == 400
    limited = client.post(f"/ontology/proposals/{bad}/reject", {"note": "why"})
    assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1
    assert "Too many searches and questions from this account" in limited.content.decode()
    fragment = client.post(
        f"/ontology/proposals/{bad}/reject", {"note": "why"}, headers={"HX-Request": "true"}
    )
    assert fragment.status_code == 200 and fragment["Retry-After"]
    assert 'role="alert">Too many searches' in fragment.content.decode()
    assert OntologyProposal.objects.get(pk=bad).status == "staged"


def test_a_class_page_lists_the_stored_facts_its_terms_name(ontology: None) -> None:
    from tests.wikidata.test_pages import make_fact, make_run

    run = make_run("What is SQL injection a subclass of?")
    injection = "SQL injection — subclass of — <code injection>"
    make_fact(run, qid="Q506059", qid_label="sql injection", text=injection)
    universe = "Universe — instance of — universe"
    make_fact(run, position=2, qid="Q1", qid_label="Universe", text=universe, claim_guid="Q1$X")
    html = Client().get("/ontology/CWE89SqlInjection").content.decode()
    section = html.split('id="facts-heading"')[1].split("</section>")[0]
    assert "SQL injection — subclass of — &lt;code injection&gt;" in section  # an alt term, any case; escaped
    assert "Universe" not in section
    assert f'href="/facts/runs/{run.pk}"' in section
    empty = Client().get("/ontology/ParameterisedQuery").content.decode()
    assert "No stored fact names this class" in empty.split('id="facts-heading"')[1]
