"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``) against ``/mcp``.

Version 0.1.13 is the last that runs on Node 20 (the machines' Node). It is installed with npm into
the test data directory on first use. The scenarios are run one by one against the live server.

Out of scope, because they need the suite's own sample tools, resources or prompts
(``test_simple_text``, ``test_image_content`` …), which a real server does not have:
tools-call-image, tools-call-audio, tools-call-embedded-resource, tools-call-mixed-content,
tools-call-with-logging, tools-call-with-progress, tools-call-sampling, tools-call-elicitation,
elicitation-sep1034-defaults, elicitation-sep1330-enums, json-schema-2020-12, completion-complete,
resources-read-text, resources-read-binary, resources-templates-read, resources-subscribe,
resources-unsubscribe, prompts-get-simple, prompts-get-with-args, prompts-get-embedded-resource,
prompts-get-with-image, server-sse-polling. ``tools-call-simple-text`` and ``tools-call-error`` also
call sample tools; they are run to show that they reach this server's unknown-tool path (a JSON-RPC
-32602 error, not a 401 or a 500).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = "@modelcontextprotocol/conformance@0.1.13"
PASSING = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
]
UNKNOWN_TOOL = {"tools-call-simple-text": "test_simple_text", "tools-call-error": "test_error_handling"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def conformance() -> Path:
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("the MCP conformance suite needs Node.js and npm (apt-get install nodejs npm)")
    prefix = Path(settings.CORTEX_DATA_DIR) / "npm"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not entry.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--silent", SUITE],
            check=True,
            timeout=300,
        )
    return entry


def _run(conformance: Path, url: str, scenario: str) -> str:
    done = subprocess.run(
        ["node", str(conformance), "server", "--url", url, "--scenario", scenario],
        check=False,  # a failed scenario exits non-zero; its output says which check failed
        capture_output=True,
        text=True,
        timeout=120,
    )
    return ANSI.sub("", done.stdout + done.stderr)


@pytest.mark.parametrize("scenario", PASSING)
def test_scenario_passes(conformance, cortex_server, registry, scenario: str) -> None:
    output = _run(conformance, cortex_server.mcp_url, scenario)
    summary = re.search(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", output)
    assert summary, output
    passed, total, failed, warnings = map(int, summary.groups())
    assert (passed, failed, warnings) == (total, 0, 0) and total >= 1, output


def test_multiple_sse_streams_only_warn_because_the_server_is_stateless(conformance, cortex_server, registry):
    output = _run(conformance, cortex_server.mcp_url, "server-sse-multiple-streams")
    assert "Passed: 0/0, 0 failed, 1 warnings" in output, output
    assert "WARNING Server provides session ID for multiple streams test" in output, output


@pytest.mark.parametrize(("scenario", "tool"), UNKNOWN_TOOL.items())
def test_sample_tool_scenarios_reach_the_unknown_tool_path(
    conformance, cortex_server, registry, scenario, tool
):
    output = _run(conformance, cortex_server.mcp_url, scenario)
    assert f"MCP error -32602: Unknown tool: {tool}." in output, output
