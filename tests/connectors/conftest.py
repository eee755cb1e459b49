"""The default manifest loaded into the test database, as `manage.py run` does on first start."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.conf import settings

from apps.connectors.selectors import process_caches_clear
from apps.connectors.services import manifest_import, registry_changed

DEFAULT_MANIFEST_PATH = Path(settings.BASE_DIR) / "config" / "connectors.manifest.json"


@pytest.fixture(autouse=True)
def _registry_caches_start_fresh() -> None:
    """Tests in rolled-back transactions never commit, so on-commit invalidation never runs:
    start each test on a new registry version with empty process caches instead."""
    registry_changed()
    process_caches_clear()


@pytest.fixture
def default_manifest() -> dict:
    """A fresh, mutable copy of the default manifest's data."""
    return copy.deepcopy(json.loads(DEFAULT_MANIFEST_PATH.read_text(encoding="utf-8")))


@pytest.fixture
def default_registry(db: None, default_manifest: dict) -> dict:
    manifest_import(data=default_manifest, actor="tests")
    return default_manifest
