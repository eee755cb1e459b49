"""A separate OS process acting as one CortexWeb host: its own Celery worker on the ``arxiv`` queue
and an agent sending searches through the API. Imported by spawned children, so nothing
Django is imported before the environment is set."""

from __future__ import annotations

import os
from typing import Any


def run_host(env: dict[str, str], token: str, queries: list[str], results: Any) -> None:
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "cortexweb.settings"
    import django

    django.setup()
    from celery.contrib.testing.worker import start_worker
    from django.test import Client

    from cortexweb.celery import app

    with start_worker(
        app, pool="threads", concurrency=1, queues=["arxiv"], perform_ping_check=False, loglevel="WARNING"
    ):
        client = Client(headers={"Authorization": f"Bearer {token}"})
        for query in queries:
            response = client.post("/v1/arxiv/search", {"query": query}, content_type="application/json")
            body = response.json() if response["Content-Type"].startswith("application/json") else {}
            results.put((os.getpid(), query, response.status_code, body.get("status", body.get("error"))))
