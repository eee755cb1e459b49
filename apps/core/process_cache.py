"""Small, rarely edited data read from the database once per process and change, not once per request:
the one-row settings (memory, grounding) and the grounding agents.

Each process keeps what it read and the version it read it at. The version is a Redis counter that
moves when one of its rows is saved or deleted (after the commit), so an operator's edit in the admin takes
effect on the next read in every web and worker process; a read costs one Redis GET instead of a
query (about 1 ms of an ``ask`` at 100k memories, ``bench/memory.py``). Three cases are read from the
database instead:

- the thread's open transaction changed a row: the change may still be rolled back, so it is not
  kept for anyone else;
- Redis does not answer;
- what is kept is older than ``KEEP_SECONDS``: a version bump lost while Redis was down (or a
  ``flush`` in another process) is healed within that time.

Callers get a deep copy: changing it (a form, a test, a list field in place) does not change what
the next caller reads.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from django.db import connection, models, transaction
from django.db.models.signals import post_delete, post_migrate, post_save
from redis.exceptions import RedisError

from apps.core.logging import get_logger
from apps.core.redis import get_redis

logger = get_logger(__name__)

KEEP_SECONDS = 60.0
VERSION_KEY = "cortex:process-cache-version:{name}"


T = TypeVar("T")
RowT = TypeVar("RowT", bound=models.Model)


class ProcessCache(Generic[T]):
    """What ``read()`` returns, kept per process until a row of one of ``models`` changes."""

    def __init__(self, *, name: str, read: Callable[[], T], models: Sequence[type[models.Model]]) -> None:
        self.name = name
        self.read = read
        self.version_key = VERSION_KEY.format(name=name)
        self._kept: tuple[Any, float, T] | None = None  # (version, when kept, value)
        self._changed_here = threading.local()  # per thread, as Django's connections are
        for model in models:
            uid = f"{name}.process-cache.{model._meta.label_lower}"
            post_save.connect(self._row_changed, sender=model, weak=False, dispatch_uid=uid)
            post_delete.connect(self._row_changed, sender=model, weak=False, dispatch_uid=uid)
        # ``flush`` (between transactional tests, or by hand) empties the tables without row signals.
        post_migrate.connect(self._flushed, weak=False, dispatch_uid=f"{name}.process-cache")

    def current(self) -> T:
        if self._changed_in_open_transaction():
            return self.read()
        try:
            version = get_redis().get(self.version_key)
        except RedisError:
            return self.read()
        kept = self._kept
        if kept is not None and kept[0] == version and time.monotonic() - kept[1] < KEEP_SECONDS:
            return copy.deepcopy(kept[2])
        value = self.read()
        self._kept = (version, time.monotonic(), value)
        return copy.deepcopy(value)

    def _changed_in_open_transaction(self) -> bool:
        if getattr(self._changed_here, "pending", False) and not connection.in_atomic_block:
            self._changed_here.pending = False  # that transaction has ended, committed or not
        return bool(getattr(self._changed_here, "pending", False))

    def _row_changed(self, **kwargs: Any) -> None:
        self._kept = None
        if connection.in_atomic_block:
            self._changed_here.pending = True
        transaction.on_commit(self._version_moved)  # at once outside a transaction

    def _flushed(self, **kwargs: Any) -> None:
        self._kept = None  # this process; Redis may not be up while migrations run

    def _version_moved(self) -> None:
        self._kept = None
        try:
            get_redis().incr(self.version_key)
        except RedisError as error:
            logger.warning(
                "process_cache.version_not_moved",
                cache=self.name,
                error=str(error),
                stale_up_to_s=KEEP_SECONDS,
            )


def singleton_cache(model: type[RowT]) -> ProcessCache[RowT]:
    """The row ``pk=1`` of a one-row configuration ``model``, created with its defaults when missing."""

    def read() -> RowT:
        row, _ = model.objects.get_or_create(pk=1)  # type: ignore[attr-defined]
        return row

    return ProcessCache(name=model._meta.label_lower, read=read, models=[model])
