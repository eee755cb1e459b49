"""An OAuth client as an MCP host is one, for the tests: register, PKCE, consent, token exchange,
over Django's test client (the SDK acceptance test drives a live server instead)."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.contrib.auth import get_user_model
from django.test import Client

from apps.oauth.services import registration_limiter

HOST = {"HTTP_HOST": "localhost"}
RESOURCE = "http://localhost/mcp"
REDIRECT = "http://127.0.0.1:33418/callback"
PASSWORD = "a long test password"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def make_user(username: str = "ada") -> Any:
    return get_user_model().objects.create_user(username=username, password=PASSWORD)


@dataclass
class Host:
    """A registered public client and a browser signed in as ``user``."""

    client_id: str
    browser: Client
    api: Client

    @classmethod
    def registered(cls, user: Any, redirect_uris: list[str] | None = None) -> Host:
        api = Client()
        response = api.post(
            "/oauth/register/",
            {"client_name": "Test host", "redirect_uris": redirect_uris or [REDIRECT]},
            content_type="application/json",
            **HOST,
        )
        assert response.status_code == 201, response.content
        browser = Client(enforce_csrf_checks=True)
        browser.force_login(user)
        return cls(client_id=response.json()["client_id"], browser=browser, api=api)

    def authorize_url(self, challenge: str, **extra: str) -> str:
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT,
            "scope": "read write",
            "state": "xyz",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": RESOURCE,
            **extra,
        }
        return "/oauth/authorize/?" + urlencode(query)

    def consent_page(self, challenge: str, **extra: str) -> Any:
        return self.browser.get(self.authorize_url(challenge, **extra), **HOST)

    def consent(self, challenge: str, granted: tuple[str, ...] = ("read", "write"), **extra: str) -> Any:
        """Open the consent page and allow ``granted``; the response is the redirect to the client."""
        page = self.consent_page(challenge, **extra)
        assert page.status_code == 200, page.content
        form = page.context["form"]
        data = {name: form[name].value() or "" for name in form.fields if name != "granted"}
        data.update(allow="on", granted=list(granted), csrfmiddlewaretoken=page.cookies["csrftoken"].value)
        return self.browser.post("/oauth/authorize/", data, **HOST)

    def code(self, challenge: str, **extra: str) -> str:
        response = self.consent(challenge, **extra)
        assert response.status_code == 302, response.content
        return query_of(response["Location"])["code"]

    def exchange(self, code: str, verifier: str, **extra: str) -> Any:
        data = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": self.client_id,
            "code_verifier": verifier,
            "resource": RESOURCE,
            **extra,
        }
        return self.api.post("/oauth/token/", data, **HOST)

    def tokens(self, granted: tuple[str, ...] = ("read", "write")) -> dict[str, Any]:
        verifier, challenge = pkce()
        response = self.exchange(self.code(challenge, granted=granted), verifier)
        assert response.status_code == 200, response.content
        return response.json()


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


def oauth_grant_rows() -> None:
    """One user's grant to one client, with its access and refresh tokens (admin page tests)."""
    # Redis keeps the registration limit across tests and runs.
    registration_limiter(address="127.0.0.1").reset()
    host = Host.registered(make_user("oauth-admin-rows"))
    token = host.tokens()["access_token"]
    assert Client().get("/v1/memory", HTTP_AUTHORIZATION=f"Bearer {token}", **HOST).status_code == 200
