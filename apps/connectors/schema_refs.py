"""Tool input schemas never make CortexWeb fetch anything.

A JSON Schema ``$ref`` may name any URI, and a validator that meets one it does not know
retrieves it (jsonschema's default registry opens it with ``urllib``): a tool schema written by
an operator, a manifest or an upstream MCP server could make the server request any URL. So:

* a schema is refused when it is saved or synced if any ``$ref``/``$dynamicRef`` in it points
  outside the document — only ``#`` references (``#/$defs/x``, ``#anchor``) are accepted;
* arguments are validated with :data:`LOCAL_REGISTRY`, whose retrieval refuses every URI, so
  even a schema stored before this rule cannot make a validation fetch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource

REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose values are data (or names), not schemas: a "$ref" key inside them is not a reference.
DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples", "required", "$comment", "description"})
# Keywords whose values map names to schemas: the names are not keywords.
NAMED_SCHEMA_KEYWORDS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)


def _json_path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if key.replace("_", "a").replace("$", "a").isalnum() else f"{parent}[{key!r}]"


def _walk(node: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, _json_path(path, index))
        return
    if not isinstance(node, dict):
        return
    for keyword in REFERENCE_KEYWORDS:
        value = node.get(keyword)
        if isinstance(value, str) and not value.startswith("#"):
            yield _json_path(path, keyword), value
    for key, value in node.items():
        if key in DATA_KEYWORDS or key in REFERENCE_KEYWORDS:
            continue
        if key in NAMED_SCHEMA_KEYWORDS and isinstance(value, dict):
            for name, subschema in value.items():
                yield from _walk(subschema, _json_path(_json_path(path, key), name))
        else:
            yield from _walk(value, _json_path(path, key))


def remote_refs(schema: Any, path: str = "$") -> list[tuple[str, str]]:
    """``(JSON path, reference)`` of every reference in ``schema`` that points outside it."""
    return list(_walk(schema, path))


def schema_refusal(schema: Any) -> str | None:
    """Why ``schema`` cannot be stored (its first remote reference, named with its path), or ``None``."""
    found = remote_refs(schema)
    if not found:
        return None
    path, ref = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (
        f"{path} is {ref!r}{more}: a reference outside the schema, which CortexWeb never fetches; "
        "use references inside the document ('#/$defs/…') instead."
    )


def _refuse(uri: str) -> Resource[Any]:
    # NoSuchResource makes the lookup fail as "unresolvable" rather than with a network error.
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs class: mypy misses its __init__


LOCAL_REGISTRY: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]  # as above
