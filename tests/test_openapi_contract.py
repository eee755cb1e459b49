"""The OpenAPI documents tell the truth: Schemathesis generates requests from `/v1/openapi.json`,
`/api/openapi.json` and `/ontology-agent/openapi.json` (its coverage phase's boundary values, then
bounded fuzzing, schema-valid and schema-violating) and sends them through the real Django
application with an admin token.

Enforced on every response: no server error; every status, content type, header and body as
documented; auth honoured (a request without the token is refused); a method an operation does not
list answered 405; and every schema-violating request refused (negative_data_rejection: the bodies
parse strictly — no `false` for a number, no `0` for a date or a boolean, no `"5"` for an integer —
and so do the /api/ paging parameters). A schema-violating body too large for the body limit may be
refused with 413 instead of 400/422.

One check is not enforced: positive_data_acceptance (schema-valid requests must succeed). The
documents cannot state every rule the API applies, so schema-valid requests are refused by design:
text with NUL bytes or lone surrogates (JSON Schema has no way to say "storable text"), rules across
fields or needing stored data — memory-ask `weights` must sum to 1, `scope` applies to
`fact_query` only, an arXiv id's syntax, blank texts for embeddings and claims, a tool's arguments
depend on the tool named, a connector or tool named in a body must exist, a memory file must hold
memories. Those refusals are 4xx in the error shape, which the enforced checks verify.
"""

from __future__ import annotations

import json
import os
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
from schemathesis.generation.feedback import FeedbackSources
from schemathesis.generation.hypothesis.builder import add_coverage
from schemathesis.generation.overrides import Override
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
    openapi_checks.missing_required_header,
    openapi_checks.unsupported_method,
    openapi_checks.negative_data_rejection,
]
# Fuzzed examples per operation and mode; OPENAPI_CONTRACT_EXAMPLES=100 for a longer search by hand.
EXAMPLES = int(os.environ.get("OPENAPI_CONTRACT_EXAMPLES", "12"))
# A schema-violating body may be refused for its size before its fields are read.
NEGATIVE_EXPECTED_STATUSES = [
    "400",
    "401",
    "403",
    "404",
    "405",
    "406",
    "409",
    "413",
    "415",
    "422",
    "428",
    "429",
]


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
    # No worker runs here: a fact query would wait out waitSeconds (10 s by default) for nothing, and
    # with enough examples the test would pass pytest's timeout. A value the schema refuses stays, to
    # be refused.
    if isinstance(case.body, dict) and case.operation.path.endswith("/facts/query"):
        wait = case.body.get("waitSeconds", 0)
        if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 <= wait <= 30:
            case.body["waitSeconds"] = 0
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=ENFORCED)


def _violations(schema, token: str) -> list[str]:
    """Every operation, with schema-valid and schema-violating requests (the coverage phase's
    boundary values first, then fuzzing); what failed, per operation."""
    schema.config.checks.negative_data_rejection.expected_statuses = NEGATIVE_EXPECTED_STATUSES
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

            exercise = add_coverage(
                exercise, operation, [mode], None, Override(), FeedbackSources(), schema.config.generation
            )
            try:
                exercise()
            except Unsatisfiable:  # nothing in this operation to make schema-violating (no inputs)
                continue
            # A check failed (Schemathesis raises a group of failures, a BaseExceptionGroup): collect
            # every operation's, report them together.
            except (Exception, BaseExceptionGroup) as failure:
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
