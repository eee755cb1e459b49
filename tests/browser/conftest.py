"""A real Chromium driven by Playwright against pytest-django's live server.

Chromium comes from the machine (`.ci/run` installs Debian's `chromium`); without it these
tests skip, saying why. Playwright's sync API runs an event loop in the test thread, which
Django's async-safety check would mistake for async code touching the database: tests set up
their data first, and only the live server's thread uses the database while the browser runs.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.browser.helpers import HEIGHT, WIDTH, log_in

CHROMIUM = next((path for path in map(shutil.which, ("chromium", "chromium-browser")) if path), None)


@pytest.fixture
def page() -> Iterator[object]:
    if CHROMIUM is None:
        pytest.skip("browser tests need Chromium: apt-get install -y chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # see the module docstring
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            context = browser.new_context()
            yield context.new_page()
            context.close()
            browser.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def signed_in(live_server, page):
    """``page`` at the usual viewport, signed in as a new superuser."""
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    log_in(live_server, page, username="browser-admin")
    return page
