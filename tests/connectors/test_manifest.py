"""Manifest validation, atomic import with a change preview, export round trip, the command."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from apps.connectors import manifest as manifest_format
from apps.connectors.models import Connector, RemoteTool, ToolAlias
from apps.connectors.services import (
    manifest_changes,
    manifest_import,
    manifest_validated,
    registry_export,
)
from apps.core.errors import ValidationFailed
from apps.core.models import Event
from tests.connectors.conftest import DEFAULT_MANIFEST_PATH

pytestmark = pytest.mark.django_db


def _errors(data) -> list[tuple[str, str]]:
    return [(error.path, error.message) for error in manifest_format.validate_manifest(data)]


def test_the_default_manifest_is_valid_and_declares_the_seed_tools(default_manifest: dict) -> None:
    assert _errors(default_manifest) == []
    by_id = {entry["id"]: entry for entry in default_manifest["connectors"]}
    assert [tool["name"] for tool in by_id["wikidata"]["remoteTools"]] == [
        "wikidata.vector_search_items",
        "wikidata.vector_search_properties",
        "wikidata.get_claims",
        "wikidata.sparql",
        "wikidata.get_hierarchy",
    ]
    claims = by_id["wikidata"]["remoteTools"][2]
    assert claims["upstreamName"] == "get_statements"
    assert {"get_entity_claims", "get_statements"} <= set(claims["aliases"])
    assert by_id["wikidata"]["endpointEnv"] == "WIKIDATA_MCP_URL"
    assert [tool["name"] for tool in by_id["arxiv"]["remoteTools"]] == ["arxiv.search"]
    assert "remoteTools" not in by_id["perplexity"]
    assert by_id["perplexity"]["enabled"] is False


def test_export_of_an_import_reproduces_the_file(default_registry: dict) -> None:
    assert manifest_format.dumps(registry_export()) == DEFAULT_MANIFEST_PATH.read_text(encoding="utf-8")


def test_round_trip_keeps_content_of_a_hand_written_manifest(default_manifest: dict) -> None:
    wikidata = default_manifest["connectors"][2]
    wikidata["metadata"] = {"zeta": 1, "alpha": {"b": [1, 2], "a": "Zürich — 東京 ✓"}}
    wikidata["timeoutSeconds"] = 12.5
    wikidata["remoteTools"][0]["inputSchema"] = {
        "type": "object",
        "required": ["query"],
        "properties": {"query": {"type": "string"}, "lang": {"type": "string", "default": "en"}},
    }
    manifest_import(data=default_manifest)
    assert registry_export() == default_manifest


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Wiki Data!", "'Wiki Data!' is not a valid tool name"),
        ("x" * 65, "is not a valid tool name"),
        ("", "'' is not a valid tool name"),
    ],
)
def test_invalid_tool_names_are_refused_with_their_path(
    default_manifest: dict, name: str, message: str
) -> None:
    default_manifest["connectors"][2]["remoteTools"][1]["name"] = name
    [(path, text)] = _errors(default_manifest)
    assert path == "$.connectors[2].remoteTools[1].name"
    assert message in text


def test_every_error_is_listed_at_once(default_manifest: dict) -> None:
    connectors = default_manifest["connectors"]
    connectors[0]["remoteTools"][0]["colour"] = "blue"  # unknown field in a tool
    connectors[1]["ttlSeconds"] = "soon"
    del connectors[2]["version"]
    assert _errors(default_manifest) == [
        ("$.connectors[0].remoteTools[0]", "Unknown field(s) 'colour'; remove them or fix their spelling."),
        ("$.connectors[1].ttlSeconds", '"soon" is not of type "integer"'),
        ("$.connectors[2]", '"version" is a required property'),
    ]


def test_duplicates_and_clashes_are_named(default_manifest: dict) -> None:
    connectors = default_manifest["connectors"]
    connectors[1]["id"] = "arxiv"
    connectors[2]["remoteTools"][1]["name"] = "wikidata.vector_search_items"
    connectors[2]["remoteTools"][3]["aliases"].append("get_entity_claims")
    connectors[2]["remoteTools"][4]["aliases"].append("arxiv.search")
    connectors[2]["textErrorPatterns"][0]["pattern"] = "(unclosed"
    assert _errors(default_manifest) == [
        ("$.connectors[1].id", "Duplicate connector id 'arxiv' (first at $.connectors[0].id)."),
        (
            "$.connectors[2].textErrorPatterns[0].pattern",
            "Not a valid regular expression: missing ), unterminated subpattern at position 0.",
        ),
        (
            "$.connectors[2].remoteTools[1].name",
            "Duplicate tool name 'wikidata.vector_search_items' "
            "(first at $.connectors[2].remoteTools[0].name).",
        ),
        (
            "$.connectors[2].remoteTools[3].aliases[2]",
            "Duplicate alias 'get_entity_claims' (first at $.connectors[2].remoteTools[2].aliases[1]).",
        ),
        (
            "$.connectors[2].remoteTools[4].aliases[2]",
            "Alias 'arxiv.search' is also a canonical tool name (at $.connectors[0].remoteTools[0].name).",
        ),
    ]


def test_malformed_json_names_line_and_column() -> None:
    with pytest.raises(ValidationFailed) as caught:
        manifest_validated(text='{"connectors": [}')
    assert caught.value.details["errors"] == [
        {"path": "$", "message": "Not valid JSON: Expecting value at line 1, column 17."}
    ]


def test_an_invalid_manifest_changes_nothing(default_registry: dict, default_manifest: dict) -> None:
    before = registry_export()
    default_manifest["connectors"] = default_manifest["connectors"][:1]  # would delete two connectors
    default_manifest["connectors"][0]["remoteTools"][0]["name"] = "Bad Name"
    with pytest.raises(ValidationFailed) as caught:
        manifest_import(data=default_manifest)
    assert caught.value.message == "The manifest has 1 error; nothing was changed."
    assert registry_export() == before


def test_preview_lists_changes_and_import_applies_them(
    default_registry: dict, default_manifest: dict
) -> None:
    arxiv, perplexity, wikidata = default_manifest["connectors"]
    perplexity["enabled"] = True
    wikidata["remoteTools"][2]["name"] = "wikidata.claims"  # a rename is a new tool plus a deletion
    wikidata["remoteTools"][3]["tags"] = ["sparql", "wikidata"]
    default_manifest["connectors"] = [arxiv, perplexity, wikidata]
    changes = manifest_changes(data=default_manifest)
    assert changes.as_dict() == {
        "connectorsCreated": [],
        "connectorsUpdated": {"perplexity": ["enabled"]},
        "connectorsDeleted": [],
        "toolsCreated": ["wikidata.claims"],
        "toolsUpdated": {"wikidata.sparql": ["tags"]},
        "toolsDeleted": ["wikidata.get_claims"],
    }
    assert RemoteTool.objects.filter(name="wikidata.get_claims").exists()  # preview wrote nothing

    manifest_import(data=default_manifest, actor="test")
    assert Connector.objects.get(slug="perplexity").enabled is True
    assert not RemoteTool.objects.filter(name="wikidata.get_claims").exists()
    assert ToolAlias.objects.get(name="get_entity_claims").tool.name == "wikidata.claims"
    assert manifest_changes(data=default_manifest).is_empty
    event = Event.objects.filter(name="connectors.manifest.imported").latest("id")
    assert event.payload["toolsCreated"] == ["wikidata.claims"]


def test_import_keeps_sync_owned_fields_of_tools_that_stay(
    default_registry: dict, default_manifest: dict
) -> None:
    RemoteTool.objects.filter(name="wikidata.sparql").update(
        upstream_description="Run SPARQL", upstream_input_schema={"type": "object"}, drift="in_sync"
    )
    default_manifest["connectors"][2]["remoteTools"][3]["description"] = "SPARQL, read-only"
    manifest_import(data=default_manifest)
    tool = RemoteTool.objects.get(name="wikidata.sparql")
    assert (tool.description, tool.upstream_description, tool.drift) == (
        "SPARQL, read-only",
        "Run SPARQL",
        "in_sync",
    )
    assert tool.upstream_input_schema == {"type": "object"}


def test_connectors_command(tmp_path, default_manifest: dict) -> None:
    out = io.StringIO()
    call_command("connectors", "validate", stdout=out)
    assert out.getvalue() == "valid: 3 connectors, 6 tools\n"

    call_command("connectors", "import", "--dry-run", stdout=out)
    assert Connector.objects.count() == 0
    call_command("connectors", "import", stdout=out)
    assert out.getvalue().endswith(
        "imported: connectors: 3 created, 0 updated, 0 deleted; tools: 6 created, 0 updated, 0 deleted\n"
    )
    exported = tmp_path / "out.json"
    call_command("connectors", "export", "--output", str(exported), stdout=out)
    assert exported.read_text(encoding="utf-8") == DEFAULT_MANIFEST_PATH.read_text(encoding="utf-8")

    default_manifest["connectors"][0]["transport"] = "carrier-pigeon"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(default_manifest), encoding="utf-8")
    err = io.StringIO()
    with pytest.raises(CommandError, match=r"^The manifest has 1 error; nothing was changed\.$"):
        call_command("connectors", "import", str(bad), stdout=out, stderr=err)
    assert err.getvalue() == '$.connectors[0].transport: "carrier-pigeon" is not one of "mcp" or "native"\n'
