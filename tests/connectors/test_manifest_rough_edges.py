"""The manifest import reads well (issue #26 item 6): every kind of error in one round (schema errors,
refused endpoints and duplicate names together), a preview that shows each changed field's old and
new value, and a clear warning before a whole connector is deleted."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from apps.connectors import manifest as manifest_format
from apps.connectors.manifest import EntryChange, FieldChange, manifest_diff
from apps.connectors.services import registry_export

pytestmark = pytest.mark.django_db

IMPORT = "/admin/connectors/connector/import/"
LOOPBACK = (
    "Endpoint refused: '127.0.0.1' is a loopback address; CortexWeb does not send requests there unless "
    "CORTEX_OUTBOUND_ALLOW_NETWORKS or CORTEX_OUTBOUND_ALLOW_HOSTS allows it."
)


@pytest.fixture
def no_allow_list(settings) -> None:
    # Tests allow loopback for their local upstreams; production refuses it.
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = []
    settings.CORTEX_OUTBOUND_ALLOW_HOSTS = []


def _three_kinds(manifest: dict) -> dict:
    arxiv, perplexity, wikidata = manifest["connectors"]
    arxiv["ttlSeconds"] = "soon"  # schema
    wikidata["remoteTools"][2]["colour"] = "blue"  # schema, in a tool
    perplexity["endpoint"] = "http://127.0.0.1:9000/mcp"  # loopback
    wikidata["remoteTools"][1]["name"] = "wikidata.vector_search_items"  # duplicate
    return manifest


EXPECTED = [
    ("$.connectors[0].ttlSeconds", '"soon" is not of type "integer"'),
    ("$.connectors[1].endpoint", LOOPBACK),
    (
        "$.connectors[2].remoteTools[1].name",
        "Duplicate tool name 'wikidata.vector_search_items' (first at $.connectors[2].remoteTools[0].name).",
    ),
    ("$.connectors[2].remoteTools[2]", "Unknown field(s) 'colour'; remove them or fix their spelling."),
]


def test_schema_errors_refused_endpoints_and_duplicates_come_in_one_round(
    default_manifest: dict, no_allow_list: None
) -> None:
    errors = manifest_format.validate_manifest(_three_kinds(default_manifest))
    assert [(error.path, error.message) for error in errors] == EXPECTED


def test_a_malformed_part_is_left_to_the_schema_and_the_rest_is_still_checked(
    default_manifest: dict, no_allow_list: None
) -> None:
    arxiv, perplexity, wikidata = default_manifest["connectors"]
    arxiv["remoteTools"] = "arxiv.search"  # not a list: only the schema speaks of it
    perplexity["auth"] = {"type": "bearer", "secretEnv": 7}
    wikidata["endpoint"] = 5
    wikidata["remoteTools"][0]["aliases"] = ["get_statements", 3]
    default_manifest["connectors"].append("not a connector")
    default_manifest["connectors"].append(dict(perplexity, id="perplexity", endpoint="http://127.0.0.1/"))
    errors = [(error.path, error.message) for error in manifest_format.validate_manifest(default_manifest)]
    assert errors == [
        ("$.connectors[0].remoteTools", '"arxiv.search" is not of type "array"'),
        ("$.connectors[1].auth.secretEnv", '7 is not of type "string"'),
        ("$.connectors[2].endpoint", '5 is not of type "string"'),
        ("$.connectors[2].remoteTools[0].aliases[1]", '3 is not of type "string"'),
        (
            "$.connectors[2].remoteTools[2].aliases[2]",
            "Duplicate alias 'get_statements' (first at $.connectors[2].remoteTools[0].aliases[0]).",
        ),
        ("$.connectors[3]", '"not a connector" is not of type "object"'),
        ("$.connectors[4].auth.secretEnv", '7 is not of type "string"'),
        ("$.connectors[4].id", "Duplicate connector id 'perplexity' (first at $.connectors[1].id)."),
        ("$.connectors[4].endpoint", LOOPBACK),
    ]


def test_the_import_page_lists_all_three_kinds_in_one_response(
    admin_client: Client, default_registry: dict, default_manifest: dict, no_allow_list: None
) -> None:
    before = registry_export()
    response = admin_client.post(IMPORT, {"manifest_text": json.dumps(_three_kinds(default_manifest))})
    assert response.status_code == 200
    assert [(error["path"], error["message"]) for error in response.context["errors"]] == EXPECTED
    content = response.content.decode()
    assert "The manifest has 4 errors; nothing was changed." in content
    assert "<code>$.connectors[1].endpoint</code>" in content
    assert 'name="apply"' not in content
    assert registry_export() == before


def _changed(manifest: dict) -> dict:
    arxiv, _perplexity, wikidata = manifest["connectors"]
    del manifest["connectors"][1]  # perplexity, which has no tools
    arxiv["version"] = "2.0.0"
    arxiv["enabled"] = False
    wikidata["remoteTools"][0]["description"] = "Find items by meaning"
    del wikidata["remoteTools"][4]  # wikidata.get_hierarchy
    arxiv["remoteTools"].append(wikidata["remoteTools"].pop(3))  # wikidata.sparql moves to arxiv
    return manifest


def test_the_diff_names_every_changed_field_with_its_old_and_new_value(
    default_registry: dict, default_manifest: dict
) -> None:
    old_description = default_manifest["connectors"][2]["remoteTools"][0].get("description", "—")
    diff = manifest_diff(registry_export(), _changed(default_manifest))
    assert diff.connectors == (
        EntryChange(
            "arxiv",
            "updated",
            (FieldChange("version", '"2026.05"', '"2.0.0"'), FieldChange("enabled", "true", "false")),
        ),
        EntryChange("perplexity", "deleted"),
    )
    assert diff.tools == (
        EntryChange("wikidata.sparql", "updated", (FieldChange("connector", "wikidata", "arxiv"),)),
        EntryChange(
            "wikidata.vector_search_items",
            "updated",
            (FieldChange("description", json.dumps(old_description), '"Find items by meaning"'),),
        ),
        EntryChange("wikidata.get_hierarchy", "deleted"),
    )
    assert diff.connectors_deleted == (EntryChange("perplexity", "deleted"),)
    assert diff.tools_deleted_alone == (EntryChange("wikidata.get_hierarchy", "deleted"),)


def test_a_deleted_connector_lists_the_tools_deleted_with_it(
    default_registry: dict, default_manifest: dict
) -> None:
    default_manifest["connectors"] = default_manifest["connectors"][:2]  # wikidata goes
    diff = manifest_diff(registry_export(), default_manifest)
    tools = (
        "wikidata.vector_search_items",
        "wikidata.vector_search_properties",
        "wikidata.get_claims",
        "wikidata.sparql",
        "wikidata.get_hierarchy",
    )
    assert diff.connectors == (EntryChange("wikidata", "deleted", tools=tools),)
    assert diff.tools == tuple(EntryChange(name, "deleted") for name in tools)
    assert diff.tools_deleted_alone == ()


def test_the_preview_shows_old_and_new_values_and_warns_before_deleting(
    admin_client: Client, default_registry: dict, default_manifest: dict
) -> None:
    default_manifest["connectors"][1]["remoteTools"] = [{"name": "perplexity.ask"}]
    admin_client.post(IMPORT, {"manifest": json.dumps(default_manifest), "apply": "Apply"})
    manifest = _changed(json.loads(json.dumps(default_manifest)))
    response = admin_client.post(IMPORT, {"manifest_text": json.dumps(manifest)})
    content = response.content.decode()
    assert (
        '<li><code class="field-name">version</code>: <del>&quot;2026.05&quot;</del> → '
        "<ins>&quot;2.0.0&quot;</ins></li>"
    ) in content
    assert '<li><code class="field-name">enabled</code>: <del>true</del> → <ins>false</ins></li>' in content
    assert (
        '<li><code class="field-name">connector</code>: <del>wikidata</del> → <ins>arxiv</ins></li>'
        in content
    )
    warning = content[content.index('<div class="manifest-delete-warning"') :]
    warning = warning[: warning.index("</div>")]
    assert '<h3 id="manifest-delete-title">Applying this manifest deletes</h3>' in warning
    assert (
        "<li>the whole connector <code>perplexity</code> with its 1 tool: <code>perplexity.ask</code></li>"
    ) in warning
    assert "<li>the tool <code>wikidata.get_hierarchy</code></li>" in warning
    assert 'value="Apply, deleting what is listed above"' in content


def test_a_preview_that_deletes_nothing_has_no_warning(
    admin_client: Client, default_registry: dict, default_manifest: dict
) -> None:
    default_manifest["connectors"][0]["version"] = "2.0.0"
    content = admin_client.post(IMPORT, {"manifest_text": json.dumps(default_manifest)}).content.decode()
    assert "manifest-delete-warning" not in content
    assert '<input type="submit" class="default" name="apply" value="Apply">' in content
    assert "<style" not in content  # the CSP refuses inline styles: they live in static/css/admin.css
