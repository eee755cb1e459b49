"""The OAuth sign-in and consent pages in Chromium at 1280 and 390 px, reached as an MCP host sends a
person there: the host registers itself at /oauth/register/ and opens the authorization URL with a
PKCE S256 challenge and this server's resource; the person signs in, sees the consent page naming
the client, its redirect URI and the scopes asked, narrows them and allows; the browser lands on the
host's loopback redirect URI with a code. No console error (CSP included), no serious axe
violation, no horizontal scroll. The screenshots are the ones in docs/images/oauth-*.png (written
to ``CORTEX_SCREENSHOT_DIR``: run with ``CORTEX_SCREENSHOT_DIR=docs/images`` to refresh them)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model

from apps.oauth import services
from tests.browser.helpers import HEIGHT, SERIOUS, WIDTH, axe_violations, screenshot_dir
from tests.oauth.flow import PASSWORD, pkce, query_of

pytestmark = pytest.mark.django_db(transaction=True)

REDIRECT = "http://127.0.0.1:33418/callback"
NARROW = {"width": 390, "height": 844}
WIDER_THAN_THE_SCREEN = """[...document.querySelectorAll('main *')]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .map(e => e.tagName + '.' + e.className)"""


def _register(page, live_server, client_name: str) -> str:
    """What a host does first (RFC 7591): register a public client with its loopback redirect URI."""
    response = page.request.post(
        f"{live_server.url}/oauth/register/",
        data={"client_name": client_name, "redirect_uris": [REDIRECT], "scope": "read write upstream"},
    )
    assert response.status == 201, response.text()
    return response.json()["client_id"]


def _authorization_url(live_server, client_id: str, challenge: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": "read write upstream",
        "state": "host-state-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": f"{live_server.url}/mcp",
    }
    return f"{live_server.url}/oauth/authorize/?{urlencode(query)}"


def _fits(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate(WIDER_THAN_THE_SCREEN) == []
    assert axe_violations(page, impacts=SERIOUS, preload=False) == []


@pytest.mark.parametrize(
    ("viewport", "suffix"), [({"width": WIDTH, "height": HEIGHT}, ""), (NARROW, "-390")], ids=["1280", "390"]
)
def test_a_host_sends_the_person_through_sign_in_and_consent(live_server, page, viewport, suffix) -> None:
    get_user_model().objects.create_user(username="ada", password=PASSWORD)
    services.registration_limiter(address="127.0.0.1").reset()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url} {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    # The host's loopback listener: answer the redirect here and keep the address it was sent to.
    landed: list[str] = []

    def host_listener(route) -> None:
        landed.append(route.request.url)
        route.fulfill(status=200, content_type="text/plain", body="You can close this window.")

    page.route("http://127.0.0.1:33418/**", host_listener)
    page.set_viewport_size(viewport)
    client_id = _register(page, live_server, "Claude Desktop")
    _verifier, challenge = pkce()

    page.goto(_authorization_url(live_server, client_id, challenge))
    assert page.url.startswith(f"{live_server.url}/oauth/login/?next=")
    assert page.locator("h1").inner_text() == "Sign in to authorize an application"
    _fits(page)
    page.screenshot(path=str(screenshot_dir() / f"oauth-login{suffix}.png"), full_page=True)

    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/oauth/authorize/?**")
    assert page.locator("h1").inner_text() == "Authorize Claude Desktop?"
    facts = dict(
        zip(
            page.locator("dl.facts dt").all_inner_texts(),
            page.locator("dl.facts dd").all_inner_texts(),
            strict=True,
        )
    )
    assert facts == {
        "Application": f"Claude Desktop client id {client_id}",
        "Sends you back to": REDIRECT,
        "For": f"{live_server.url}/mcp",
    }
    boxes = page.locator("fieldset input[type=checkbox]")
    assert [box.get_attribute("value") for box in boxes.all()] == ["read", "write", "upstream"]
    assert all(box.is_checked() for box in boxes.all())
    _fits(page)
    page.screenshot(path=str(screenshot_dir() / f"oauth-consent{suffix}.png"), full_page=True)

    # The person narrows the grant to read and allows: back to the host with a code and its state.
    page.uncheck("fieldset input[value=write]")
    page.uncheck("fieldset input[value=upstream]")
    page.click("button[name=allow]")
    page.wait_for_url(f"{REDIRECT}?**")
    assert len(landed) == 1
    sent_back = query_of(landed[0])
    assert sent_back["state"] == "host-state-1"
    assert len(sent_back["code"]) >= 30
    assert errors == [], errors


def test_deny_sends_the_person_back_to_the_host_with_access_denied(live_server, page) -> None:
    """Deny is a form post too: its redirect to the host must pass the page's form-action."""
    get_user_model().objects.create_user(username="ada", password=PASSWORD)
    services.registration_limiter(address="127.0.0.1").reset()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url} {m.text}") if m.type == "error" else None)
    landed: list[str] = []

    def host_listener(route) -> None:
        landed.append(route.request.url)
        route.fulfill(status=200, content_type="text/plain", body="You can close this window.")

    page.route("http://127.0.0.1:33418/**", host_listener)
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    client_id = _register(page, live_server, "VS Code")
    _verifier, challenge = pkce()
    page.goto(_authorization_url(live_server, client_id, challenge))
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/oauth/authorize/?**")
    assert page.locator("h1").inner_text() == "Authorize VS Code?"
    page.click("button.danger")
    page.wait_for_url(f"{REDIRECT}?**")
    assert len(landed) == 1
    sent_back = query_of(landed[0])
    assert sent_back["error"] == "access_denied"
    assert sent_back["state"] == "host-state-1"
    assert "code" not in sent_back
    assert errors == [], errors
