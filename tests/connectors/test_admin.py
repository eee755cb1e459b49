"""The connector admin: pages, the drift filter, actions and the manifest import (DESIGN §1, §6)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.test import Client

from apps.connectors.manifest import dumps
from apps.connectors.models import Connector, DriftState, RemoteTool, ToolAlias, ToolCall
from apps.connectors.services import registry_export

CHANGELIST = "/admin/connectors/connector/"
IMPORT = "/admin/connectors/connector/import/"


def _slugs(response) -> list[str]:
    return [connector.slug for connector in response.context["cl"].result_list]


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_connector_changelist_renders_counts_and_buttons(
    admin_client: Client, default_registry: dict
) -> None:
    RemoteTool.objects.filter(name="wikidata.sparql").update(drift=DriftState.SCHEMA_CHANGED)
    Connector.objects.filter(slug="wikidata").update(undeclared_upstream_tools=["new_tool"])
    response = admin_client.get(CHANGELIST)
    assert response.status_code == 200
    assert _slugs(response) == ["arxiv", "perplexity", "wikidata"]
    rows = {connector.slug: connector for connector in response.context["cl"].result_list}
    assert (rows["arxiv"].tool_total, rows["perplexity"].tool_total, rows["wikidata"].tool_total) == (1, 0, 5)
    assert rows["wikidata"].drifted_total == 1
    content = response.content.decode()
    assert "1 drifted, 1 undeclared upstream" in content
    assert f'href="{IMPORT}"' in content
    assert 'href="/admin/connectors/connector/export/"' in content


def test_changelist_search_finds_connectors_by_tool_name(
    admin_client: Client, default_registry: dict
) -> None:
    response = admin_client.get(CHANGELIST, {"q": "wikidata.sparql"})
    assert _slugs(response) == ["wikidata"]
    assert response.context["cl"].result_list[0].tool_total == 5


def test_change_pages_render_with_inlines(admin_client: Client, default_registry: dict) -> None:
    wikidata = Connector.objects.get(slug="wikidata")
    response = admin_client.get(f"/admin/connectors/connector/{wikidata.pk}/change/")
    assert response.status_code == 200
    content = response.content.decode()
    sparql = RemoteTool.objects.get(name="wikidata.sparql")
    assert 'value="wikidata.sparql"' in content
    assert (
        f'execute_sparql, sparql <a href="/admin/connectors/remotetool/{sparql.pk}/change/">edit aliases</a>'
        in (content)
    )
    # Sync-owned fields are shown, not editable.
    assert 'name="last_sync_error"' not in content
    assert 'name="tools-0-drift"' not in content

    response = admin_client.get(f"/admin/connectors/remotetool/{sparql.pk}/change/")
    assert response.status_code == 200
    content = response.content.decode()
    assert 'value="execute_sparql"' in content and 'value="sparql"' in content
    assert 'name="upstream_input_schema"' not in content
    assert admin_client.get("/admin/connectors/remotetool/").status_code == 200
    assert admin_client.get("/admin/connectors/toolalias/").status_code == 404  # edited inline only


def test_tool_call_admin_is_read_only(admin_client: Client, default_registry: dict) -> None:
    call = ToolCall.objects.create(
        tool=RemoteTool.objects.get(name="wikidata.sparql"),
        tool_name="wikidata.sparql",
        requested_name="sparql",
        upstream_name="execute_sparql",
        connector_slug="wikidata",
        status="upstream_error",
        duration_ms=12.5,
        error="boom",
    )
    response = admin_client.get(
        "/admin/connectors/toolcall/", {"status__exact": "upstream_error", "q": "sparql"}
    )
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [call]
    assert admin_client.get("/admin/connectors/toolcall/add/").status_code == 403
    response = admin_client.get(f"/admin/connectors/toolcall/{call.pk}/change/")
    assert response.status_code == 200
    assert 'name="error"' not in response.content.decode()


def test_has_drift_filter(admin_client: Client, default_registry: dict) -> None:
    RemoteTool.objects.filter(name="wikidata.get_claims").update(drift=DriftState.MISSING_UPSTREAM)
    RemoteTool.objects.filter(name="arxiv.search").update(drift=DriftState.IN_SYNC)
    assert _slugs(admin_client.get(CHANGELIST, {"has_drift": "yes"})) == ["wikidata"]
    assert _slugs(admin_client.get(CHANGELIST, {"has_drift": "no"})) == ["arxiv", "perplexity"]

    Connector.objects.filter(slug="perplexity").update(undeclared_upstream_tools=["search"])
    assert _slugs(admin_client.get(CHANGELIST, {"has_drift": "yes"})) == ["perplexity", "wikidata"]
    assert _slugs(admin_client.get(CHANGELIST, {"has_drift": "no"})) == ["arxiv"]


def test_export_action_and_view_download_the_whole_registry(
    admin_client: Client, default_registry: dict
) -> None:
    expected = dumps(registry_export())
    arxiv = Connector.objects.get(slug="arxiv")
    response = admin_client.post(CHANGELIST, {"action": "export_manifest", "_selected_action": [arxiv.pk]})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="connectors.manifest.json"'
    assert response.content.decode() == expected
    assert (
        json.loads(expected)["connectors"][2]["id"] == "wikidata"
    )  # every connector, not just the selection

    response = admin_client.get("/admin/connectors/connector/export/")
    assert response.content.decode() == expected


def test_admin_is_staff_only(client: Client, default_registry: dict) -> None:
    for url in (CHANGELIST, IMPORT, "/admin/connectors/connector/export/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")


def test_import_needs_add_change_delete_permissions(default_registry: dict) -> None:
    user = User.objects.create_user("viewer", password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_connector", "change_connector"]))
    client = Client()
    client.force_login(user)
    assert client.get(IMPORT).status_code == 403
    response = client.get(CHANGELIST)
    assert response.status_code == 200
    assert f'href="{IMPORT}"' not in response.content.decode()


def test_import_form_renders(admin_client: Client, db: None) -> None:
    response = admin_client.get(IMPORT)
    assert response.status_code == 200
    content = response.content.decode()
    assert 'name="manifest_file"' in content and 'name="manifest_text"' in content
    assert 'name="csrfmiddlewaretoken"' in content


def test_import_rejects_malformed_json_with_its_position(
    admin_client: Client, default_registry: dict
) -> None:
    before = dumps(registry_export())
    response = admin_client.post(IMPORT, {"manifest_text": '{"connectors": [}'})
    assert response.status_code == 200
    assert response.context["errors"] == [
        {"path": "$", "message": "Not valid JSON: Expecting value at line 1, column 17."}
    ]
    assert response.context["changes"] is None
    content = response.content.decode()
    assert "The manifest has 1 error; nothing was changed." in content
    assert 'name="apply"' not in content
    assert dumps(registry_export()) == before


def test_import_lists_every_schema_error_with_its_path(
    admin_client: Client, default_registry: dict, default_manifest: dict
) -> None:
    before = dumps(registry_export())
    default_manifest["connectors"][2]["remoteTools"][0]["name"] = "Wiki Data!"
    default_manifest["connectors"][0]["ttlSeconds"] = "soon"
    default_manifest["connectors"][1]["colour"] = "<b>red</b>"
    upload = _upload(json.dumps(default_manifest))
    response = admin_client.post(IMPORT, {"manifest_file": upload})
    assert response.status_code == 200
    paths = [error["path"] for error in response.context["errors"]]
    assert paths == ["$.connectors[0].ttlSeconds", "$.connectors[1]", "$.connectors[2].remoteTools[0].name"]
    content = response.content.decode()
    assert "The manifest has 3 errors; nothing was changed." in content
    assert "<code>$.connectors[2].remoteTools[0].name</code>" in content
    assert "&#x27;Wiki Data!&#x27; is not a valid tool name" in content
    assert "&#x27;colour&#x27;" in content and "<b>red</b>" not in content
    assert dumps(registry_export()) == before


def test_import_form_needs_exactly_one_source(admin_client: Client, db: None) -> None:
    response = admin_client.post(IMPORT, {"manifest_text": "  "})
    assert "Upload a manifest file or paste its JSON." in response.content.decode()
    response = admin_client.post(IMPORT, {"manifest_text": "{}", "manifest_file": _upload("{}")})
    assert "Upload a file or paste the manifest, not both." in response.content.decode()
    response = admin_client.post(IMPORT, {"manifest_file": _upload(b"\xff\xfe{", name="m.json")})
    assert "The file is not UTF-8 text." in response.content.decode()


def test_import_previews_then_applies(
    admin_client: Client, default_registry: dict, default_manifest: dict
) -> None:
    before = dumps(registry_export())
    arxiv, _perplexity, wikidata = default_manifest["connectors"]
    del default_manifest["connectors"][1]  # perplexity goes
    arxiv["version"] = "2.0.0"
    arxiv["scopes"] = ["arxiv:search", "arxiv:read"]
    wikidata["remoteTools"][0]["description"] = "Find items by meaning"
    wikidata["remoteTools"][0]["aliases"].append("find_items")
    del wikidata["remoteTools"][4]  # wikidata.get_hierarchy goes
    wikidata["remoteTools"].append({"name": "wikidata.labels", "tags": ["labels", "wikidata"]})
    text = json.dumps(default_manifest, indent=2)

    response = admin_client.post(IMPORT, {"manifest_text": text})
    assert response.status_code == 200
    changes = response.context["changes"]
    assert changes.as_dict() == {
        "connectorsCreated": [],
        "connectorsUpdated": {"arxiv": ["version", "scopes"]},
        "connectorsDeleted": ["perplexity"],
        "toolsCreated": ["wikidata.labels"],
        "toolsUpdated": {"wikidata.vector_search_items": ["description", "aliases"]},
        "toolsDeleted": ["wikidata.get_hierarchy"],
    }
    content = response.content.decode()
    assert (
        "Preview: connectors: 0 created, 1 updated, 1 deleted; tools: 1 created, 1 updated, 1 deleted"
        in content
    )
    assert (
        '<li><code class="field-name">version</code>: <del>&quot;2026.05&quot;</del> → '
        "<ins>&quot;2.0.0&quot;</ins></li>"
    ) in content
    assert 'name="apply"' in content
    assert response.context["apply_form"].initial["manifest"] == text
    assert dumps(registry_export()) == before  # a preview changes nothing

    response = admin_client.post(IMPORT, {"manifest": text, "apply": "Apply"})
    assert response.status_code == 302
    assert response["Location"] == CHANGELIST
    assert _messages(response) == [
        "Manifest imported: connectors: 0 created, 1 updated, 1 deleted; "
        "tools: 1 created, 1 updated, 1 deleted."
    ]
    assert list(Connector.objects.values_list("slug", flat=True)) == ["arxiv", "wikidata"]
    assert Connector.objects.get(slug="arxiv").version == "2.0.0"
    assert not RemoteTool.objects.filter(name="wikidata.get_hierarchy").exists()
    assert RemoteTool.objects.get(name="wikidata.labels").tags == ["labels", "wikidata"]
    assert ToolAlias.objects.get(name="find_items").tool.name == "wikidata.vector_search_items"


def test_apply_validates_the_manifest_again(
    admin_client: Client, default_registry: dict, default_manifest: dict
) -> None:
    before = dumps(registry_export())
    default_manifest["connectors"][0]["transport"] = "carrier-pigeon"
    response = admin_client.post(IMPORT, {"manifest": json.dumps(default_manifest), "apply": "Apply"})
    assert response.status_code == 200
    assert [error["path"] for error in response.context["errors"]] == ["$.connectors[0].transport"]
    assert dumps(registry_export()) == before

    response = admin_client.post(IMPORT, {"apply": "Apply"})
    assert response.context["message"] == "The manifest to apply was missing; upload it again."


def test_unchanged_manifest_has_nothing_to_apply(
    admin_client: Client, default_registry: dict, default_manifest: dict
) -> None:
    response = admin_client.post(IMPORT, {"manifest_text": json.dumps(default_manifest)})
    assert response.context["changes"].is_empty
    content = response.content.decode()
    assert "there is nothing to apply" in content
    assert 'name="apply"' not in content


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (
            "sync_tools",
            "wikidata: MCP server 'wikidata' could not be reached: All connection attempts failed.",
        ),
        (
            "test_connection",
            "wikidata: cannot reach http://127.0.0.1:9/mcp/: "
            "MCP server 'wikidata' could not be reached: All connection attempts failed.",
        ),
    ],
)
def test_upstream_actions_report_an_unreachable_upstream(
    admin_client: Client, default_registry: dict, action: str, expected: str, monkeypatch
) -> None:
    pytest.importorskip("apps.connectors.gateway")
    monkeypatch.delenv("WIKIDATA_MCP_URL", raising=False)
    Connector.objects.filter(slug="wikidata").update(endpoint="http://127.0.0.1:9/mcp/", timeout_seconds=2)
    wikidata = Connector.objects.get(slug="wikidata")
    response = admin_client.post(CHANGELIST, {"action": action, "_selected_action": [wikidata.pk]})
    assert response.status_code == 302
    [message] = list(get_messages(response.wsgi_request))
    assert message.level_tag == "error"
    assert str(message) == expected


def _upload(content: str | bytes, name: str = "connectors.manifest.json"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = content.encode() if isinstance(content, str) else content
    return SimpleUploadedFile(name, data, content_type="application/json")


def _form_data(response) -> dict:
    """The change form's current values, as a browser would post them back unchanged."""
    data = {}
    forms = [response.context["adminform"].form]
    for formset in response.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        data.update({management[name].html_name: management[name].value() for name in management.fields})
        forms.extend(formset.formset.forms)
    for form in forms:
        for name in form.fields:
            value = form[name].value()
            if value is True:
                data[form[name].html_name] = "on"
            elif value is not None and value is not False:
                data[form[name].html_name] = value
    return data


def test_saving_a_connector_in_the_admin_keeps_sync_fields(
    admin_client: Client, default_registry: dict
) -> None:
    Connector.objects.filter(slug="wikidata").update(
        undeclared_upstream_tools=["get_labels"], last_sync_error="Timed out"
    )
    RemoteTool.objects.filter(name="wikidata.sparql").update(drift=DriftState.SCHEMA_CHANGED)
    wikidata = Connector.objects.get(slug="wikidata")
    url = f"/admin/connectors/connector/{wikidata.pk}/change/"
    data = _form_data(admin_client.get(url))
    data["version"] = "2026.05.01"
    tool_prefix = next(key for key, value in data.items() if value == "wikidata.sparql").rsplit("-", 1)[0]
    data[f"{tool_prefix}-tags"] = "sparql,wikidata"
    response = admin_client.post(url, data)
    assert response.status_code == 302
    wikidata.refresh_from_db()
    assert wikidata.version == "2026.05.01"
    assert (wikidata.undeclared_upstream_tools, wikidata.last_sync_error) == (["get_labels"], "Timed out")
    sparql = RemoteTool.objects.get(name="wikidata.sparql")
    assert (sparql.tags, sparql.drift) == (["sparql", "wikidata"], DriftState.SCHEMA_CHANGED)
    assert sorted(sparql.aliases.values_list("name", flat=True)) == ["execute_sparql", "sparql"]


def test_changelists_need_a_fixed_number_of_queries(
    admin_client: Client, default_registry: dict, django_assert_max_num_queries
) -> None:
    for index in range(10):
        connector = Connector.objects.create(
            slug=f"extra-{index}",
            name="Extra",
            version="1",
            transport="mcp",
            endpoint="https://example.org/mcp",
        )
        tool = RemoteTool.objects.create(connector=connector, name=f"extra.tool-{index}")
        ToolAlias.objects.create(tool=tool, name=f"extra_alias_{index}")
    admin_client.get(CHANGELIST)  # session and permission caches
    with django_assert_max_num_queries(5):
        assert admin_client.get(CHANGELIST).status_code == 200
    with django_assert_max_num_queries(8):  # one more: the counts per drift state above the list
        assert admin_client.get("/admin/connectors/remotetool/").status_code == 200


def test_admin_refuses_aliases_that_shadow_canonical_names(
    admin_client: Client, default_registry: dict
) -> None:
    hierarchy = RemoteTool.objects.get(name="wikidata.get_hierarchy")
    url = f"/admin/connectors/remotetool/{hierarchy.pk}/change/"
    data = _form_data(admin_client.get(url))
    data["aliases-0-name"] = "arxiv.search"
    response = admin_client.post(url, data)
    assert response.status_code == 200
    errors = [form.errors for form in response.context["inline_admin_formsets"][0].formset.forms]
    assert errors[0] == {"name": ["'arxiv.search' is a canonical tool name and cannot be an alias."]}

    data = _form_data(admin_client.get(url))
    data["name"] = "sparql"
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "name": ["'sparql' is already an alias of another tool."]
    }
    assert RemoteTool.objects.get(pk=hierarchy.pk).name == "wikidata.get_hierarchy"


def test_import_is_csrf_protected(admin_user: User, default_registry: dict, default_manifest: dict) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    del default_manifest["connectors"][1]
    response = client.post(IMPORT, {"manifest": json.dumps(default_manifest), "apply": "Apply"})
    assert response.status_code == 403
    assert Connector.objects.filter(slug="perplexity").exists()
