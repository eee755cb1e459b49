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
    """Every schema and consistency error, in document order; empty when the manifest is good."""
    validator = manifest_validator()
    if not validator.is_valid(data):
        errors = [
            ManifestError(_json_path(error.instance_path), _schema_message(error))
            for error in validator.iter_errors(data)
        ]
        return sorted(errors, key=lambda error: _path_key(error.path))
    return _consistency_errors(data["connectors"])  # these assume the shape is right


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


def _consistency_errors(connectors: list[dict[str, Any]]) -> list[ManifestError]:
    errors: list[ManifestError] = []
    first_seen: dict[tuple[str, str], str] = {}  # (kind, value) -> JSON path of its first use

    def unique(kind: str, value: str, path: str) -> None:
        first = first_seen.setdefault((kind, value), path)
        if first != path:
            errors.append(ManifestError(path, f"Duplicate {kind} {value!r} (first at {first})."))

    for c_index, connector in enumerate(connectors):
        c_path = f"$.connectors[{c_index}]"
        unique("connector id", connector["id"], f"{c_path}.id")
        errors.extend(_connector_errors(connector, c_path))
        for t_index, tool in enumerate(connector.get("remoteTools", [])):
            t_path = f"{c_path}.remoteTools[{t_index}]"
            unique("tool name", tool["name"], f"{t_path}.name")
            for a_index, alias in enumerate(tool.get("aliases", [])):
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
    refusal = url_refusal(connector["endpoint"])
    if refusal:
        errors.append(ManifestError(f"{path}.endpoint", f"Endpoint refused: {refusal}"))
    endpoint_env = endpoint_env_refusal(connector.get("endpointEnv", ""))
    if endpoint_env:
        errors.append(ManifestError(f"{path}.endpointEnv", endpoint_env))
    auth = connector["auth"]
    secret_env = env_name_refusal(auth.get("secretEnv", ""), endpoint=False)
    if secret_env:
        errors.append(ManifestError(f"{path}.auth.secretEnv", secret_env))
    if auth["type"] != "none" and "secretEnv" not in auth:
        errors.append(
            ManifestError(
                f"{path}.auth", f"Auth {auth['type']!r} needs 'secretEnv', the variable holding the secret."
            )
        )
    if auth["type"] == "api_key" and "header" not in auth:
        errors.append(
            ManifestError(f"{path}.auth", "Auth 'api_key' needs 'header', the header that carries the key.")
        )
    for index, pattern in enumerate(connector.get("textErrorPatterns", [])):
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
    if "inputSchema" not in tool:
        return []
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
