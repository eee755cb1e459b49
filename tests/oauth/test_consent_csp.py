"""The consent page's Content-Security-Policy lets its form send the person back to the client's
registered redirect URI: browsers apply ``form-action`` to the redirect after Allow or Deny, so
``form-action 'self'`` alone strands the flow on this server (tests/browser/test_oauth_screens.py
drives it in Chromium). Nothing else in the policy changes."""

from __future__ import annotations

import pytest
from django.conf import settings

from apps.oauth import services
from tests.oauth.flow import Host, make_user, pkce

pytestmark = pytest.mark.django_db

POLICY = "default-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'"


@pytest.fixture(autouse=True)
def _fresh_registration_limit() -> None:
    services.registration_limiter(address="127.0.0.1").reset()


def test_the_consent_page_allows_only_the_registered_redirect_origin_as_a_form_target() -> None:
    host = Host.registered(make_user())
    _verifier, challenge = pkce()
    page = host.consent_page(challenge)
    assert page.status_code == 200
    expected = settings.CORTEX_CONTENT_SECURITY_POLICY.replace(
        "form-action 'self'", "form-action 'self' http://127.0.0.1:33418"
    )
    assert page["Content-Security-Policy"] == expected


def test_other_oauth_pages_keep_the_site_policy() -> None:
    host = Host.registered(make_user("grace"))
    assert host.browser.get("/oauth/grants/", HTTP_HOST="localhost")["Content-Security-Policy"] == (
        settings.CORTEX_CONTENT_SECURITY_POLICY
    )


@pytest.mark.parametrize(
    ("redirect_uri", "policy"),
    [
        (
            "https://Example.org:8443/cb?x=1",
            "default-src 'self'; script-src 'self'; form-action 'self' https://example.org:8443; "
            "frame-ancestors 'none'",
        ),
        (
            "http://[::1]:9000/cb",
            "default-src 'self'; script-src 'self'; form-action 'self' http://[::1]:9000; "
            "frame-ancestors 'none'",
        ),
        # Nothing that could end the directive or add a source of its own is ever added.
        ("https://evil.example;script-src *@x/cb", POLICY),
        ("vscode://callback", POLICY),
    ],
)
def test_consent_page_policy_adds_one_plain_origin(redirect_uri: str, policy: str) -> None:
    assert services.consent_page_policy(POLICY, redirect_uri) == policy


def test_a_policy_without_form_action_is_left_as_it_is() -> None:
    assert (
        services.consent_page_policy("default-src 'self'", "https://example.org/cb") == "default-src 'self'"
    )
