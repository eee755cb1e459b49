"""Fixtures of the Wikidata tests: the default registry (the planner needs its tools) and a local
replay of the three Wikidata upstreams."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from apps.connectors.services import manifest_import
from apps.core.redis import get_redis
from apps.wikidata import action_api, clients, labels, sparql, vectordb
from tests.wikidata.replay_server import ReplayWikidata

DEFAULT_MANIFEST_PATH = Path(settings.BASE_DIR) / "config" / "connectors.manifest.json"


@pytest.fixture
def wikidata_registry(db: None) -> None:
    manifest_import(data=json.loads(DEFAULT_MANIFEST_PATH.read_text(encoding="utf-8")), actor="tests")


def label_cache_reset() -> None:
    redis = get_redis()
    keys = list(redis.scan_iter(labels.label_cache_key("*", "*")))
    if keys:
        redis.delete(*keys)


def _limiters_and_label_cache_reset() -> None:
    for upstream in (action_api.UPSTREAM, vectordb.UPSTREAM, sparql.UPSTREAM):
        clients.upstream_limiter(upstream).reset()
    label_cache_reset()


@pytest.fixture
def wikidata(settings) -> Iterator[ReplayWikidata]:
    """The replay server, with WIKIDATA_* settings pointing at it; the shared limiters and the label
    cache start empty (labels cached by one test would hide another's label requests)."""
    server = ReplayWikidata().start()
    server.configure(settings)
    _limiters_and_label_cache_reset()
    yield server
    server.stop()
    _limiters_and_label_cache_reset()
