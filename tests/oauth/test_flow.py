"""The authorization-code flow with PKCE end to end over HTTP, its refusals, and what an OAuth
access token is on /v1/: its grant's API token (one permission model)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from apps.core.models import ApiToken
from apps.oauth import services
from apps.oauth.models import OAuthGrant
from tests.oauth.flow import HOST, REDIRECT, Host, make_user, pkce, query_of

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_registration_limit() -> None:
    services.registration_limiter(address="127.0.0.1").reset()


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}", **HOST}


def test_the_consent_page_names_the_client_its_redirect_uri_and_the_scopes() -> None:
    host = Host.registered(make_user())
    _verifier, challenge = pkce()
    page = host.consent_page(challenge)
    assert page.status_code == 200
    text = page.content.decode()
    assert "Authorize Test host?" in text
    assert f"<code>{REDIRECT}</code>" in text
    assert "read: search knowledge, facts and papers, and read your memories" in text
    assert "write: write memories and propose ontology changes" in text
    assert "upstream:" not in text  # not asked for, so not offered
    assert "<script" not in text.split("<body", 1)[1].split("</header>", 1)[1]
    assert 'style="' not in text


def test_a_code_exchanged_with_its_verifier_gives_short_lived_rotating_tokens() -> None:
    host = Host.registered(make_user())
    tokens = host.tokens()
    assert tokens["token_type"] == "Bearer"
    assert tokens["scope"] == "read write"
    assert tokens["expires_in"] == 3600
    refreshed = host.api.post(
        "/oauth/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": host.client_id,
        },
        **HOST,
    )
    assert refreshed.status_code == 200, refreshed.content
    assert refreshed.json()["refresh_token"] != tokens["refresh_token"]
    # Rotation: the old refresh token is spent.
    again = host.api.post(
        "/oauth/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": host.client_id,
        },
        **HOST,
    )
    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant"


def test_a_replayed_refresh_token_revokes_the_tokens_refreshed_from_it() -> None:
    """Reuse protection (RFC 9700 §4.14.2): a stolen refresh token used after the host refreshed
    ends the family, so neither party keeps access."""
    host = Host.registered(make_user())
    tokens = host.tokens()

    def refresh(token: str):
        body = {"grant_type": "refresh_token", "refresh_token": token, "client_id": host.client_id}
        return host.api.post("/oauth/token/", body, **HOST)

    rotated = refresh(tokens["refresh_token"]).json()
    assert refresh(tokens["refresh_token"]).json()["error"] == "invalid_grant"
    assert refresh(rotated["refresh_token"]).json()["error"] == "invalid_grant"
    assert Client().get("/v1/memory", **bearer(rotated["access_token"])).status_code == 401


def test_tokens_are_hashed_at_rest() -> None:
    host = Host.registered(make_user())
    tokens = host.tokens()
    row = AccessToken.objects.get(application__client_id=host.client_id, user__isnull=False)
    assert row.token == ""
    assert tokens["access_token"] not in str(list(AccessToken.objects.values()))
    assert tokens["refresh_token"] not in str(list(RefreshToken.objects.values()))


def test_an_access_token_acts_as_its_grants_api_token_with_the_granted_scopes() -> None:
    user = make_user()
    host = Host.registered(user)
    tokens = host.tokens(granted=("read",))
    assert tokens["scope"] == "read"
    response = Client().get("/v1/memory", **bearer(tokens["access_token"]))
    assert response.status_code == 200, response.content
    grant = OAuthGrant.objects.get()
    assert (grant.user, grant.application.client_id) == (user, host.client_id)
    assert grant.api_token.name == f"OAuth: Test host for {user.username}"
    # The scopes come from the access token: a read grant cannot write.
    written = Client().post(
        "/v1/memory/tell", {"content": "x"}, content_type="application/json", **bearer(tokens["access_token"])
    )
    assert written.status_code == 403
    assert written.json()["error"]["code"] == "permission_denied"


def test_the_same_user_and_client_share_one_grant_and_another_client_gets_its_own() -> None:
    user = make_user()
    first = Host.registered(user)
    for _ in range(2):
        assert Client().get("/v1/memory", **bearer(first.tokens()["access_token"])).status_code == 200
    second = Host.registered(user)
    assert Client().get("/v1/memory", **bearer(second.tokens()["access_token"])).status_code == 200
    assert OAuthGrant.objects.count() == 2
    assert ApiToken.objects.filter(oauth_grant__isnull=False).count() == 2


def test_memories_belong_to_the_user_and_client_of_the_grant() -> None:
    """Memory ownership is the grant's token's: another client of the same user sees none of them."""
    user = make_user()
    writer, other = Host.registered(user), Host.registered(user)
    writer_token = writer.tokens()["access_token"]
    told = Client().post(
        "/v1/memory/tell",
        {"content": "The deploy key rotates on Fridays."},
        content_type="application/json",
        **bearer(writer_token),
    )
    assert told.status_code == 200, told.content
    assert Client().get("/v1/memory", **bearer(writer_token)).json()["total"] == 1
    assert Client().get("/v1/memory", **bearer(other.tokens()["access_token"])).json()["total"] == 0


def test_a_wrong_code_verifier_is_invalid_grant() -> None:
    host = Host.registered(make_user())
    _verifier, challenge = pkce()
    other_verifier, _ = pkce()
    response = host.exchange(host.code(challenge), other_verifier)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_a_code_is_good_once() -> None:
    host = Host.registered(make_user())
    verifier, challenge = pkce()
    code = host.code(challenge)
    assert host.exchange(code, verifier).status_code == 200
    reused = host.exchange(code, verifier)
    assert reused.status_code == 400
    assert reused.json()["error"] == "invalid_grant"


def test_a_plain_pkce_challenge_is_refused() -> None:
    host = Host.registered(make_user())
    response = host.consent_page("a" * 43, code_challenge_method="plain")
    assert response.status_code == 302
    assert query_of(response["Location"]) == {
        "error": "invalid_request",
        "error_description": 'code_challenge_method must be "S256".',
        "state": "xyz",
    }


def test_an_unregistered_redirect_uri_is_refused_on_the_page_not_redirected_to() -> None:
    host = Host.registered(make_user())
    _verifier, challenge = pkce()
    response = host.consent_page(challenge, redirect_uri="https://evil.example/steal")
    assert response.status_code == 400
    assert response.context["error"].error == "invalid_request"
    assert "This authorization request was refused" in response.content.decode()
    assert "evil.example" not in response.get("Location", "")


def test_the_admin_scope_is_invalid_scope() -> None:
    host = Host.registered(make_user())
    _verifier, challenge = pkce()
    response = host.consent_page(challenge, scope="read admin")
    assert response.status_code == 302
    assert response["Location"].startswith(REDIRECT)
    assert query_of(response["Location"])["error"] == "invalid_scope"


def test_a_forged_admin_scope_in_the_consent_post_is_not_granted() -> None:
    host = Host.registered(make_user())
    _verifier, challenge = pkce()
    response = host.consent(challenge, granted=("read", "admin"))
    # The ticked admin is no choice of the form: the form is re-shown with the error.
    assert response.status_code == 200
    assert "admin is not one of the available choices" in response.content.decode()


def test_a_token_for_another_resource_is_invalid_target_before_consent() -> None:
    host = Host.registered(make_user())
    _verifier, challenge = pkce()
    response = host.consent_page(challenge, resource="https://elsewhere.example/mcp")
    assert response.status_code == 302
    query = query_of(response["Location"])
    assert (query["error"], query["state"]) == ("invalid_target", "xyz")


def test_an_access_token_issued_for_another_resource_is_refused(settings) -> None:
    host = Host.registered(make_user())
    tokens = host.tokens()
    AccessToken.objects.filter(user__isnull=False).update(resource=["https://elsewhere.example/mcp"])
    response = Client().get("/v1/memory", **bearer(tokens["access_token"]))
    assert response.status_code == 401
    assert response.json()["error"]["message"] == (
        "This OAuth access token was issued for another resource: https://elsewhere.example/mcp."
    )


def test_an_expired_access_token_is_refused() -> None:
    host = Host.registered(make_user())
    tokens = host.tokens()
    AccessToken.objects.filter(user__isnull=False).update(expires=timezone.now() - dt.timedelta(seconds=1))
    response = Client().get("/v1/memory", **bearer(tokens["access_token"]))
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "The bearer token is unknown, expired or revoked."


def test_a_revoked_access_token_is_refused() -> None:
    host = Host.registered(make_user())
    tokens = host.tokens()
    revoked = host.api.post(
        "/oauth/revoke/", {"token": tokens["access_token"], "client_id": host.client_id}, **HOST
    )
    assert revoked.status_code == 200
    response = Client().get("/v1/memory", **bearer(tokens["access_token"]))
    assert response.status_code == 401


def test_the_consent_post_without_csrf_is_refused() -> None:
    host = Host.registered(make_user())
    _verifier, challenge = pkce()
    page = host.consent_page(challenge)
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields if name != "granted"}
    response = host.browser.post("/oauth/authorize/", {**data, "allow": "on", "granted": ["read"]}, **HOST)
    assert response.status_code == 403
    assert Grant.objects.count() == 0


def test_signing_in_never_redirects_off_site() -> None:
    make_user("bob")
    response = Client().post(
        "/oauth/login/",
        {"username": "bob", "password": "a long test password", "next": "https://evil.example/"},
        **HOST,
    )
    assert response.status_code == 302
    assert not response["Location"].startswith("https://evil.example")


def test_the_authorization_endpoint_sends_a_visitor_to_sign_in_and_back() -> None:
    host = Host.registered(make_user())
    _verifier, challenge = pkce()
    url = host.authorize_url(challenge)
    response = Client().get(url, **HOST)
    assert response.status_code == 302
    assert response["Location"].startswith("/oauth/login/?next=")


def test_a_user_sees_and_revokes_their_own_grants_only() -> None:
    user, other = make_user(), make_user("eve")
    host = Host.registered(user)
    token = host.tokens()["access_token"]
    assert Client().get("/v1/memory", **bearer(token)).status_code == 200
    grant = OAuthGrant.objects.get()
    page = host.browser.get("/oauth/grants/", **HOST)
    assert page.status_code == 200
    assert "<td>Test host</td>" in page.content.decode()
    assert "<td>1</td>" in page.content.decode()
    # Someone else cannot revoke it.
    intruder = Client()
    intruder.force_login(other)
    assert intruder.post("/oauth/grants/", {"grant": grant.pk}, **HOST).status_code == 404
    assert Client().get("/v1/memory", **bearer(token)).status_code == 200
    revoked = host.browser.post(
        "/oauth/grants/", {"grant": grant.pk, "csrfmiddlewaretoken": page.cookies["csrftoken"].value}, **HOST
    )
    assert revoked.status_code == 302
    assert Client().get("/v1/memory", **bearer(token)).status_code == 401
    assert OAuthGrant.objects.filter(pk=grant.pk).exists()  # its memories stay the user's


def test_the_grants_page_needs_a_signed_in_user() -> None:
    response = Client().get("/oauth/grants/", **HOST)
    assert response.status_code == 302
    assert response["Location"].startswith("/oauth/login/?next=/oauth/grants/")
