"""Prometheus metrics of the tool gateway (multiprocess: see apps.core.metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

tool_calls_total = Counter(
    "cortex_tool_calls_total", "Tool calls dispatched by the gateway.", ["connector", "tool", "status"]
)
tool_call_duration_seconds = Histogram(
    "cortex_tool_call_duration_seconds", "Time a gateway tool call took, end to end.", ["connector", "tool"]
)
# The seed's name for the Wikidata MCP connector's calls, kept next to the general counter.
wikidata_tool_calls_total = Counter(
    "wikidata_tool_calls_total", "Calls of Wikidata MCP tools, by canonical tool name.", ["tool"]
)
