"""Every own MCP tool, each argument in turn replaced by what a hostile client sends — a NUL byte,
a lone surrogate, a huge number, the wrong type — is refused as an ``isError`` result naming the
problem, never an internal error (the issue's input sweep, MCP side; the HTTP side is
tests/core/test_edge_input.py and tests/test_openapi_contract.py)."""

from __future__ import annotations

from typing import Any

import pytest

from apps.core.models import TokenScope
from apps.mcp_server.services import Caller, mcp_tool_call
from apps.mcp_server.tools import CORTEX_TOOLS

pytestmark = pytest.mark.django_db

HOSTILE: dict[str, Any] = {
    "nul": "a\x00b",
    "surrogate": "a\ud800b",
    "huge": 10**40,
    "negative": -(10**40),
    "list": [["nested"]],
    "object": {"x": {"y": None}},
    "bool": True,
}


def _cases() -> list[tuple[str, str, str]]:
    cases = []
    for tool in CORTEX_TOOLS:
        properties = tool.input_schema().get("properties", {})
        for argument in properties or {"(any)": {}}:
            cases += [(tool.name, argument, kind) for kind in HOSTILE]
    return cases


PLAIN = {"string": "test", "integer": 1, "number": 1, "boolean": False, "array": ["test"], "object": {}}


def _plausible(tool_name: str) -> dict[str, Any]:
    """Arguments of the right types for the tool's required fields, so that the hostile one is what
    the tool has to deal with (not merely a missing field)."""
    schema = next(tool for tool in CORTEX_TOOLS if tool.name == tool_name).input_schema()
    properties = schema.get("properties", {})
    arguments = {name: PLAIN.get(properties[name].get("type"), "test") for name in schema.get("required", [])}
    if "waitSeconds" in properties:
        arguments["waitSeconds"] = 0  # an accepted run answers at once (no worker here)
    return arguments


@pytest.mark.parametrize(("tool", "argument", "kind"), _cases())
def test_hostile_arguments_never_reach_an_internal_error(make_token, settings, tool, argument, kind) -> None:
    settings.ARXIV_WAIT_SECONDS = 0  # a search that is accepted answers at once (no worker here)
    token, _ = make_token(TokenScope.ADMIN)
    arguments = {**_plausible(tool), argument: HOSTILE[kind]}
    outcome = mcp_tool_call(name=tool, arguments=arguments, caller=Caller(transport="mcp-http", token=token))
    assert not outcome.text.startswith("internal_error"), outcome.text
    if kind in ("nul", "surrogate"):
        assert outcome.is_error is True
        assert outcome.text.startswith("validation_error"), outcome.text
