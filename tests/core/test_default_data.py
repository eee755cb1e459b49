"""First-start data: every app registers its own loader, and they run in INSTALLED_APPS order."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from apps.core import default_data


def test_each_app_registers_its_loader_in_installed_apps_order() -> None:
    # Grounding's agents name knowledge domains, so its loader must come after knowledge's.
    assert default_data.default_data_loaders() == [
        "apps.connectors.services.manifest_load_default_if_empty",
        "apps.knowledge.services.knowledge_load_default_if_empty",
        "apps.grounding.services.grounding_agents_load_default_if_empty",
        "apps.ontology.services.ontology_load_default_if_empty",
    ]


@dataclass
class _Loaded:
    def summary(self) -> str:
        return "two things"


def _loads_something() -> _Loaded:
    return _Loaded()


def _loads_nothing() -> None:
    return None


def test_default_data_load_runs_each_loader_once_and_returns_those_that_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(default_data, "_loaders", [])
    something = f"{__name__}._loads_something"
    default_data.default_data_loader_register(loader=f"{__name__}._loads_nothing")
    default_data.default_data_loader_register(loader=something)
    default_data.default_data_loader_register(loader=something)  # ready() may run twice
    loaded = default_data.default_data_load()
    assert [(loader, result.summary()) for loader, result in loaded] == [(something, "two things")]
