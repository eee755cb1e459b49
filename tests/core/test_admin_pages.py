"""The admin reads well: every changelist and change page renders for a superuser with rows in it,
counts per status/verdict above the lists, bad booleans as warnings, JSON as escaped blocks."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from apps.arxiv.models import Paper, RunStatus, SearchRun
from apps.connectors.models import Connector, ConnectorSync, RemoteTool
from apps.connectors.services import manifest_import
from apps.core.admin_mixins import pretty_json, truncated, warning_flag
from apps.core.models import Event
from apps.core.services import api_token_create
from apps.grounding.models import GroundingMessage, GroundingSettings, ReviewStatus, Verdict, Verification
from apps.grounding.services import verification_review
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry, KnowledgeSource
from apps.memory.models import MemorySettings
from apps.memory.services import Scope, TellItem, memory_tell
from apps.wikidata.models import Fact, FactRun, FactRunStatus
from tests.conftest import make_user
from tests.oauth.flow import oauth_grant_rows

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
DEFAULT_MANIFEST = Path(__file__).resolve().parents[2] / "config" / "connectors.manifest.json"


@pytest.fixture
def seeded() -> dict[str, object]:
    base = KnowledgeBase.objects.create(name="default")
    domain = KnowledgeDomain.objects.create(base=base, name="security")
    source = KnowledgeSource.objects.create(domain=domain, name="owasp", location="upload:owasp.json")
    entry = KnowledgeEntry.objects.create(
        entry_id="SEC-001",
        domain=domain,
        knowledge_source=source,
        topic="Password storage",
        content="Store passwords with a slow hash.",
        source="OWASP",
        content_hash="x",
    )
    message = GroundingMessage.objects.create(
        original_message_id="m-1", message="hello", summary="1 claim", injected_knowledge=[{"note": SCRIPT}]
    )
    verifications = [
        Verification.objects.create(
            claim="Passwords are hashed. " * 10,
            domain=domain,
            verdict=verdict,
            confidence=0.5,
            sources=[{"entry_id": "SEC-001", "content_excerpt": SCRIPT, "relevance": 0.8}],
            latency_ms=1.0,
            message=message,
            review_status=status,
        )
        for verdict, status in (
            (Verdict.SUPPORTED, ReviewStatus.NOT_NEEDED),
            (Verdict.SUPPORTED, ReviewStatus.APPROVED),
            (Verdict.CONTRADICTED, ReviewStatus.PENDING),
            (Verdict.UNVERIFIED, ReviewStatus.PENDING),
            (Verdict.UNVERIFIED, ReviewStatus.PENDING),
        )
    ]
    degraded = FactRun.objects.create(
        question="Who founded Acme?", status=FactRunStatus.DEGRADED, degraded=True, plan={"steps": [SCRIPT]}
    )
    FactRun.objects.create(question="Where is Acme?", status=FactRunStatus.SUCCEEDED)
    FactRun.objects.create(question="When was Acme?", status=FactRunStatus.FAILED)
    fact = Fact.objects.create(
        run=degraded,
        position=1,
        text="Acme was founded by Ada.",
        qid="Q1",
        pid="P112",
        score=0.9,
        retrieved_at=datetime(2024, 1, 1, tzinfo=UTC),
    )
    paper = Paper.objects.create(
        arxiv_id="2401.12345",
        title="Attention",
        summary="s",
        authors=["Ada"],
        published=datetime(2024, 1, 20, tzinfo=UTC),
        updated=datetime(2024, 1, 20, tzinfo=UTC),
        url="https://arxiv.org/abs/2401.12345",
    )
    run = SearchRun.objects.create(
        kind="search",
        cache_key="a" * 64,
        parameters={"query": "attention"},
        arxiv_params=[["search_query", "all:attention"]],
        status=RunStatus.SUCCEEDED,
    )
    token, _ = api_token_create(name="agent", scopes=["read", "write"])
    memory_tell(scope=Scope(token=token), items=[TellItem(content="The staging database runs in Dublin.")])
    Event.objects.create(name="test.event", payload={"x": 1})
    GroundingSettings.current()
    MemorySettings.current()
    manifest_import(data=json.loads(DEFAULT_MANIFEST.read_text(encoding="utf-8")), actor="tests")
    Group.objects.create(name="analysts")
    return {
        "entry": entry,
        "message": message,
        "verification": verifications[2],
        "degraded": degraded,
        "fact": fact,
        "paper": paper,
        "run": run,
    }


@pytest.fixture
def superuser_client() -> Client:
    client = Client()
    client.force_login(make_user("root", is_superuser=True))
    return client


def _admin_urls(model: type) -> tuple[str, str | None]:
    opts = model._meta
    changelist = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    row = model._default_manager.order_by("pk").first()
    change = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk]) if row else None
    return changelist, change


def test_every_changelist_and_change_page_renders(seeded, superuser_client) -> None:
    # A reviewed verification, so the remembered reviews (issue #24) have a row to show.
    verification_review(
        verification=Verification.objects.filter(review_status=ReviewStatus.PENDING).order_by("pk").first(),
        reviewer=make_user("reviewer"),
        action="reject",
        verdict=Verdict.SUPPORTED,
        note=SCRIPT,
    )
    # A sync that found a rename, as the self-healing registry records one (#25).
    ConnectorSync.objects.create(
        connector=Connector.objects.get(slug="wikidata"),
        trigger="unknown_tool",
        ok=True,
        renamed={"wikidata.get_claims": "get_entity_claims"},
        started_at=datetime(2026, 1, 2, tzinfo=UTC),
    )
    # An MCP host's OAuth grant (#28): its client, access and refresh tokens, and grant.
    oauth_grant_rows()
    missing = []
    for model in admin.site._registry:
        changelist, change = _admin_urls(model)
        response = superuser_client.get(changelist, follow=True)
        assert response.status_code == 200, changelist
        if change is None:
            missing.append(model._meta.label)
            continue
        assert superuser_client.get(change).status_code == 200, change
    # Every admin had a row to show but those written only by their workflows.
    assert missing == [
        "connectors.ToolCall",
        "grounding.GroundingAgent",
        "ontology.OntologyProposal",
        "ontology.OntologyClass",
    ]


def _summary(html: str) -> dict[str, list[tuple[str, int]]]:
    block = html[html.index('class="cortex-summary"') :]
    block = block[: block.index("</div>")]
    groups = {}
    for label, body in re.findall(r"<dt>(.*?)</dt>(.*?)</dl>", block, re.S):
        groups[label] = [
            (name.strip(), int(count))
            for name, count in re.findall(r'">([^<]*?) <span class="count">(\d+)</span>', body)
        ]
    return groups


def test_the_verification_list_counts_per_verdict_and_review_status(seeded, superuser_client) -> None:
    html = superuser_client.get(reverse("admin:grounding_verification_changelist")).content.decode()
    assert _summary(html) == {
        "Verdict": [("Contradicted", 1), ("Supported", 2), ("Unverified", 2)],
        "Review": [("Approved", 1), ("Confident, not queued", 1), ("Pending review", 3)],
    }
    # The counts follow the list's filters.
    filtered = superuser_client.get(
        reverse("admin:grounding_verification_changelist") + "?review_status__exact=pending"
    ).content.decode()
    assert _summary(filtered)["Verdict"] == [("Contradicted", 1), ("Unverified", 2)]
    assert 'href="?review_status__exact=pending&amp;verdict__exact=unverified"' in filtered


def test_the_fact_run_list_counts_and_shows_degraded_as_a_warning(seeded, superuser_client) -> None:
    html = superuser_client.get(reverse("admin:wikidata_factrun_changelist")).content.decode()
    assert _summary(html) == {
        "Status": [("Degraded", 1), ("Failed", 1), ("Succeeded", 1)],
        "Degraded": [("no", 2), ("yes", 1)],
    }
    assert html.count('<span class="flag-warning">') == 1
    assert "icon-yes.svg" not in html  # no green tick anywhere in the list
    change = superuser_client.get(
        reverse("admin:wikidata_factrun_change", args=[seeded["degraded"].pk])
    ).content.decode()
    assert '<span class="flag-warning"><img src="/static/admin/img/icon-alert.svg"' in change


def test_json_blocks_are_collapsible_and_escaped(seeded, superuser_client) -> None:
    page = superuser_client.get(
        reverse("admin:grounding_verification_change", args=[seeded["verification"].pk])
    ).content.decode()
    assert SCRIPT not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert '<details class="json-block" open><summary>1 item</summary><pre class="json">' in page
    run = superuser_client.get(
        reverse("admin:wikidata_factrun_change", args=[seeded["degraded"].pk])
    ).content.decode()
    assert SCRIPT not in run
    assert "<summary>1 key: steps</summary>" in run


def test_related_rows_link_to_each_other(seeded, superuser_client) -> None:
    verification = seeded["verification"]
    listing = superuser_client.get(reverse("admin:grounding_verification_changelist")).content.decode()
    message_url = reverse("admin:grounding_groundingmessage_change", args=[seeded["message"].pk])
    assert f'<a href="{message_url}">{str(seeded["message"].pk)[:8]}</a>' in listing
    facts = superuser_client.get(reverse("admin:wikidata_fact_changelist")).content.decode()
    assert reverse("admin:wikidata_factrun_change", args=[seeded["degraded"].pk]) in facts
    entries = superuser_client.get(reverse("admin:knowledge_knowledgeentry_changelist")).content.decode()
    assert reverse("admin:knowledge_knowledgedomain_change", args=[seeded["entry"].domain_id]) in entries
    messages = superuser_client.get(reverse("admin:grounding_groundingmessage_changelist")).content.decode()
    claims = (
        reverse("admin:grounding_verification_changelist") + f"?message__id__exact={seeded['message'].pk}"
    )
    assert f'<a href="{claims}">5</a>' in messages
    assert superuser_client.get(claims).status_code == 200
    assert verification.message_id == seeded["message"].pk


def test_long_text_is_cut_with_the_whole_in_the_title() -> None:
    assert truncated("short", 10) == "short"
    assert truncated("a <b> long claim", 8) == (
        '<span class="cut" title="a &lt;b&gt; long claim">a &lt;b&gt; l…</span>'
    )
    assert warning_flag(False) == '<span class="flag-quiet">no</span>'
    assert pretty_json([]) == '<span class="flag-quiet">none (an empty list)</span>'


def test_an_empty_json_value_is_said_in_words_never_raw() -> None:
    assert [pretty_json(value) for value in (None, [], {}, "")] == [
        '<span class="flag-quiet">none</span>',
        '<span class="flag-quiet">none (an empty list)</span>',
        '<span class="flag-quiet">none (an empty object)</span>',
        '<span class="flag-quiet">none</span>',
    ]


def test_editable_json_fields_are_indented_collapsible_and_never_null(seeded, superuser_client) -> None:
    tool = RemoteTool.objects.get(name="wikidata.sparql")
    tool.declared_input_schema = None
    tool.annotations = {}
    tool.upstream_input_schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    tool.save()
    page = superuser_client.get(
        reverse("admin:connectors_remotetool_change", args=[tool.pk])
    ).content.decode()
    # Unset: an empty area under "none: empty", never the text null.
    assert (
        '<details class="json-block json-edit" open><summary>none: empty</summary><textarea '
        'name="declared_input_schema" cols="40" rows="2" class="json-input" spellcheck="false" '
        'aria-describedby="id_declared_input_schema_helptext" id="id_declared_input_schema">\n'
        "</textarea></details>"
    ) in page
    assert ">null<" not in page and ">[]<" not in page
    # What sync recorded, read-only: formatted blocks, the empty ones in words.
    assert '<details class="json-block" open><summary>2 keys: type, properties</summary>' in page
    assert '<div class="readonly"><span class="flag-quiet">none (an empty object)</span></div>' in page

    tool.declared_input_schema = {"type": "object", "required": ["query"]}
    tool.save()
    page = superuser_client.get(
        reverse("admin:connectors_remotetool_change", args=[tool.pk])
    ).content.decode()
    assert (
        '<summary>2 keys: type, required</summary><textarea name="declared_input_schema" cols="40" rows="6" '
        'class="json-input" spellcheck="false" aria-describedby="id_declared_input_schema_helptext" '
        'id="id_declared_input_schema">\n{\n  &quot;type&quot;: '
        "&quot;object&quot;,\n  &quot;required&quot;: [\n    &quot;query&quot;\n  ]\n}</textarea>"
    ) in page


def test_an_empty_json_field_saves_as_null(seeded, superuser_client) -> None:
    tool = RemoteTool.objects.get(name="wikidata.sparql")
    url = reverse("admin:connectors_remotetool_change", args=[tool.pk])
    form = superuser_client.get(url).context["adminform"].form
    data = {
        name: value
        for name, value in {**form.initial, **{f: form[f].value() for f in form.fields}}.items()
        if value is not None
    }
    data.update(
        declared_input_schema="",
        tags=",".join(tool.tags),
        scopes=",".join(tool.scopes),
        **{"aliases-TOTAL_FORMS": "0", "aliases-INITIAL_FORMS": "0"},
    )
    response = superuser_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    tool.refresh_from_db()
    assert tool.declared_input_schema is None


def test_read_only_json_is_a_formatted_block_on_every_record_page(seeded, superuser_client) -> None:
    event = Event.objects.get(name="test.event")
    page = superuser_client.get(reverse("admin:core_event_change", args=[event.pk])).content.decode()
    assert (
        '<details class="json-block" open><summary>1 key: x</summary><pre class="json">'
        "{\n  &quot;x&quot;: 1\n}" in page
    )
    assert "{&quot;x&quot;: 1}" not in page  # no longer one line of raw JSON
    sync = ConnectorSync.objects.create(
        connector=Connector.objects.get(slug="wikidata"), trigger="manual", ok=True,
        renamed={"wikidata.get_claims": "get_statements"}, started_at=datetime(2026, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    page = superuser_client.get(
        reverse("admin:connectors_connectorsync_change", args=[sync.pk])
    ).content.decode()
    assert "<summary>1 key: wikidata.get_claims</summary>" in page
    assert '<div class="readonly"><span class="flag-quiet">none (an empty object)</span></div>' in page
