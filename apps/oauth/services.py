"""OAuth 2.1 for ``/mcp`` as the MCP authorization specification has it: CortexWeb is the protected
resource (RFC 9728 metadata, the ``WWW-Authenticate`` challenge that points to it).

A resource is named by an absolute URL on the server's own origin: ``<origin>/mcp`` for the MCP
endpoint (the path-suffixed metadata document), ``<origin>`` for the server as a whole (the root
document). The origin comes from the request, as Django builds absolute URLs (``Host``, checked
against ``ALLOWED_HOSTS``, and ``SECURE_PROXY_SSL_HEADER`` behind a TLS proxy), so the metadata
names the URL the client actually reached.
"""

from __future__ import annotations

from typing import Any

from apps.core.models import TokenScope

# What an OAuth client may ask for. Never ``admin`` (operators create admin tokens by hand) and not
# ``propose`` (the ontology agent's own scope): the scopes an MCP host's user can sensibly grant.
OAUTH_SCOPES: tuple[str, ...] = (TokenScope.READ, TokenScope.WRITE, TokenScope.UPSTREAM, TokenScope.VERIFY)

PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"


def resource_metadata_url(origin: str, resource_path: str = MCP_PATH) -> str:
    """Where the metadata of the resource at ``origin + resource_path`` is (RFC 9728 §3.1: the
    well-known path inserted between the origin and the resource's path)."""
    return f"{origin}{PROTECTED_RESOURCE_METADATA_PATH}{resource_path}"


def protected_resource_metadata(origin: str, resource_path: str = "") -> dict[str, Any]:
    """The RFC 9728 document of the resource ``origin + resource_path``. The authorization server
    is this same Django project, so its issuer is the origin."""
    return {
        "resource": f"{origin}{resource_path}",
        "authorization_servers": [origin],
        "scopes_supported": [str(scope) for scope in OAUTH_SCOPES],
        "bearer_methods_supported": ["header"],
        "resource_name": "CortexWeb MCP" if resource_path == MCP_PATH else "CortexWeb",
    }
