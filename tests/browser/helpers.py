"""What the browser tests share: the viewport, where screenshots go, signing in, and axe-core."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

WIDTH, HEIGHT = 1280, 900
SERIOUS = ("serious", "critical")


def screenshot_dir() -> Path:
    directory = Path(
        os.environ.get("CORTEX_SCREENSHOT_DIR") or Path(settings.BASE_DIR) / ".cortex" / "screenshots"
    )
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def log_in(live_server, page, *, username: str, next_path: str = "/admin/") -> None:
    """A new superuser ``username`` signs in through the admin's login form and lands on ``next_path``."""
    password = f"{username}-password"
    get_user_model().objects.create_superuser(username, password=password)
    query = "" if next_path == "/admin/" else f"?next={next_path}"
    page.goto(f"{live_server.url}/admin/login/{query}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}{next_path}")


def axe_violations(page, *, impacts: tuple[str, ...] | None = None, preload: bool = True) -> list[str]:
    """axe-core's violations on the page (only those of ``impacts`` when given), each as the page, the
    rule, its impact and help, and the nodes it hit. ``preload=False`` skips axe's fetch of the page's
    stylesheets, whose inline copies the CSP refuses (console errors of axe's, not of the page)."""
    axe = pytest.importorskip(
        "axe_playwright_python.sync_playwright",
        reason="axe checks need axe-playwright-python (requirements/dev.txt)",
    )
    return [
        f"{page.url} {violation['id']} ({violation['impact']}): {violation['help']} "
        f"at {[node['target'] for node in violation['nodes']]}"
        for violation in axe.Axe()
        .run(page, options={"resultTypes": ["violations"], "preload": preload})
        .response["violations"]
        if impacts is None or violation.get("impact") in impacts
    ]
