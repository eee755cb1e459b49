"""The default manifest loaded into the test database, as `manage.py run` does on first start."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.conf import settings

from apps.connectors.services import manifest_import

DEFAULT_MANIFEST_PATH = Path(settings.BASE_DIR) / "config" / "connectors.manifest.json"


@pytest.fixture
def default_manifest() -> dict:
    """A fresh, mutable copy of the default manifest's data."""
    return copy.deepcopy(json.loads(DEFAULT_MANIFEST_PATH.read_text(encoding="utf-8")))


@pytest.fixture
def default_registry(db: None, default_manifest: dict) -> dict:
    manifest_import(data=default_manifest, actor="tests")
    return default_manifest
