"""The one-row settings are read once per process and change (``apps/core/process_cache.py``): an edit
takes effect on the next read in every process, an uncommitted edit is never kept, and without Redis
every read goes to the database."""

from __future__ import annotations

import socket

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from apps.core import process_cache
from apps.core.process_cache import KEEP_SECONDS
from apps.core.redis import get_redis
from apps.grounding.models import GroundingAgent, GroundingSettings
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain
from apps.memory.models import MemorySettings


def _queries(call) -> tuple[object, int]:
    with CaptureQueriesContext(connection) as captured:
        result = call()
    return result, len(captured)


@pytest.mark.django_db(transaction=True)
def test_a_read_is_kept_until_the_version_moves() -> None:
    MemorySettings.current()  # creates the row: a change, which moves the version
    first, queries = _queries(MemorySettings.current)
    assert queries >= 1
    again, queries = _queries(MemorySettings.current)
    assert queries == 0 and again.weights == first.weights
    # Another process edits the row (no signal here) and moves the version, as its save does.
    MemorySettings.objects.filter(pk=1).update(weight_domain=0.25, weight_semantic=0.40)
    kept, queries = _queries(MemorySettings.current)
    assert queries == 0 and kept.weight_domain == 0.35  # this process has not been told yet
    get_redis().incr("cortex:process-cache-version:memory.memorysettings")
    fresh, queries = _queries(MemorySettings.current)
    assert queries >= 1 and (fresh.weight_domain, fresh.weight_semantic) == (0.25, 0.40)


@pytest.mark.django_db(transaction=True)
def test_a_save_takes_effect_at_once_and_moves_the_version() -> None:
    key = "cortex:process-cache-version:grounding.groundingsettings"
    GroundingSettings.current()
    before = int(get_redis().get(key) or 0)
    row = GroundingSettings.current()
    row.confidence_threshold = 0.55
    row.save()
    assert int(get_redis().get(key)) == before + 1
    assert GroundingSettings.current().confidence_threshold == 0.55


@pytest.mark.django_db(transaction=True)
def test_an_edit_rolled_back_is_never_kept() -> None:
    MemorySettings.current()
    with pytest.raises(RuntimeError), transaction.atomic():
        row = MemorySettings.current()
        row.temporal_lambda_per_day = 5.0
        row.save()
        # Inside its own transaction the edit is what the settings are.
        assert MemorySettings.current().temporal_lambda_per_day == 5.0
        raise RuntimeError("roll back")
    assert MemorySettings.current().temporal_lambda_per_day == 0.1


@pytest.mark.django_db(transaction=True)
def test_callers_get_a_copy() -> None:
    row = MemorySettings.current()
    row.weight_domain = 0.9  # a form's or a caller's change, never saved
    assert MemorySettings.current().weight_domain == 0.35
    grounding = GroundingSettings.current()
    grounding.trigger_patterns.append("changed in place")
    assert "changed in place" not in GroundingSettings.current().trigger_patterns


@pytest.mark.django_db(transaction=True)
def test_a_kept_row_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    MemorySettings.current()
    MemorySettings.objects.filter(pk=1).update(relevance_threshold=0.3)  # its version bump was lost
    later = process_cache.time.monotonic() + KEEP_SECONDS + 1
    monkeypatch.setattr(process_cache.time, "monotonic", lambda: later)
    assert MemorySettings.current().relevance_threshold == 0.3


@pytest.mark.django_db(transaction=True)
def test_without_redis_every_read_goes_to_the_database() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        get_redis.cache_clear()
        try:
            with override_settings(REDIS_URL=f"redis://127.0.0.1:{port}/0"):
                MemorySettings.current()
                MemorySettings.objects.filter(pk=1).update(decay_rate=0.5)
                row, queries = _queries(MemorySettings.current)
                assert queries >= 1 and row.decay_rate == 0.5
                row.save()  # the version cannot move: logged, and the save itself succeeds
                assert MemorySettings.objects.get(pk=1).decay_rate == 0.5
        finally:
            get_redis.cache_clear()


@pytest.mark.django_db(transaction=True)
def test_the_grounding_agents_are_kept_until_an_agent_or_its_domain_changes() -> None:
    base = KnowledgeBase.objects.create(name="test")
    domain = KnowledgeDomain.objects.create(base=base, name="kitchens")
    agent = GroundingAgent.objects.create(name="Kitchen checker", domain=domain)
    assert [a.name for a in GroundingAgent.enabled_with_domains()] == ["Kitchen checker"]
    _, queries = _queries(GroundingAgent.enabled_with_domains)
    assert queries == 0
    domain.name = "kitchen-appliances"
    domain.save()
    assert [a.domain.name for a in GroundingAgent.enabled_with_domains()] == ["kitchen-appliances"]
    agent.enabled = False
    agent.save()
    assert GroundingAgent.enabled_with_domains() == []
