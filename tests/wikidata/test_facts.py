"""The fact workflow in this process against the local Wikidata replay: ranking and provenance,
fallbacks, retries, degraded runs, idempotency, spans.

Constructed replies (no recording exists for them) are built inline and marked "constructed":
the vector database answering Q42 (its recordings are about Albert Einstein, whose statements
were not recorded), a keyword search hit for Douglas Adams, and a SPARQL answer for the P31
statement of Q42.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from apps.core.models import Event
from apps.core.tracing import span_processor_add
from apps.wikidata import ranking, search, selectors, services
from apps.wikidata.models import Fact, FactRun, FactRunStatus
from apps.wikidata.statements import EntityIdValue, Snak, Statement
from tests.wikidata.replay_server import ReplayWikidata, Reply

pytestmark = pytest.mark.django_db

P31_GUID = "Q42$F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"
P31_STATEMENT_URI = "http://www.wikidata.org/entity/statement/Q42-F078E5B3-F9A8-480E-B7AC-D97778CBBEF9"
# constructed: the vector database's answer shape (see tests/fixtures/vectordb) with Q42 as the hit
Q42_VECTOR_HIT = [{"QID": "Q42", "similarity_score": 0.87, "rrf_score": 0.02, "source": "Vector Search"}]
# constructed: a wbsearchentities answer in the current shape (display terms)
Q42_KEYWORD_HIT = {
    "searchinfo": {"search": "Douglas Adams"},
    "search": [
        {
            "id": "Q42",
            "title": "Q42",
            "pageid": 138,
            "display": {
                "label": {"value": "Douglas Adams", "language": "en"},
                "description": {"value": "English writer and humorist (1952–2001)", "language": "en"},
            },
            "label": "Douglas Adams",
            "description": "English writer and humorist (1952–2001)",
            "match": {"type": "label", "language": "en", "text": "Douglas Adams"},
        }
    ],
    "success": 1,
}
# constructed: WDQS answering the enrichment query for the P31 statement (SPARQL 1.1 JSON results)
P31_SPARQL = {
    "head": {
        "vars": ["entity", "statement", "property", "value", "rank", "reference", "refProperty", "refValue"]
    },
    "results": {
        "bindings": [
            {
                "entity": {"type": "uri", "value": "http://www.wikidata.org/entity/Q42"},
                "statement": {"type": "uri", "value": P31_STATEMENT_URI},
                "property": {"type": "uri", "value": "http://www.wikidata.org/entity/P31"},
                "value": {"type": "uri", "value": "http://www.wikidata.org/entity/Q5"},
                "rank": {"type": "uri", "value": "http://wikiba.se/ontology#NormalRank"},
                "reference": {
                    "type": "uri",
                    "value": "http://www.wikidata.org/reference/a4d108601216cffd2ff1819ccf12b483486b62e7",
                },
                "refProperty": {"type": "uri", "value": "http://www.wikidata.org/entity/P248"},
                "refValue": {"type": "uri", "value": "http://www.wikidata.org/entity/Q19938912"},
            }
        ]
    },
}
CLOSED_PORT_URL = "http://127.0.0.1:9"


@pytest.fixture
def q42(wikidata: ReplayWikidata, wikidata_registry: None) -> ReplayWikidata:
    wikidata.default_vector = Reply(body=Q42_VECTOR_HIT)
    return wikidata


def _ask(question: str = "What is Douglas Adams an instance of?", **options) -> FactRun:
    """Submit (never enqueued: these tests do not commit) and execute in this process."""
    run = services.fact_query_submit(query=question, **options)
    return services.fact_run_execute(run_id=str(run.pk))


def _step(run: FactRun, name: str) -> dict:
    return next(step for step in run.steps if step["name"] == name)


def test_the_recorded_statement_is_the_best_answer_with_its_provenance(q42: ReplayWikidata) -> None:
    q42.default_sparql = Reply(body=P31_SPARQL)
    run = _ask()
    assert run.status == FactRunStatus.SUCCEEDED and not run.degraded
    assert [step["name"] for step in run.steps] == [
        "search", "statements", "labels", "rank", "details", "sparql", "persist",
    ]  # fmt: skip
    assert all(step["status"] == "ok" for step in run.steps)
    assert _step(run, "search")["tool"] == "wikidata.vector_search_items"
    assert _step(run, "statements")["tool"] == "wikidata.get_claims"
    assert [step["tool"] for step in run.plan["steps"]][:2] == [
        "wikidata.vector_search_items",
        "wikidata.get_claims",
    ]
    facts = list(run.facts.order_by("position"))
    assert len(facts) == 5
    best = facts[0]
    assert best.claim_guid == P31_GUID
    # Q42 has no English label, only "mul": the language fallback finds it.
    assert (best.qid, best.qid_label, best.pid, best.pid_label) == (
        "Q42",
        "Douglas Adams",
        "P31",
        "instance of",
    )
    assert best.value == {"type": "wikibase-entityid", "id": "Q5", "entityType": "item"}
    assert (best.value_text, best.value_label, best.datatype) == ("human", "human", "wikibase-item")
    assert best.text == "Douglas Adams — instance of — human"
    assert best.rank == "normal" and best.endpoint == q42.api_url
    # qualifiers and references kept, with labels where the details step found them
    assert best.qualifiers and best.qualifiers[0]["property"] == "P805"
    assert best.references and best.references[0]["hash"] == "a4d108601216cffd2ff1819ccf12b483486b62e7"
    stated_in = next(s for s in best.references[0]["snaks"] if s["property"] == "P248")
    assert stated_in["value"]["id"] == "Q19938912"
    # SPARQL enrichment: the query names the statement, its text and this statement's rows are stored
    assert P31_STATEMENT_URI in best.sparql and best.sparql_endpoint == q42.sparql_url
    assert [row["statement"]["value"] for row in best.sparql_results["rows"]] == [P31_STATEMENT_URI]
    assert facts[1].sparql_results["rows"] == []  # rows of other statements are not attached to it
    assert len(q42.made("/sparql")) == 1  # the facts share one query
    # every returned fact carries the SPARQL provenance (includeSparql), not only the best few
    assert [bool(fact.sparql) for fact in facts] == [True] * 5
    assert all(fact.sparql_endpoint == q42.sparql_url for fact in facts)
    outcome = selectors.fact_run_outcome(run=run, base_url="http://testserver")
    first = outcome["results"][0]
    assert first["metadata"]["wikidata"]["claimGuid"] == P31_GUID
    assert first["metadata"]["wikidata"]["qid"] == "Q42"
    assert first["metadata"]["wikidata"]["propertyId"] == "P31"
    assert first["metadata"]["wikidata"]["sparql"] == best.sparql
    assert first["provenanceUrl"] == f"http://testserver/facts/{best.pk}"
    assert Event.objects.filter(name="facts.run.succeeded", payload__runId=str(run.pk)).exists()


def test_labels_come_in_batches_of_at_most_50_and_are_cached(q42: ReplayWikidata) -> None:
    _ask()
    batches = q42.made("/w/api.php", action="wbgetentities", props="labels")
    assert len(batches) >= 2 and all(len(r.params["ids"].split("|")) <= 50 for r in batches)
    before = len(q42.requests)
    run = _ask("When was Douglas Adams born?")
    label_requests = q42.made("/w/api.php", action="wbgetentities", props="labels")
    assert len(label_requests) == len(batches)  # the second question's labels all came from the cache
    assert _step(run, "labels")["detail"]["cached"] > 0 and len(q42.requests) > before


def test_without_sparql_no_query_is_sent(q42: ReplayWikidata) -> None:
    run = _ask(include_sparql=False)
    assert q42.made("/sparql") == []
    assert "sparql" not in [step["name"] for step in run.steps]
    assert all(fact.sparql == "" for fact in run.facts.all())


def test_deprecated_statements_are_left_out_unless_asked_for(q42: ReplayWikidata) -> None:
    # Q42's recording holds 332 statements, one deprecated (an image, P18).
    assert _step(_ask(), "rank")["detail"]["candidates"] == 331
    with_deprecated = _ask("Douglas Adams image", include_deprecated=True, top_k=20)
    assert _step(with_deprecated, "rank")["detail"]["candidates"] == 332


def test_a_preferred_statement_is_never_outranked_by_a_normal_one_of_its_property() -> None:
    def candidate(guid: str, rank: str, score: float) -> ranking.Candidate:
        snak = Snak(property_id="P998", snaktype="value", datatype="url")
        statement = Statement(entity_id="Q42", property_id="P998", guid=guid, rank=rank, mainsnak=snak)
        return ranking.Candidate(statement, "Douglas Adams", "DMOZ ID", "x", "", "t", score=score)

    preferred, normal, other = candidate("Q42$1", "preferred", 0.5), candidate("Q42$2", "normal", 0.9), None
    other = ranking.Candidate(
        Statement(
            entity_id="Q42",
            property_id="P31",
            guid="Q42$3",
            rank="normal",
            mainsnak=Snak(
                property_id="P31", snaktype="value", value=EntityIdValue(id="Q5", entity_type="item")
            ),
        ),
        "Douglas Adams", "instance of", "human", "human", "t", score=0.7,
    )  # fmt: skip
    candidates = [preferred, normal, other]
    ranking.prefer_preferred(candidates)
    assert normal.score < preferred.score == 0.5
    assert other.score == 0.7  # another property is not affected


def test_vector_database_failure_falls_back_to_keyword_search(q42: ReplayWikidata) -> None:
    q42.script("/item/query/", *[Reply(status=500, body={"detail": "Internal Server Error"})] * 3)
    q42.script("/w/api.php", Reply(body=Q42_KEYWORD_HIT))
    run = _ask()
    search = _step(run, "search")
    assert search["status"] == "ok" and "vector database failed" in search["fallback"]
    assert search["detail"] == {"via": "keyword", "phrase": "Douglas Adams", "hits": 1}
    assert len(q42.made("/item/query/")) == 3  # first try and WIKIDATA_MAX_RETRIES retries
    assert q42.made("/w/api.php", action="wbsearchentities", search="Douglas Adams")
    assert not run.degraded and run.facts.filter(claim_guid=P31_GUID).exists()


def test_keyword_search_phrases_longer_than_wbsearchentities_takes_are_cut_not_fatal(
    q42: ReplayWikidata,
) -> None:
    # Content words past wbsearchentities' 250 characters used to fail the run as an internal error.
    q42.default_vector = Reply(body=[])
    question = "what connects " + " ".join(f"topic{n:03d}" for n in range(40)) + "?"
    run = _ask(question)
    assert run.status == FactRunStatus.SUCCEEDED and not run.degraded
    search = _step(run, "search")
    assert search["fallback"] == "the vector database found nothing"
    assert search["detail"] == {"via": "keyword", "hits": 0}
    sent = [r.params["search"] for r in q42.made("/w/api.php", action="wbsearchentities")]
    assert len(sent) == 2 and all(len(text) == 250 for text in sent)
    assert sent[0].startswith("connects topic000 topic001")
    assert sent[1].startswith("what connects topic000")


def test_vector_database_429_is_retried_after_retry_after(q42: ReplayWikidata) -> None:
    q42.script("/item/query/", Reply(status=429, headers={"Retry-After": "1"}, body={"detail": "Too Many"}))
    run = _ask()
    first, second = q42.made("/item/query/")
    assert second.at - first.at >= 1.0
    assert not run.degraded and run.facts.exists()


def test_maxlag_is_retried_after_the_advertised_wait(q42: ReplayWikidata) -> None:
    q42.script(
        "/w/api.php",
        Reply(fixture="wikidata/constructed_error_maxlag.json", headers={"Retry-After": "1"}),
    )
    run = _ask()
    first, second = q42.made("/w/api.php", action="wbgetentities", ids="Q42")
    assert second.at - first.at >= 1.0
    assert run.status == FactRunStatus.SUCCEEDED and not run.degraded
    assert run.facts.filter(claim_guid=P31_GUID).exists()


def test_redirects_missing_entities_and_novalue_somevalue_snaks(q42: ReplayWikidata) -> None:
    q42.default_vector = Reply(
        body=[{"QID": "Q100", "similarity_score": 0.9}, {"QID": "Q404404404", "similarity_score": 0.8}]
    )
    q42.script(
        "/w/api.php",
        Reply(fixture="wikidata/constructed_wbgetentities_fv2_redirect_missing_mul_snaktypes.json"),
    )
    run = _ask("Who is the constructed example?", top_k=10)
    detail = _step(run, "statements")["detail"]
    assert detail["redirects"] == [{"from": "Q100", "to": "Q200"}]
    assert detail["missing"] == ["Q404404404"]
    texts = {fact.pid: fact.value_text for fact in run.facts.all()}
    assert texts["P40"] == "no value" and texts["P22"] == "unknown value"
    assert {fact.qid_label for fact in run.facts.all()} == {"Constructed Example"}


def test_malformed_upstream_json_is_a_recorded_terminal_error_and_not_retried(q42: ReplayWikidata) -> None:
    q42.script("/w/api.php", Reply(body=b"{this is not json"))
    run = _ask()
    statements = _step(run, "statements")
    assert statements["status"] == "failed" and statements["retryable"] is False
    assert len(q42.made("/w/api.php", action="wbgetentities", ids="Q42")) == 1
    # Nothing stored yet to fall back on, and nothing half-written: degraded, with no answer (issue 26).
    assert run.status == FactRunStatus.DEGRADED and run.degraded and run.facts.count() == 0
    assert run.degraded_reason.startswith("Wikidata statements failed")
    assert run.facts.count() == 0 and run.knowledge == []


def test_everything_down_answers_from_stored_facts_as_degraded(q42: ReplayWikidata, settings) -> None:
    stored = _ask()
    settings.WIKIDATA_API_URL = settings.WIKIDATA_VECTOR_URL = settings.WIKIDATA_SPARQL_URL = CLOSED_PORT_URL
    run = _ask("What kind of being was Douglas Adams?")
    assert run.status == FactRunStatus.DEGRADED and run.degraded
    # The first keyword search's failures opened the Action API's breaker; the later ones were refused.
    assert run.degraded_reason.startswith(
        "Wikidata search failed: the Wikidata Action API could not be reached 3 times in a row "
        "(last: ConnectError: [Errno 111] Connection refused); not tried again before "
    )
    search = _step(run, "search")
    assert search["status"] == "failed" and search["retryable"] is True
    local = _step(run, "local")
    assert local["status"] == "ok" and local["detail"]["facts"] == 5
    copies = list(run.facts.order_by("position"))
    assert {fact.derived_from.run_id for fact in copies} == {stored.pk}
    assert P31_GUID in {fact.claim_guid for fact in copies}
    assert all(0 < fact.score <= 1 for fact in copies)
    event = Event.objects.get(name="facts.run.degraded", payload__runId=str(run.pk))
    assert event.payload["degraded"] is True and "search failed" in event.payload["reason"]
    outcome = selectors.fact_run_outcome(run=run)
    assert outcome["degraded"] is True and outcome["degradedReason"] == run.degraded_reason
    assert outcome["results"][0]["metadata"]["wikidata"]["storedFactId"] is not None


def test_a_failing_sparql_step_keeps_the_facts(q42: ReplayWikidata) -> None:
    q42.script("/sparql", Reply(status=400, body=b"Parse error"))
    run = _ask()
    sparql = _step(run, "sparql")
    assert sparql["status"] == "failed" and sparql["retryable"] is False
    assert not run.degraded and run.facts.count() == 5
    assert all(fact.sparql == "" for fact in run.facts.all())


def test_executing_a_run_again_rewrites_its_facts_without_duplicates(q42: ReplayWikidata) -> None:
    run = _ask()
    first = dict(run.facts.values_list("claim_guid", "pk"))
    # A duplicate delivery while another worker beats for the run is left to that worker.
    FactRun.objects.filter(pk=run.pk).update(status=FactRunStatus.RUNNING, heartbeat_at=timezone.now())
    assert services.fact_run_execute(run_id=str(run.pk)).executions == 1
    # Its worker was lost (heartbeat stale): the run executes again.
    FactRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    again = services.fact_run_execute(run_id=str(run.pk))
    assert again.executions == 2
    assert dict(again.facts.values_list("claim_guid", "pk")) == first
    assert Fact.objects.filter(run=run).count() == 5
    # a finished run is left alone
    assert services.fact_run_execute(run_id=str(run.pk)).executions == 2


def test_a_run_and_each_step_are_traced(q42: ReplayWikidata) -> None:
    exporter = InMemorySpanExporter()
    span_processor_add(SimpleSpanProcessor(exporter))
    run = _ask()
    spans = [
        span for span in exporter.get_finished_spans() if span.attributes.get("cortex.run_id") == str(run.pk)
    ]
    names = [span.name for span in spans]
    assert "facts.run" in names and "facts.step.search" in names and "facts.step.persist" in names
    root = next(span for span in spans if span.name == "facts.run")
    assert all(span.parent.span_id == root.context.span_id for span in spans if span is not root)
    exporter.shutdown()


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("When was Douglas Adams born?", "Douglas Adams"),
        ("what is the capital of France", "France"),
        ("who wrote the hitchhiker's guide", "wrote hitchhiker's guide"),
    ],
)
def test_keyword_phrases_start_with_names(question: str, first: str) -> None:
    phrases = search.keyword_phrases(question)
    assert phrases[0] == first
    assert phrases[-1] == " ".join(question.rstrip("?").split())


def test_a_degraded_run_also_answers_from_curated_knowledge(q42: ReplayWikidata, settings) -> None:
    from apps.knowledge.services import _validated, entries_import

    entry = {
        "id": "COMP-001",
        "topic": "GDPR breach notification",
        "source": "GDPR Art. 33",
        "url": "https://gdpr-info.eu/art-33-gdpr/",
        "content": "The controller must notify the supervisory authority of a personal data breach "
        "within 72 hours.",
    }
    entries_import(
        domain_name="compliance", pack=_validated([(entry, "$", {})], {}), source_name="gdpr", location="t"
    )
    settings.WIKIDATA_API_URL = settings.WIKIDATA_VECTOR_URL = settings.WIKIDATA_SPARQL_URL = CLOSED_PORT_URL
    run = _ask("How soon must a personal data breach be notified under the GDPR?")
    assert run.degraded and run.knowledge[0]["entryId"] == "COMP-001"
    assert _step(run, "local")["detail"] == {"facts": 0, "knowledge": 1}
    result = selectors.fact_run_outcome(run=run)["results"][0]
    assert result["metadata"]["knowledge"]["entryId"] == "COMP-001"
    assert result["provenanceUrl"] == "https://gdpr-info.eu/art-33-gdpr/" and result["score"] >= 0.45
