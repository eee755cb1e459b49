"""ASGI entry point (uvicorn).

Later capabilities mount the MCP server at ``/mcp`` here, beside Django: it
cannot live in Django's URLconf because Django's ASGI handler rejects lifespan
events.
"""

import gc
import os
import warnings

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cortexweb.settings")

# WhiteNoise serves the admin's static files as a synchronous iterator; under ASGI
# Django buffers it and warns on every file. The files are small: the warning is noise.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous iterators")

application = get_asgi_application()

# Everything loaded so far (Django, the apps, their modules) lives as long as the process. Moving
# it out of the collector's reach keeps full collections short: measured on a 100-connector
# service map build, p95 59 ms -> 27 ms (bench/connectors.py, which runs in this same state).
gc.freeze()
