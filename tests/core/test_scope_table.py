"""Token scopes come from one table (``apps.core.scopes``), issue 26 item 6: the API-token form's labels
and docs/security.md say the same, no scope that works is called "to come", and a scope the table
calls reserved is needed by no operation (every other one by at least one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from apps.core import security
from apps.core.models import TokenScope
from apps.core.scopes import SCOPE_LABELS, SCOPE_TABLE
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

LABELS = {
    "read": "read: stored data and local computation",
    "upstream": "upstream: start work that spends an upstream's budget (Wikidata, arXiv, tools)",
    "verify": "verify: create verifications (the review queue)",
    "write": "write: agent memory (tell, update, pin, forget, import) and ontology proposals",
    "propose": "propose: reserved, grants nothing (ontology proposals need write)",
    "admin": "admin: everything, including /api/ writes",
}


def test_the_token_scopes_are_the_tables() -> None:
    assert dict(TokenScope.choices) == SCOPE_LABELS == LABELS
    assert [scope.value for scope in SCOPE_TABLE] == list(TokenScope.values)


def test_the_token_form_shows_the_tables_labels_and_nothing_to_come() -> None:
    client = Client()
    client.force_login(make_user("token-admin", is_superuser=True))
    html = client.get("/admin/core/apitoken/add/").content.decode()
    for label in LABELS.values():
        assert label.replace("'", "&#x27;") in html, label
    assert "to come" not in html


def test_reserved_means_no_operation_needs_it_and_the_rest_are_needed() -> None:
    needed = {operation.needs for operation in (*security.HTTP_OPERATIONS, *security.MCP_OPERATIONS)}
    for scope in SCOPE_TABLE:
        if scope.value == TokenScope.ADMIN:
            continue  # implied by every check; the registry's /api/ writes need it alone
        assert (scope.value not in needed) is scope.reserved, scope.value
    assert {scope.value for scope in SCOPE_TABLE if scope.reserved} == {"propose"}


def test_the_security_doc_says_what_each_scope_allows_today() -> None:
    page = (Path(settings.BASE_DIR) / "docs" / "security.md").read_text(encoding="utf-8")
    generated = page[page.index(security.BEGIN) : page.index(security.END)]
    for scope in SCOPE_TABLE:
        assert f"| `{scope.value}` | {SCOPE_LABELS[scope.value]} | {scope.allows} |" in generated
    assert "to come" not in page and "allowed nothing yet" not in page
    assert "A `propose` token is allowed nothing (reserved)." in generated
