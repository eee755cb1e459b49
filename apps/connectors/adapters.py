"""Native adapters: tools CortexWeb answers itself (over httpx) instead of an MCP server.

An app registers a callable for a canonical tool name::

    @register_adapter("arxiv.search")
    def arxiv_search(tool: RemoteTool, arguments: dict) -> dict: ...

and the gateway dispatches calls of that tool to it. Adapters raise
``ApplicationError``s (``UpstreamError`` for upstream failures) like any service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apps.connectors.models import RemoteTool
from apps.core.errors import ApplicationError

Adapter = Callable[[RemoteTool, dict[str, Any]], dict[str, Any]]

_adapters: dict[str, Adapter] = {}


class NotImplementedYet(ApplicationError):
    """A declared tool that nothing in this deployment can answer yet."""

    status_code = 501
    code = "not_implemented"


def register_adapter(tool_name: str) -> Callable[[Adapter], Adapter]:
    """Decorator: answer calls of the canonical ``tool_name`` with the decorated callable."""

    def decorator(adapter: Adapter) -> Adapter:
        existing = _adapters.get(tool_name)
        if existing is not None and existing is not adapter:
            raise ValueError(
                f"Tool '{tool_name}' already has an adapter: {existing.__module__}.{existing.__name__}"
            )
        _adapters[tool_name] = adapter
        return adapter

    return decorator


def unregister_adapter(tool_name: str) -> None:
    """Forget a tool's adapter (tests, reloads)."""
    _adapters.pop(tool_name, None)


def adapter_for(tool_name: str) -> Adapter | None:
    return _adapters.get(tool_name)


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
