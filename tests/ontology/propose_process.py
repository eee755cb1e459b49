"""A separate OS process acting as one agent host: it proposes to ``POST /ontology-agent/propose``
over and over with the shared token. Imported by spawned children, so nothing Django is imported
before the environment is set."""

from __future__ import annotations

import os
import time
from typing import Any


def propose_repeatedly(env: dict[str, str], token: str, count: int, ready: Any, start: Any) -> None:
    """Propose ``count`` times once ``start`` is set; put ``(pid, [status, …], seconds)`` on ``ready``
    (first a ``("ready", pid)`` once the graph is built, so every process proposes at the same time)."""
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "cortexweb.settings"
    import django

    django.setup()
    from django.test import Client

    from apps.ontology.graph import ontology_graph

    ontology_graph()
    client = Client(headers={"Authorization": f"Bearer {token}"})
    # The first request of a process imports and builds the API's views: not part of the race.
    client.post("/ontology-agent/query", {"sparql": "ASK {}"}, content_type="application/json")
    ready.put(("ready", os.getpid()))
    start.wait(timeout=120)
    statuses = []
    began = time.monotonic()
    for number in range(count):
        body = {
            "proposal": {
                "action": "amend",
                "target_iri": "https://cortexweb.dev/ontology#CWE89SqlInjection",
                "amendment": {"add_alt_terms": [f"SQLi variant {os.getpid()}-{number}"]},
            },
            "agentContext": {"agent_type": "racer"},
        }
        response = client.post("/ontology-agent/propose", body, content_type="application/json")
        statuses.append(response.status_code)
    ready.put((os.getpid(), statuses, time.monotonic() - began))
