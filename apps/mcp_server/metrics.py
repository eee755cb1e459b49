"""Prometheus metrics of the MCP server (summed across processes like every CortexWeb metric)."""

from prometheus_client import Counter, Histogram

mcp_tool_calls_total = Counter(
    "mcp_tool_calls_total",
    "MCP tools/call requests by tool and outcome (ok, or the error code the caller got).",
    ["tool", "outcome"],
)
mcp_tool_duration_seconds = Histogram(
    "mcp_tool_duration_seconds", "Time to answer an MCP tools/call, by tool.", ["tool"]
)
