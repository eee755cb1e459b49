"""First-start data: each app registers the loader of the data it ships, and ``manage.py run``
calls them after migrating.

An app registers from its ``AppConfig.ready()``, so no app needs to know another's defaults, and
the loaders run in ``INSTALLED_APPS`` order: a loader may rely on what the loaders of the apps
listed before it loaded (the grounding agents name the knowledge domains). A loader is a dotted
path, imported only when it runs, to a function that takes no arguments and loads its app's
defaults when they are absent, returning something with ``summary()`` or None when there was
nothing to do.
"""

from __future__ import annotations

from typing import Protocol

from django.utils.module_loading import import_string


class Loaded(Protocol):
    def summary(self) -> str: ...


_loaders: list[str] = []


def default_data_loader_register(*, loader: str) -> None:
    """Add ``loader`` (a dotted path) to those ``manage.py run`` calls; registering twice is a no-op."""
    if loader not in _loaders:
        _loaders.append(loader)


def default_data_loaders() -> list[str]:
    """The registered loaders, in the order they run."""
    return list(_loaders)


def default_data_load() -> list[tuple[str, Loaded]]:
    """Run every registered loader; returns each one that loaded something, with what it loaded."""
    loaded = []
    for loader in default_data_loaders():
        result = import_string(loader)()
        if result is not None:
            loaded.append((loader, result))
    return loaded
