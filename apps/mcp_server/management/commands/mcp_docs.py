"""``manage.py mcp_docs [--check]``: regenerate the tool list of ``docs/mcp.md`` from the MCP server.

The section between the markers comes from ``apps.mcp_server.docs``; the prose around it is left as
written. ``--check`` writes nothing and fails when the page is out of date (for CI and reviews).
"""

from pathlib import Path

from django.conf import settings

from apps.core.generated_docs import GeneratedDocsCommand
from apps.mcp_server.docs import mcp_docs_render


class Command(GeneratedDocsCommand):
    help = "Write the generated tool, resource and prompt list of docs/mcp.md (--check: only compare)."
    page = Path(settings.BASE_DIR) / "docs" / "mcp.md"
    source = "the MCP server's tools"
    render = staticmethod(mcp_docs_render)
