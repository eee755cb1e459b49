"""The grounding agents ``make run`` loads on first start: grounding's own loader, run after the
knowledge packs, and the knowledge loader no longer loading them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.grounding import services
from apps.grounding.models import GroundingAgent
from apps.knowledge import services as knowledge_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def packs(settings, tmp_path: Path) -> Path:
    entries = {
        "security": ("SEC-001", "TLS 1.0 must not be used."),
        "performance": ("PERF-001", "Binary search is O(log n)."),
    }
    for domain, (entry_id, content) in entries.items():
        (tmp_path / domain).mkdir()
        entry = {"id": entry_id, "topic": domain, "content": content, "source": "test"}
        (tmp_path / domain / "pack.json").write_text(json.dumps([entry]))
    settings.CORTEX_KNOWLEDGE_DIR = tmp_path
    settings.CORTEX_GROUNDING_AGENTS = Path(settings.BASE_DIR) / "config" / "grounding" / "agents.json"
    return tmp_path


def test_first_start_loads_the_packs_then_the_agents_of_their_domains(packs: Path) -> None:
    loaded = knowledge_services.knowledge_load_default_if_empty()
    assert loaded is not None and loaded.summary() == "knowledge packs: 2 entries in 2 domains"
    assert not GroundingAgent.objects.exists()  # knowledge knows nothing of grounding

    agents = services.grounding_agents_load_default_if_empty()
    assert agents is not None and agents.summary() == "grounding agents: 2 created"
    assert sorted(GroundingAgent.objects.values_list("name", "domain__name")) == [
        ("performance-grounding-agent", "performance"),
        ("security-grounding-agent", "security"),
    ]


def test_agents_are_not_loaded_again_once_there_are_some(packs: Path) -> None:
    knowledge_services.knowledge_load_default_if_empty()
    services.grounding_agents_load_default_if_empty()
    GroundingAgent.objects.filter(name="security-grounding-agent").delete()  # an operator's choice
    assert services.grounding_agents_load_default_if_empty() is None
    assert list(GroundingAgent.objects.values_list("name", flat=True)) == ["performance-grounding-agent"]
