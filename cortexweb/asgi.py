"""ASGI entry point (uvicorn).

Later capabilities mount the MCP server at ``/mcp`` here, beside Django: it
cannot live in Django's URLconf because Django's ASGI handler rejects lifespan
events.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cortexweb.settings")

application = get_asgi_application()
