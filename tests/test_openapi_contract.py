"""The OpenAPI documents tell the truth: Schemathesis generates requests from `/v1/openapi.json`,
`/api/openapi.json` and `/ontology-agent/openapi.json` (examples, coverage and fuzzing phases,
bounded examples) and sends them through the real Django application with an admin token.

Enforced on every response: no server error, every status and content type documented, headers
and bodies as documented, and auth honoured. Two of Schemathesis's checks are reported, not
enforced (docs/api.md, "What the documents cannot say"): positive_data_acceptance (rules a JSON
schema cannot state, e.g. "scope applies to fact_query only") and negative_data_rejection
(pydantic's lax parsing accepts `false` for a number). `bench/openapi_contract.py` prints the
counts of every check over more examples.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi import checks as openapi_checks

from apps.connectors.services import manifest_import
from apps.core.models import TokenScope
from apps.ontology import services

DEFAULT_MANIFEST = Path(__file__).resolve().parents[1] / "config" / "connectors.manifest.json"

ENFORCED = [
    schemathesis.checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_headers_conformance,
    openapi_checks.response_schema_conformance,
    openapi_checks.ignored_auth,
]
EXAMPLES = 12


@pytest.fixture
def wsgi_application(db) -> Iterator[object]:
    """Django's WSGI application on the test's database connection: as Django's test client does,
    a request's start and end must not close the connection that holds the test's transaction."""
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        for signal in (signals.request_started, signals.request_finished):
            signal.connect(close_old_connections)


@pytest.fixture
def v1_schema(wsgi_application):
    return schemathesis.openapi.from_wsgi("/v1/openapi.json", wsgi_application)


@pytest.fixture
def resource_schema(wsgi_application):
    return schemathesis.openapi.from_wsgi("/api/openapi.json", wsgi_application)


@pytest.fixture
def ontology_schema(wsgi_application):
    # Answers carry real classes: the starter ontology (make run loads it too).
    services.ontology_load_default_if_empty()
    return schemathesis.openapi.from_wsgi("/ontology-agent/openapi.json", wsgi_application)


@pytest.fixture
def admin_token(make_token, settings) -> str:
    # Answers carry real rows: the default connectors and tools (the registry `make run` loads).
    manifest_import(data=json.loads(DEFAULT_MANIFEST.read_text(encoding="utf-8")), actor="tests")
    # Upstream work must not wait on a worker these tests do not run: answer 202 at once.
    settings.ARXIV_WAIT_SECONDS = 0
    settings.CORTEX_TOKEN_REQUESTS_PER_MINUTE = 0  # thousands of requests from one token
    return make_token(TokenScope.ADMIN)[1]


def _call(case, token: str) -> None:
    if isinstance(case.body, dict) and "waitSeconds" in case.body:
        case.body["waitSeconds"] = 0
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=ENFORCED)


def _violations(schema, token: str) -> list[str]:
    """Every operation, with schema-valid and schema-violating requests; what failed, per operation."""
    found: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in GenerationMode:

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                derandomize=True,
                database=None,
            )
            def exercise(case) -> None:
                _call(case, token)

            try:
                exercise()
            except Unsatisfiable:  # nothing in this operation to make schema-violating (no inputs)
                continue
            except Exception as failure:  # a check failed: collect all, report together
                found.append(f"{operation.label} ({mode.value}): {failure}"[:2000])
    return found


def test_v1_answers_only_what_its_document_says(v1_schema, admin_token) -> None:
    violations = _violations(v1_schema, admin_token)
    assert violations == [], "\n\n".join(violations)


def test_api_answers_only_what_its_document_says(resource_schema, admin_token) -> None:
    violations = _violations(resource_schema, admin_token)
    assert violations == [], "\n\n".join(violations)


def test_ontology_agent_answers_only_what_its_document_says(ontology_schema, admin_token) -> None:
    violations = _violations(ontology_schema, admin_token)
    assert violations == [], "\n\n".join(violations)
