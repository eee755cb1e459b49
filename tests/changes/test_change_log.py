"""The change log (issue 26 item 4): a manifest import is one change set naming every changed field
old → new, tokens never show their secret, ``/changes`` is staff only and its filters work."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from auditlog.models import LogEntry
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from apps.connectors.models import Connector, RemoteTool
from apps.connectors.services import manifest_import
from apps.core.services import api_token_create, api_token_revoke, api_token_rotate, hash_token
from tests.conftest import make_user
from tests.connectors.conftest import default_manifest, default_registry  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

CHANGES = "/changes"


def _new_entries(before: set[int]) -> list[LogEntry]:
    return list(LogEntry.objects.exclude(pk__in=before).order_by("pk"))


def _tool(manifest: dict, name: str) -> dict:
    return next(
        tool
        for entry in manifest["connectors"]
        for tool in entry.get("remoteTools", [])
        if tool["name"] == name
    )


def _connector(manifest: dict, slug: str) -> dict:
    return next(entry for entry in manifest["connectors"] if entry["id"] == slug)


def test_a_manifest_import_is_one_change_set_naming_every_changed_field(default_registry) -> None:  # noqa: F811
    before = set(LogEntry.objects.values_list("pk", flat=True))
    manifest = default_registry
    wikidata = _connector(manifest, "wikidata")
    wikidata["name"] = "Wikidata (MCP)"
    wikidata["ttlSeconds"] = 900
    sparql = _tool(manifest, "wikidata.sparql")
    sparql["description"] = "Execute read-only SPARQL queries"
    sparql["aliases"] = ["execute_sparql", "wd_sparql"]
    claims = _tool(manifest, "wikidata.get_claims")
    claims["tags"] = ["claims", "wikidata"]

    manifest_import(data=manifest, actor="manage.py connectors import")

    entries = _new_entries(before)
    cids = {entry.cid for entry in entries}
    assert len(cids) == 1
    [cid] = cids
    assert re.fullmatch(r"[0-9a-f]{32}", cid)
    connector = Connector.objects.get(slug="wikidata")
    sparql_row = RemoteTool.objects.get(name="wikidata.sparql")
    claims_row = RemoteTool.objects.get(name="wikidata.get_claims")
    assert {
        (entry.content_type.model, entry.object_pk, entry.action): entry.changes for entry in entries
    } == {
        ("connector", str(connector.pk), LogEntry.Action.UPDATE): {
            "name": ["Wikidata MCP", "Wikidata (MCP)"],
            "ttl_seconds": [1800, 900],
        },
        ("remotetool", str(sparql_row.pk), LogEntry.Action.UPDATE): {
            "description": ["Execute SPARQL queries", "Execute read-only SPARQL queries"],
            "aliases": [["execute_sparql", "sparql"], ["execute_sparql", "wd_sparql"]],
        },
        ("remotetool", str(claims_row.pk), LogEntry.Action.UPDATE): {
            "tags": [["claims", "wikidata", "provenance"], ["claims", "wikidata"]],
        },
    }
    for entry in entries:
        assert entry.actor is None
        assert entry.additional_data == {
            "changeSet": "manifest import",
            "actor": "manage.py connectors import",
        }


def test_importing_the_same_manifest_again_changes_nothing(default_registry) -> None:  # noqa: F811
    before = set(LogEntry.objects.values_list("pk", flat=True))
    manifest_import(data=default_registry, actor="tests")  # aliases are deleted and recreated inside
    assert _new_entries(before) == []


def test_the_first_import_is_one_change_set_of_creations_with_aliases(default_manifest) -> None:  # noqa: F811
    manifest_import(data=default_manifest, actor="first start")
    entries = list(LogEntry.objects.all())
    assert len({entry.cid for entry in entries}) == 1
    assert {entry.action for entry in entries} == {LogEntry.Action.CREATE}
    assert len(entries) == Connector.objects.count() + RemoteTool.objects.count()  # 3 + 6, once each
    tool = RemoteTool.objects.get(name="wikidata.sparql")
    [created] = [e for e in entries if e.content_type.model == "remotetool" and e.object_pk == str(tool.pk)]
    assert created.changes["aliases"] == [[], ["execute_sparql", "sparql"]]
    assert created.changes["description"] == [None, "Execute SPARQL queries"]


def test_a_deleted_connector_is_logged_in_the_import(default_registry) -> None:  # noqa: F811
    before = set(LogEntry.objects.values_list("pk", flat=True))
    perplexity = Connector.objects.get(slug="perplexity")
    default_registry["connectors"] = [c for c in default_registry["connectors"] if c["id"] != "perplexity"]
    manifest_import(data=default_registry, actor="tests")
    wikidata = Connector.objects.get(slug="wikidata")
    moved, deleted = _new_entries(before)  # updates are written first, deletions last
    assert (deleted.action, deleted.content_type.model, deleted.object_pk) == (
        LogEntry.Action.DELETE,
        "connector",
        str(perplexity.pk),
    )
    assert deleted.changes["name"] == ["Perplexity", None]
    assert deleted.changes["auth_secret_env"] == ["CORTEX_CONNECTOR_PERPLEXITY_API_KEY", None]
    # The connector after it moves up a place in the manifest's order.
    assert (moved.action, moved.object_pk, moved.changes) == (
        LogEntry.Action.UPDATE,
        str(wikidata.pk),
        {"position": [2, 1]},
    )
    assert deleted.cid == moved.cid


def test_a_token_change_never_shows_its_secret_or_hash() -> None:
    operator = make_user("token-operator", is_superuser=True)
    token, raw = api_token_create(name="agent", scopes=["read"], created_by=operator)
    api_token_revoke(token_id=token.pk)
    replacement, raw_replacement = api_token_create(name="agent-2", scopes=["read", "write"])
    entries = list(LogEntry.objects.filter(content_type__model="apitoken").order_by("pk"))
    assert [(entry.object_pk, entry.action, sorted(entry.changes)) for entry in entries] == [
        (str(token.pk), LogEntry.Action.CREATE, ["created_by", "name", "scopes"]),
        (str(token.pk), LogEntry.Action.UPDATE, ["revoked_at"]),
        (str(replacement.pk), LogEntry.Action.CREATE, ["name", "scopes"]),
    ]
    assert entries[0].changes["scopes"] == [None, ["read"]]
    stored = " ".join(f"{e.object_repr} {e.changes} {e.additional_data} {e.serialized_data}" for e in entries)
    page = Client()
    page.force_login(operator)
    html = page.get(CHANGES, {"model": "core.apitoken"}).content.decode()
    for secret in (raw, hash_token(raw), raw_replacement, hash_token(raw_replacement)):
        assert secret not in stored
        assert secret not in html
    assert html.count('class="change-entry"') == 3


def test_a_rotated_token_is_logged_without_secrets() -> None:
    token, raw = api_token_create(name="rotating", scopes=["read"])
    new, new_raw = api_token_rotate(token_id=token.pk)
    entries = list(LogEntry.objects.filter(content_type__model="apitoken").order_by("pk"))
    assert [(entry.object_pk, entry.action, sorted(entry.changes)) for entry in entries] == [
        (str(token.pk), LogEntry.Action.CREATE, ["name", "scopes"]),
        (str(new.pk), LogEntry.Action.CREATE, ["name", "scopes"]),
        (str(token.pk), LogEntry.Action.UPDATE, ["revoked_at"]),
    ]
    text = " ".join(f"{entry.changes} {entry.object_repr}" for entry in entries)
    for secret in (raw, hash_token(raw), new_raw, hash_token(new_raw)):
        assert secret not in text


def test_the_change_log_is_staff_only() -> None:
    anonymous = Client().get(CHANGES)
    assert anonymous.status_code == 302
    assert anonymous["Location"] == "/admin/login/?next=%2Fchanges"
    htmx = Client().get(CHANGES, headers={"HX-Request": "true"})
    assert (htmx.status_code, htmx["HX-Redirect"]) == (204, "/admin/login/?next=%2Fchanges")
    not_staff = Client()
    not_staff.force_login(make_user("outsider", is_staff=False))
    assert not_staff.get(CHANGES).status_code == 403
    staff = Client()
    staff.force_login(make_user("insider"))
    response = staff.get(CHANGES)
    assert response.status_code == 200
    assert "Nothing has been changed yet." in response.content.decode()


def _staff_client(username: str = "reader") -> Client:
    client = Client()
    client.force_login(make_user(username))
    return client


def _entry_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'id="change-(\d+)"', html)]


def test_filters_by_model_actor_date_and_change_set(default_registry) -> None:  # noqa: F811
    import_entries = list(LogEntry.objects.order_by("-timestamp", "-pk"))
    [import_cid] = {entry.cid for entry in import_entries}
    alice = make_user("alice", is_superuser=True)
    admin_client = Client()
    admin_client.force_login(alice)
    tool = RemoteTool.objects.get(name="arxiv.search")
    response = admin_client.post(
        f"/admin/connectors/remotetool/{tool.pk}/change/",
        _tool_form(tool, description="Search arXiv", aliases=["papers"]),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    [edit] = LogEntry.objects.exclude(pk__in=[e.pk for e in import_entries])
    assert edit.actor == alice
    assert edit.changes == {
        "description": [tool.description, "Search arXiv"],
        "aliases": [[], ["papers"]],
    }
    assert edit.additional_data == {"changeSet": f"POST /admin/connectors/remotetool/{tool.pk}/change/"}
    # An old entry, two days ago.
    old_token, _ = api_token_create(name="old", scopes=["read"])
    old = LogEntry.objects.get(content_type__model="apitoken", object_pk=str(old_token.pk))
    LogEntry.objects.filter(pk=old.pk).update(timestamp=timezone.now() - timedelta(days=2))

    client = _staff_client()
    everything = _entry_ids(client.get(CHANGES).content.decode())
    assert everything == [edit.pk, *[e.pk for e in import_entries], old.pk]

    by_model = client.get(CHANGES, {"model": "connectors.connector"}).content.decode()
    assert _entry_ids(by_model) == [e.pk for e in import_entries if e.content_type.model == "connector"]
    assert _entry_ids(client.get(CHANGES, {"actor": "alice"}).content.decode()) == [edit.pk]
    assert _entry_ids(client.get(CHANGES, {"actor": "tests"}).content.decode()) == [
        e.pk for e in import_entries
    ]
    assert _entry_ids(client.get(CHANGES, {"set": import_cid}).content.decode()) == [
        e.pk for e in import_entries
    ]
    today = timezone.now().date()
    two_days_ago = (today - timedelta(days=2)).isoformat()
    assert _entry_ids(client.get(CHANGES, {"until": two_days_ago}).content.decode()) == [old.pk]
    assert old.pk not in _entry_ids(client.get(CHANGES, {"since": today.isoformat()}).content.decode())
    one_object = client.get(CHANGES, {"model": "connectors.remotetool", "object": str(tool.pk)})
    assert _entry_ids(one_object.content.decode()) == [
        edit.pk,
        *[
            e.pk
            for e in import_entries
            if e.content_type.model == "remotetool" and e.object_pk == str(tool.pk)
        ],
    ]
    # HTMX gets the results fragment alone.
    fragment = client.get(CHANGES, {"actor": "alice"}, headers={"HX-Request": "true"}).content.decode()
    assert fragment.startswith('<div id="change-results"') and "<html" not in fragment


def test_the_diff_shows_old_and_new_escaped(default_registry) -> None:  # noqa: F811
    before = set(LogEntry.objects.values_list("pk", flat=True))
    _tool(default_registry, "arxiv.search")["description"] = "<script>alert(1)</script> papers"
    manifest_import(data=default_registry, actor="tests")
    [entry] = _new_entries(before)
    html = _staff_client().get(CHANGES, {"set": entry.cid}).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "<ins>&lt;script&gt;alert(1)&lt;/script&gt; papers</ins>" in html
    assert (
        "<del>brAInwav arXiv integration: search arXiv papers by query, with paging and sorting</del>" in html
    )
    assert ">manifest import<" in html


def test_bad_filters_are_a_400_saying_what_to_fix(default_registry) -> None:  # noqa: F811
    client = _staff_client()
    response = client.get(CHANGES, {"since": "yesterday", "model": "auth.user"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "since: Give a date as YYYY-MM-DD." in html
    assert "model: Select a valid choice. auth.user is not one of the available choices." in html
    reversed_dates = client.get(CHANGES, {"since": "2026-05-02", "until": "2026-05-01"})
    assert reversed_dates.status_code == 400
    assert (
        "until: The last day (2026-05-01) is before the first (2026-05-02)."
        in reversed_dates.content.decode()
    )


def test_the_admin_history_page_shows_the_objects_changes(default_registry) -> None:  # noqa: F811
    _connector(default_registry, "arxiv")["ttlSeconds"] = 600
    manifest_import(data=default_registry, actor="manage.py connectors import")
    connector = Connector.objects.get(slug="arxiv")
    client = Client()
    client.force_login(User.objects.create_superuser("historian", password="pw"))
    html = client.get(f"/admin/connectors/connector/{connector.pk}/history/").content.decode()
    assert '<div id="change-log" class="module change-log">' in html
    row = re.search(r"<td>ttl seconds</td>\s*<td[^>]*>([^<]*)</td>\s*<td[^>]*>([^<]*)</td>", html)
    assert row is not None and row.groups() == ("1800", "600")
    assert f'href="/changes?model=connectors.connector&amp;object={connector.pk}"' in html


def _tool_form(tool: RemoteTool, *, description: str, aliases: list[str]) -> dict:
    """The admin change form of ``tool`` as a browser posts it, with new description and aliases."""
    data = {
        "connector": str(tool.connector_id),
        "name": tool.name,
        "description": description,
        "tags": ",".join(tool.tags),
        "scopes": ",".join(tool.scopes),
        "position": str(tool.position),
        "upstream_name": tool.upstream_name,
        "declared_input_schema": "null",
        "aliases-TOTAL_FORMS": str(len(aliases)),
        "aliases-INITIAL_FORMS": "0",
        "aliases-MIN_NUM_FORMS": "0",
        "aliases-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for index, alias in enumerate(aliases):
        data[f"aliases-{index}-name"] = alias
        data[f"aliases-{index}-tool"] = str(tool.pk)
    return data


def test_reviews_and_proposal_decisions_are_logged_but_not_the_rows_agents_create(make_token) -> None:
    from apps.grounding.models import ReviewStatus, Verdict, Verification
    from apps.grounding.services import verification_review
    from apps.ontology.models import OntologyProposal
    from apps.ontology.proposals import proposal_reject

    token, _ = make_token("write")
    verification = Verification.objects.create(
        claim="Passwords should be hashed with MD5.",
        verdict=Verdict.UNVERIFIED,
        confidence=0.4,
        latency_ms=1.0,
        review_status=ReviewStatus.PENDING,
    )
    proposal = OntologyProposal.objects.create(
        action="create", target_iri="https://example.org/cw#Passphrase", proposal={"label": "Passphrase"},
        token=token, consistent=True, quality_score=0.6, markdown_preview="# Passphrase", base_version=1,
    )  # fmt: skip
    assert not LogEntry.objects.filter(content_type__model__in=["verification", "ontologyproposal"]).exists()
    reviewer = make_user("reviewer")
    verification_review(
        verification=verification,
        reviewer=reviewer,
        action="reject",
        verdict=Verdict.CONTRADICTED,
        note="MD5",
    )
    proposal_reject(proposal_id=proposal.pk, reviewer=reviewer, note="Not a class of its own.")

    review = LogEntry.objects.get(content_type__model="verification")
    assert review.action == LogEntry.Action.UPDATE
    assert set(review.changes) == {
        "review_status",
        "reviewed_verdict",
        "reviewer",
        "reviewed_at",
        "review_note",
    }
    assert review.changes["review_status"] == ["pending", "rejected"]
    assert review.changes["reviewed_verdict"] == ["", "contradicted"]
    assert review.changes["reviewer"] == [None, "reviewer"]
    decision = LogEntry.objects.get(content_type__model="ontologyproposal")
    assert decision.changes["status"] == ["staged", "rejected"]
    assert decision.changes["review_note"] == ["", "Not a class of its own."]


def test_a_settings_change_through_the_admin_names_the_user_and_each_field() -> None:
    from apps.memory.models import MemorySettings

    settings_row = MemorySettings.current()
    operator = User.objects.create_superuser("tuner", password="pw")
    client = Client()
    client.force_login(operator)
    page = client.get(f"/admin/memory/memorysettings/{settings_row.pk}/change/")
    form = page.context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {name: "" if value is None else value for name, value in data.items()}
    data["decay_rate"] = "0.2"
    data["relevance_threshold"] = "0.4"
    response = client.post(f"/admin/memory/memorysettings/{settings_row.pk}/change/", data)
    assert response.status_code == 302
    # The row's creation with the defaults came first; the operator's change is one entry.
    [entry] = LogEntry.objects.filter(content_type__model="memorysettings", action=LogEntry.Action.UPDATE)
    assert entry.actor == operator
    assert entry.changes == {
        "decay_rate": [settings_row.decay_rate, 0.2],
        "relevance_threshold": [settings_row.relevance_threshold, 0.4],
    }


def test_a_tool_changed_with_an_api_token_names_the_token_and_its_aliases(
    default_registry,  # noqa: F811
    make_token,
) -> None:
    token, raw = make_token("admin", name="registry-bot")
    before = set(LogEntry.objects.values_list("pk", flat=True))
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    response = api.patch(
        "/api/tools/wikidata.sparql/",
        {"aliases": ["sparql", "wdqs"], "connector": "arxiv"},
        content_type="application/json",
    )
    assert response.status_code == 200, response.json()
    [entry] = _new_entries(before)
    assert entry.changes == {
        "connector": ["wikidata", "arxiv"],
        "aliases": [["execute_sparql", "sparql"], ["sparql", "wdqs"]],
    }
    assert entry.actor is None
    assert entry.additional_data == {
        "changeSet": "PATCH /api/tools/wikidata.sparql/",
        "actor": f"token {token}",
    }
    html = _staff_client().get(CHANGES, {"actor": f"token {token}"}).content.decode()
    assert _entry_ids(html) == [entry.pk]
    assert raw not in html


def test_a_knowledge_entry_change_names_its_fields_not_its_embedding() -> None:
    from apps.knowledge import services as knowledge_services
    from apps.knowledge.models import KnowledgeEntry

    domain = knowledge_services.domain_get_or_create(name="security")
    entry = KnowledgeEntry.objects.create(
        entry_id="SEC-777",
        domain=domain,
        topic="Hashing",
        content="Use MD5.",
        source="notes",
        content_hash="a",
    )
    entry.content = "Use a slow password hash such as Argon2id."
    entry.content_hash = "b"
    entry.embedding = [0.1] * 384
    entry.save()
    created, changed = LogEntry.objects.filter(content_type__model="knowledgeentry").order_by("pk")
    assert set(created.changes) == {
        "entry_id",
        "domain",
        "topic",
        "content",
        "source",
        "url",
        "confidence",
        "related",
        "tags",
    }
    assert created.changes["url"] == [None, ""]
    assert changed.changes == {"content": ["Use MD5.", "Use a slow password hash such as Argon2id."]}
