"""Production settings: `manage.py check --deploy` passes once the documented variables are set
(docs/security.md, "Production"), and every response carries the Content-Security-Policy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client

from tests.core.test_run_command import ROOT

PRODUCTION_VARIABLES = {
    "DJANGO_SECURE_COOKIES": "true",
    "DJANGO_SECURE_SSL_REDIRECT": "true",
    "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "DJANGO_SECURE_HSTS_PRELOAD": "true",
}


def _deploy_check(**variables: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "CORTEX_DATA_DIR": str(settings.CORTEX_DATA_DIR), **variables}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        check=False,
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_passes_with_the_documented_production_variables() -> None:
    passed = _deploy_check(**PRODUCTION_VARIABLES)
    assert passed.returncode == 0, passed.stderr
    failed = _deploy_check()  # the development defaults: what --deploy is there to catch
    assert failed.returncode == 1
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in failed.stderr


def test_the_documented_variables_are_the_ones_tested() -> None:
    security = (ROOT / "docs" / "security.md").read_text()
    assert all(f"{name}={value}" in security for name, value in PRODUCTION_VARIABLES.items())


@pytest.mark.django_db
def test_every_response_carries_the_content_security_policy(client: Client) -> None:
    for path in ("/healthz", "/admin/login/", "/v1/docs", "/v1/connectors/service-map", "/connectors"):
        response = client.get(path)
        assert response["Content-Security-Policy"] == settings.CORTEX_CONTENT_SECURITY_POLICY, path
    assert "script-src 'self';" in settings.CORTEX_CONTENT_SECURITY_POLICY
    assert "frame-ancestors 'none'" in settings.CORTEX_CONTENT_SECURITY_POLICY
