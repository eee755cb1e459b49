"""API tokens: hashed at rest, scoped, expiring, revocable; the `tokens` command."""

from __future__ import annotations

import hashlib
import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from apps.core.errors import AuthenticationRequired, ValidationFailed
from apps.core.models import ApiToken
from apps.core.services import api_token_authenticate, api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


def test_token_is_stored_only_as_its_sha256_digest() -> None:
    token, raw = api_token_create(name="agent", scopes=["read", "write"])
    stored = ApiToken.objects.get(pk=token.pk)
    assert raw.startswith("cwt_")
    assert len(raw) == 4 + 43
    assert stored.token_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in {stored.token_hash, stored.prefix, stored.name}
    assert stored.prefix == raw[:10]
    assert stored.scopes == ["read", "write"]


def test_authenticate_accepts_the_token_and_records_last_use() -> None:
    token, raw = api_token_create(name="agent", scopes=["read"])
    assert token.last_used_at is None
    assert api_token_authenticate(raw_token=raw).pk == token.pk
    assert ApiToken.objects.get(pk=token.pk).last_used_at is not None


@pytest.mark.parametrize("state", ["revoked", "expired", "unknown"])
def test_authenticate_refuses_revoked_expired_and_unknown_tokens(state: str) -> None:
    token, raw = api_token_create(name="agent", scopes=["read"])
    if state == "revoked":
        api_token_revoke(token_id=token.pk)
    elif state == "expired":
        ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    else:
        raw = raw[:-1] + ("A" if raw[-1] != "A" else "B")
    with pytest.raises(AuthenticationRequired):
        api_token_authenticate(raw_token=raw)


def test_unknown_and_missing_scopes_are_rejected_with_the_known_list() -> None:
    with pytest.raises(ValidationFailed) as error:
        api_token_create(name="x", scopes=["read", "root"])
    known = ["read", "upstream", "verify", "write", "propose", "admin"]
    assert error.value.details == {"unknown": ["root"], "known": known}
    with pytest.raises(ValidationFailed):
        api_token_create(name="x", scopes=[])
    assert ApiToken.objects.count() == 0


def test_admin_scope_implies_every_other_scope() -> None:
    token, _ = api_token_create(name="ops", scopes=["admin"])
    scopes = ("read", "upstream", "verify", "write", "propose", "admin")
    assert all(token.has_scope(scope) for scope in scopes)
    reader, _ = api_token_create(name="reader", scopes=["read"])
    assert reader.has_scope("read") and not reader.has_scope("write")


def test_tokens_create_prints_the_token_alone_on_its_last_line() -> None:
    stdout = io.StringIO()
    call_command(
        "tokens", "create", "--name", "script", "--scopes", "read,write", stdout=stdout, stderr=io.StringIO()
    )
    last_line = stdout.getvalue().strip().splitlines()[-1]
    token = ApiToken.objects.get(name="script")
    assert token.token_hash == hashlib.sha256(last_line.encode()).hexdigest()
    assert token.scopes == ["read", "write"]


def test_tokens_create_defaults_to_the_read_scope() -> None:
    stderr = io.StringIO()
    call_command("tokens", "create", "--name", "reader", stdout=io.StringIO(), stderr=stderr)
    token = ApiToken.objects.get(name="reader")
    assert token.scopes == ["read"]
    assert stderr.getvalue().startswith(f"Created token {token.pk} 'reader' with scopes read.")


def test_tokens_list_and_revoke() -> None:
    token, raw = api_token_create(name="to-revoke", scopes=["read"])
    stdout = io.StringIO()
    call_command("tokens", "revoke", str(token.pk), stdout=stdout)
    assert stdout.getvalue().strip() == f"Revoked token {token.pk} 'to-revoke'."
    listing = io.StringIO()
    call_command("tokens", "list", "--all", stdout=listing)
    assert "to-revoke" in listing.getvalue() and "(revoked)" in listing.getvalue()
    assert raw not in listing.getvalue()
    active = io.StringIO()
    call_command("tokens", "list", stdout=active)
    assert "to-revoke" not in active.getvalue()


def test_tokens_command_reports_bad_input_as_a_command_error() -> None:
    with pytest.raises(CommandError, match="Unknown scope"):
        call_command("tokens", "create", "--name", "x", "--scopes", "superuser", stderr=io.StringIO())
    with pytest.raises(CommandError, match="No API token with id 999999"):
        call_command("tokens", "revoke", "999999")


def test_bearer_auth_on_both_apis_in_the_error_shape() -> None:
    _, reader = api_token_create(name="reader", scopes=["read"])
    anonymous = Client()
    for path in ("/api/events/",):
        response = anonymous.get(path)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "authentication_required"
        assert response["WWW-Authenticate"] == 'Bearer realm="cortexweb"'
        bad = Client(headers={"Authorization": "Bearer cwt_wrong"}).get(path)
        assert bad.status_code == 401
        assert bad.json()["error"]["message"] == "The bearer token is unknown, expired or revoked."
        ok = Client(headers={"Authorization": f"Bearer {reader}"}).get(path)
        assert ok.status_code == 200
    response = anonymous.post("/v1/embeddings", {"input": ["x"]}, content_type="application/json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_required"


def test_admin_creates_a_token_and_shows_it_once(admin_client: Client) -> None:
    response = admin_client.post(
        "/admin/core/apitoken/add/", {"name": "from-admin", "scopes": ["read", "propose"]}, follow=True
    )
    assert response.status_code == 200
    messages = [str(message) for message in response.context["messages"]]
    raw = next(message.split(": ")[-1] for message in messages if "Copy it now" in message)
    token = ApiToken.objects.get(name="from-admin")
    assert token.scopes == ["propose", "read"]
    assert token.token_hash == hashlib.sha256(raw.encode()).hexdigest()
    response = admin_client.post(
        "/admin/core/apitoken/", {"action": "revoke_tokens", "_selected_action": [token.pk]}, follow=True
    )
    assert response.status_code == 200
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    # The changelist says so as a warning, beside an active token's quiet state.
    api_token_create(name="still-good", scopes=["read"])
    page = admin_client.get("/admin/core/apitoken/").content.decode()
    assert '<span class="flag-warning">revoked</span>' in page
    assert '<span class="flag-quiet">active</span>' in page


def test_admin_refuses_a_past_expiry_on_the_field_not_with_a_500(admin_client: Client) -> None:
    response = admin_client.post(
        "/admin/core/apitoken/add/",
        {"name": "expired", "scopes": ["read"], "expires_at_0": "2020-01-01", "expires_at_1": "00:00:00"},
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"expires_at": ["The expiry must be in the future."]}
    assert not ApiToken.objects.filter(name="expired").exists()
