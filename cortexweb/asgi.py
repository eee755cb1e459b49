"""ASGI entry point (uvicorn).

Later capabilities mount the MCP server at ``/mcp`` here, beside Django: it
cannot live in Django's URLconf because Django's ASGI handler rejects lifespan
events.
"""

import os
import warnings

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cortexweb.settings")

# WhiteNoise serves the admin's static files as a synchronous iterator; under ASGI
# Django buffers it and warns on every file. The files are small: the warning is noise.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous iterators")

application = get_asgi_application()
