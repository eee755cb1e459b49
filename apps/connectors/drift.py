"""What changed in an upstream tool between two syncs, in words an operator can approve or not.

A tool's description is read by the agent as instructions, and its input schema says what the agent
may send: a change to either can turn a trusted tool into a different one (the MCP "rug pull"). The
sync holds such a change as pending (see ``gateway.connector_sync``); these functions name it.
"""

from __future__ import annotations

from typing import Any


def _properties(schema: Any) -> dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return properties if isinstance(properties, dict) else {}


def _required(schema: Any) -> set[str]:
    required = schema.get("required") if isinstance(schema, dict) else None
    return {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()


def schema_widening(old: Any, new: Any) -> list[str]:
    """How ``new`` lets a caller send more than ``old`` did (empty: not wider, at the top level).

    Only the top level is compared (properties, required, additionalProperties, each property's
    type): enough to flag the common widenings; every change is held for approval regardless.
    """
    if not isinstance(new, dict):
        return []
    if not isinstance(old, dict):
        return ["the tool now takes arguments described by a schema it did not have"]
    widened = []
    old_properties, new_properties = _properties(old), _properties(new)
    added = sorted(set(new_properties) - set(old_properties))
    if added:
        widened.append(f"new arguments: {', '.join(added)}")
    relaxed = sorted(_required(old) - _required(new))
    if relaxed:
        widened.append(f"no longer required: {', '.join(relaxed)}")
    if old.get("additionalProperties") is False and new.get("additionalProperties") is not False:
        widened.append("other arguments are now allowed (additionalProperties)")
    retyped = sorted(
        name
        for name in set(old_properties) & set(new_properties)
        if isinstance(old_properties[name], dict)
        and isinstance(new_properties[name], dict)
        and old_properties[name].get("type") != new_properties[name].get("type")
    )
    if retyped:
        widened.append(f"argument types changed: {', '.join(retyped)}")
    return widened


def upstream_changes(
    *, old_description: str, new_description: str, old_schema: Any, new_schema: Any
) -> list[str]:
    """Every change between the approved and the upstream's current description and schema, in words."""
    changes = []
    if old_description != new_description:
        changes.append("description changed")
    if old_schema != new_schema:
        widened = schema_widening(old_schema, new_schema)
        changes.append("input schema widened: " + "; ".join(widened) if widened else "input schema changed")
    return changes
