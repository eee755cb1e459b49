"""Native adapters: tools CortexWeb answers itself (over httpx) instead of an MCP server.

An app registers a callable for a canonical tool name::

    @register_adapter("arxiv.search", input_model=SearchIn)
    def arxiv_search(tool: RemoteTool, arguments: dict) -> dict: ...

and the gateway dispatches calls of that tool to it. Adapters raise
``ApplicationError``s (``UpstreamError`` for upstream failures) like any service.
``input_model`` is the pydantic model the adapter validates its arguments with (the
same one its REST endpoint takes): its JSON Schema is the tool's published input
schema, so the catalogue cannot drift from what the adapter accepts.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from apps.connectors.models import RemoteTool
from apps.core.errors import ApplicationError

Adapter = Callable[[RemoteTool, dict[str, Any]], dict[str, Any]]

_adapters: dict[str, Adapter] = {}
_input_models: dict[str, type[BaseModel]] = {}


class NotImplementedYet(ApplicationError):
    """A declared tool that nothing in this deployment can answer yet."""

    status_code = 501
    code = "not_implemented"


def register_adapter(
    tool_name: str, *, input_model: type[BaseModel] | None = None
) -> Callable[[Adapter], Adapter]:
    """Decorator: answer calls of the canonical ``tool_name`` with the decorated callable.

    ``input_model``: the model the adapter validates its arguments with, when it has one.
    """

    def decorator(adapter: Adapter) -> Adapter:
        existing = _adapters.get(tool_name)
        if existing is not None and existing is not adapter:
            raise ValueError(
                f"Tool '{tool_name}' already has an adapter: {existing.__module__}.{existing.__name__}"
            )
        _adapters[tool_name] = adapter
        if input_model is not None:
            _input_models[tool_name] = input_model
        return adapter

    return decorator


def unregister_adapter(tool_name: str) -> None:
    """Forget a tool's adapter (tests, reloads)."""
    _adapters.pop(tool_name, None)
    _input_models.pop(tool_name, None)


def adapter_input_schema(tool_name: str) -> dict[str, Any] | None:
    """The JSON Schema of the arguments the tool's adapter validates with, if it declares a model."""
    model = _input_models.get(tool_name)
    return copy.deepcopy(_model_schema(model)) if model is not None else None


@functools.cache
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def adapter_for(tool_name: str) -> Adapter | None:
    return _adapters.get(tool_name)


def adapter_input_model(tool_name: str) -> type[BaseModel] | None:
    """The model the tool's adapter was registered with (to register it again as it was)."""
    return _input_models.get(tool_name)


def adapter_get(tool_name: str) -> Adapter:
    """The tool's adapter, or a 501 naming the tool."""
    adapter = _adapters.get(tool_name)
    if adapter is None:
        raise NotImplementedYet(
            f"Tool '{tool_name}' is served by a native adapter, and none is registered for it in this "
            "deployment.",
            details={"tool": tool_name},
        )
    return adapter


def adapter_names() -> list[str]:
    return sorted(_adapters)


# --- Call shapes -----------------------------------------------------------------------


@dataclass(frozen=True)
class CallsShaped:
    """What one call of a tool becomes: ``calls`` (key, arguments) dispatched one by one in order, each
    with arguments in the upstream's own shape. ``merged``: the answer lists every call's result under
    its key (a list was asked for); otherwise there is exactly one call and its result is the answer."""

    calls: list[tuple[str, dict[str, Any]]]
    key: str
    merged: bool


# Reads a call's arguments; ``None`` when they are already the upstream's shape, else the calls to make.
# Raises ``ValidationFailed`` naming the field when the shape is wrong.
ArgumentShaper = Callable[[dict[str, Any]], CallsShaped | None]

# The tool's published input schema (the upstream's, say) → the same schema also describing the shape.
SchemaWidener = Callable[[dict[str, Any]], dict[str, Any]]

_shapers: dict[str, ArgumentShaper] = {}
_schema_wideners: dict[str, SchemaWidener] = {}


def register_argument_shape(
    tool_name: str, *, published_schema: SchemaWidener | None = None
) -> Callable[[ArgumentShaper], ArgumentShaper]:
    """Decorator: accept another call shape for ``tool_name`` than its upstream's (seed 000 calls
    ``wikidata.get_claims`` with ``{qids: [...]}`` where the upstream takes one ``entity_id``). The
    gateway applies it on every transport, before the upstream's input schema is checked.
    ``published_schema`` adds the shape to the schema ``/v1/tools`` and MCP ``tools/list`` show, so
    agents can find it."""

    def decorator(shaper: ArgumentShaper) -> ArgumentShaper:
        _shapers[tool_name] = shaper
        if published_schema is not None:
            _schema_wideners[tool_name] = published_schema
        return shaper

    return decorator


def arguments_shaped(tool_name: str, arguments: dict[str, Any]) -> CallsShaped | None:
    shaper = _shapers.get(tool_name)
    return shaper(arguments) if shaper is not None else None


def shaped_input_schema(tool_name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` widened by the tool's registered call shape, if it has one (a copy; never in place)."""
    widener = _schema_wideners.get(tool_name)
    return widener(copy.deepcopy(schema)) if widener is not None else schema
