"""The connector manifest: its JSON Schema, every check beyond it, and its one serialisation.

A manifest is the whole catalogue. ``validate_manifest`` collects *every* problem
with its JSON path (``$.connectors[1].remoteTools[0].name``) so an operator fixes
a file in one pass; ``manifest_from_registry`` writes the same format back, with
keys in a fixed order and empty optional fields omitted, so export(import(file))
reproduces the file.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema_rs
from django.conf import settings
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from apps.connectors.environment import endpoint_env_refusal, env_name_refusal
from apps.connectors.schema_refs import remote_refs
from apps.core.outbound import url_refusal

SCHEMA_PATH = Path(settings.BASE_DIR) / "config" / "schemas" / "connectors.manifest.schema.json"
SCHEMA_REFERENCE = "./schemas/connectors.manifest.schema.json"

# Key order of the serialised manifest; optional keys absent when empty.
CONNECTOR_KEYS = (
    "id",
    "name",
    "version",
    "transport",
    "endpoint",
    "endpointEnv",
    "auth",
    "scopes",
    "ttlSeconds",
    "enabled",
    "metadata",
    "rateLimit",
    "timeoutSeconds",
    "textErrorPatterns",
    "remoteTools",
)
TOOL_KEYS = ("name", "description", "tags", "scopes", "upstreamName", "aliases", "inputSchema")


@dataclass(frozen=True)
class ManifestError:
    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@functools.cache
def manifest_validator() -> jsonschema_rs.Draft202012Validator:
    # jsonschema-rs (Rust) rather than the pure-Python jsonschema: ~0.01 ms instead of ~2 ms per
    # connector, and the same Draft 2020-12 semantics.
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return jsonschema_rs.Draft202012Validator(schema)


def parse_manifest(text: str | bytes) -> tuple[Any, list[ManifestError]]:
    """JSON text → data, or a single error naming the line and column."""
    try:
        return json.loads(text), []
    except UnicodeDecodeError:
        return None, [ManifestError("$", "The manifest is not UTF-8 text.")]
    except json.JSONDecodeError as exc:
        return None, [
            ManifestError("$", f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.")
        ]


def _json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def validate_manifest(data: Any) -> list[ManifestError]:
    """Every error in one round, grouped by connector and tool in document order: the schema's, then
    the checks beyond it (endpoints refused, duplicate names, bad patterns) on whatever parts are well
    formed, so an operator never fixes a schema error only to meet a loopback endpoint or a duplicate
    next time."""
    schema_errors = sorted(
        (
            ManifestError(_json_path(error.instance_path), _schema_message(error))
            for error in manifest_validator().iter_errors(data)
        ),
        key=lambda error: _path_key(error.path),
    )
    connectors = data.get("connectors") if isinstance(data, dict) else None
    reported = {error.path for error in schema_errors}  # a value the schema refused is not judged twice
    checks = [
        error
        for error in (_consistency_errors(connectors) if isinstance(connectors, list) else [])
        if error.path not in reported
    ]
    return sorted(schema_errors + checks, key=lambda error: _group_key(error.path))


def _group_key(path: str) -> tuple[int, int]:
    # The part an error belongs to: the manifest (-1), a connector's own fields (tool -1), or a tool.
    found = re.match(r"\$\.connectors\[(\d+)\](?:\.remoteTools\[(\d+)\])?", path)
    if not found:
        return (-1, -1)
    return (int(found[1]), int(found[2]) if found[2] is not None else -1)


def _path_key(path: str) -> list[tuple[int, int | str]]:
    # "$.connectors[10].x" sorts after "$.connectors[9].x": numbers compare as numbers.
    parts = re.findall(r"\[(\d+)\]|\.([^.\[]+)", path)
    return [(0, int(index)) if index else (1, name) for index, name in parts]


def _schema_message(error: jsonschema_rs.ValidationError) -> str:
    kind = type(error.kind).__name__
    last = error.instance_path[-1] if error.instance_path else None
    if kind == "AdditionalProperties":
        unknown = ", ".join(repr(name) for name in getattr(error.kind, "unexpected", ()))
        return f"Unknown field(s) {unknown}; remove them or fix their spelling."
    if kind == "Pattern" and last == "name" and "remoteTools" in error.instance_path:
        return f"{error.instance!r} is not a valid tool name: use 1–64 of a–z, 0–9, '.', '_' and '-'."
    if kind == "Not" and last == "metadata":
        return "'brand' is set by CortexWeb (CORTEX_BRAND); remove it from metadata."
    return error.message


def _strings(value: Any) -> list[tuple[int, str]]:
    # The (index, string) items of a list the schema may have refused: its other items are skipped.
    return (
        [(index, item) for index, item in enumerate(value) if isinstance(item, str)]
        if isinstance(value, list)
        else []
    )


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return (
        [(index, item) for index, item in enumerate(value) if isinstance(item, dict)]
        if isinstance(value, list)
        else []
    )


def _consistency_errors(connectors: list[Any]) -> list[ManifestError]:
    """The checks beyond the schema, on the well-formed parts only (the schema reports the rest)."""
    errors: list[ManifestError] = []
    first_seen: dict[tuple[str, str], str] = {}  # (kind, value) -> JSON path of its first use

    def unique(kind: str, value: Any, path: str) -> None:
        if not isinstance(value, str):
            return
        first = first_seen.setdefault((kind, value), path)
        if first != path:
            errors.append(ManifestError(path, f"Duplicate {kind} {value!r} (first at {first})."))

    for c_index, connector in _dicts(connectors):
        c_path = f"$.connectors[{c_index}]"
        unique("connector id", connector.get("id"), f"{c_path}.id")
        errors.extend(_connector_errors(connector, c_path))
        for t_index, tool in _dicts(connector.get("remoteTools")):
            t_path = f"{c_path}.remoteTools[{t_index}]"
            unique("tool name", tool.get("name"), f"{t_path}.name")
            for a_index, alias in _strings(tool.get("aliases")):
                unique("alias", alias, f"{t_path}.aliases[{a_index}]")
            errors.extend(_tool_errors(tool, t_path))
    for (kind, value), path in first_seen.items():
        if kind == "alias" and ("tool name", value) in first_seen:
            canonical_at = first_seen[("tool name", value)]
            errors.append(
                ManifestError(path, f"Alias {value!r} is also a canonical tool name (at {canonical_at}).")
            )
    return errors


def _connector_errors(connector: dict[str, Any], path: str) -> list[ManifestError]:
    errors = []
    endpoint = connector.get("endpoint")
    refusal = url_refusal(endpoint) if isinstance(endpoint, str) and endpoint else None
    if refusal:
        errors.append(ManifestError(f"{path}.endpoint", f"Endpoint refused: {refusal}"))
    endpoint_env = connector.get("endpointEnv", "")
    endpoint_env_problem = endpoint_env_refusal(endpoint_env) if isinstance(endpoint_env, str) else None
    if endpoint_env_problem:
        errors.append(ManifestError(f"{path}.endpointEnv", endpoint_env_problem))
    auth = connector.get("auth")
    if isinstance(auth, dict) and auth.get("type") in ("none", "bearer", "api_key"):
        secret = auth.get("secretEnv", "")
        secret_env = env_name_refusal(secret, endpoint=False) if isinstance(secret, str) else None
        if secret_env:
            errors.append(ManifestError(f"{path}.auth.secretEnv", secret_env))
        if auth["type"] != "none" and "secretEnv" not in auth:
            errors.append(
                ManifestError(
                    f"{path}.auth",
                    f"Auth {auth['type']!r} needs 'secretEnv', the variable holding the secret.",
                )
            )
        if auth["type"] == "api_key" and "header" not in auth:
            errors.append(
                ManifestError(
                    f"{path}.auth", "Auth 'api_key' needs 'header', the header that carries the key."
                )
            )
    for index, pattern in _dicts(connector.get("textErrorPatterns")):
        if not isinstance(pattern.get("pattern"), str):
            continue
        try:
            re.compile(pattern["pattern"])
        except re.error as exc:
            errors.append(
                ManifestError(
                    f"{path}.textErrorPatterns[{index}].pattern", f"Not a valid regular expression: {exc}."
                )
            )
    return errors


def _tool_errors(tool: dict[str, Any], path: str) -> list[ManifestError]:
    if not isinstance(tool.get("inputSchema"), dict):
        return []  # absent, or not an object: the schema says so
    try:
        Draft202012Validator.check_schema(tool["inputSchema"])
    except SchemaError as exc:
        return [ManifestError(f"{path}.inputSchema", f"Not a valid JSON Schema: {exc.message}")]
    return [
        ManifestError(
            ref_path,
            f"{ref!r} is a reference outside the schema, which CortexWeb never fetches; "
            "use references inside the document ('#/$defs/…') instead.",
        )
        for ref_path, ref in remote_refs(tool["inputSchema"], f"{path}.inputSchema")
    ]


# --- Preview: what an import changes, field by field ---------------------------------------

NOT_SET = "—"  # how a field absent from one side is shown in the preview


@dataclass(frozen=True)
class FieldChange:
    """One field of a connector or tool: its value in the registry now and in the manifest, as the
    manifest writes them (compact JSON; NOT_SET when absent)."""

    field: str
    old: str
    new: str


@dataclass(frozen=True)
class EntryChange:
    """A connector or tool the import creates, updates (``fields`` changed) or deletes; a deleted
    connector names the tools deleted with it."""

    name: str
    action: str  # "created" | "updated" | "deleted"
    fields: tuple[FieldChange, ...] = ()
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class ManifestDiff:
    connectors: tuple[EntryChange, ...]
    tools: tuple[EntryChange, ...]

    @property
    def connectors_deleted(self) -> tuple[EntryChange, ...]:
        return tuple(change for change in self.connectors if change.action == "deleted")

    @property
    def tools_deleted_alone(self) -> tuple[EntryChange, ...]:
        """Tools deleted from connectors that stay (a deleted connector lists its own)."""
        with_connectors = {name for change in self.connectors_deleted for name in change.tools}
        return tuple(
            change
            for change in self.tools
            if change.action == "deleted" and change.name not in with_connectors
        )


def _shown(entry: dict[str, Any], key: str) -> str:
    if key not in entry:
        return NOT_SET
    return json.dumps(entry[key], ensure_ascii=False, sort_keys=isinstance(entry[key], dict))


def _field_changes(
    old: dict[str, Any], new: dict[str, Any], keys: tuple[str, ...]
) -> tuple[FieldChange, ...]:
    return tuple(
        FieldChange(key, _shown(old, key), _shown(new, key)) for key in keys if old.get(key) != new.get(key)
    )


def manifest_diff(current: dict[str, Any], manifest: dict[str, Any]) -> ManifestDiff:
    """What importing ``manifest`` (validated) into a registry exported as ``current`` changes: each
    connector and tool created, deleted, or updated with every changed field's old and new value."""
    old_connectors = {entry["id"]: entry for entry in current["connectors"]}
    old_tools = {
        tool["name"]: (entry["id"], tool)
        for entry in current["connectors"]
        for tool in entry.get("remoteTools", [])
    }
    connector_keys = tuple(key for key in CONNECTOR_KEYS if key != "remoteTools")
    connectors: list[EntryChange] = []
    tools: list[EntryChange] = []
    listed_tools: set[str] = set()
    for entry in manifest["connectors"]:
        old = old_connectors.get(entry["id"])
        if old is None:
            connectors.append(EntryChange(entry["id"], "created"))
        elif fields := _field_changes(old, entry, connector_keys):
            connectors.append(EntryChange(entry["id"], "updated", fields))
        for tool in entry.get("remoteTools", []):
            listed_tools.add(tool["name"])
            if tool["name"] not in old_tools:
                tools.append(EntryChange(tool["name"], "created"))
                continue
            old_connector, old_tool = old_tools[tool["name"]]
            fields = _field_changes(old_tool, tool, TOOL_KEYS)
            if old_connector != entry["id"]:
                fields = (FieldChange("connector", old_connector, entry["id"]), *fields)
            if fields:
                tools.append(EntryChange(tool["name"], "updated", fields))
    listed = {entry["id"] for entry in manifest["connectors"]}
    for slug, old in old_connectors.items():
        if slug not in listed:
            gone = tuple(
                tool["name"] for tool in old.get("remoteTools", []) if tool["name"] not in listed_tools
            )
            connectors.append(EntryChange(slug, "deleted", tools=gone))
    tools.extend(EntryChange(name, "deleted") for name in old_tools if name not in listed_tools)
    return ManifestDiff(tuple(connectors), tuple(tools))


CONNECTOR_REQUIRED = frozenset(
    {"id", "name", "version", "transport", "endpoint", "auth", "scopes", "ttlSeconds", "enabled"}
)
TOOL_REQUIRED = frozenset({"name"})


def ordered(entry: dict[str, Any], keys: tuple[str, ...], required: frozenset[str]) -> dict[str, Any]:
    """``entry`` with keys in the manifest's order and empty optional values dropped."""
    return {
        key: entry[key]
        for key in keys
        if key in entry and (key in required or entry[key] not in (None, "", [], {}))
    }


def dumps(data: dict[str, Any]) -> str:
    """The manifest's one text form: two-space indent, UTF-8 characters kept, final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
