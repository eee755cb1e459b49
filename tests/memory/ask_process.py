"""A separate OS process acting as one agent host: it asks ``POST /v1/memory/ask`` the same question
over and over. Imported by spawned children, so nothing Django is imported before the environment
is set."""

from __future__ import annotations

import os
import time
from typing import Any


def ask_repeatedly(env: dict[str, str], token: str, questions: list[str], ready: Any, start: Any) -> None:
    """Ask each of ``questions`` in turn once ``start`` is set; put ``(pid, [(status, first id)],
    (first ask started, last ask ended))`` on ``ready`` (first a ``("ready", pid)`` when set up, so
    every process starts asking together)."""
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "cortexweb.settings"
    import django

    django.setup()
    from django.test import Client

    from apps.embeddings.services import embed_text

    embed_text(text="load the model before the race starts")
    client = Client(headers={"Authorization": f"Bearer {token}"})
    ready.put(("ready", os.getpid()))
    start.wait(timeout=120)
    answers = []
    began = time.time()
    for question in questions:
        response = client.post("/v1/memory/ask", {"question": question}, content_type="application/json")
        memories = response.json().get("memories") or [{}]
        answers.append((response.status_code, memories[0].get("id")))
    ready.put((os.getpid(), answers, (began, time.time())))
