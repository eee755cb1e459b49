"""One-row configuration models (the memory and grounding settings) read from the database once per
process and change, not once per request.

Each process keeps the row it read and the version it read it at. The version is a Redis counter that
moves when the row is saved or deleted (after the commit), so an operator's edit in the admin takes
effect on the next read in every web and worker process; a read costs one Redis GET instead of a
query (about 1 ms of an ``ask`` at 100k memories, ``bench/memory.py``). Three cases are read from the
database instead:

- the thread's open transaction changed the row: the change may still be rolled back, so it is not
  kept for anyone else;
- Redis does not answer;
- the kept row is older than ``KEEP_SECONDS``: a version bump lost while Redis was down (or a
  ``flush`` in another process) is healed within that time.

Callers get a deep copy: changing it (a form, a test, a list field in place) does not change what
the next caller reads.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from typing import Any, Generic, TypeVar

from django.db import connection, models, transaction
from django.db.models.signals import post_delete, post_migrate, post_save
from redis.exceptions import RedisError

from apps.core.redis import get_redis

logger = logging.getLogger(__name__)

KEEP_SECONDS = 60.0
VERSION_KEY = "cortex:singleton-version:{label}"


RowT = TypeVar("RowT", bound=models.Model)


class SingletonCache(Generic[RowT]):
    """The row ``pk=1`` of ``model`` (created with its defaults when missing), kept per process."""

    def __init__(self, model: type[RowT]) -> None:
        self.model = model
        label = model._meta.label_lower
        self.version_key = VERSION_KEY.format(label=label)
        self._kept: tuple[Any, float, RowT] | None = None  # (version, when kept, row)
        self._changed_here = threading.local()  # per thread, as Django's connections are
        post_save.connect(self._row_changed, sender=model, weak=False, dispatch_uid=f"{label}.singleton")
        post_delete.connect(self._row_changed, sender=model, weak=False, dispatch_uid=f"{label}.singleton")
        # ``flush`` (between transactional tests, or by hand) empties the table without row signals.
        post_migrate.connect(self._flushed, weak=False, dispatch_uid=f"{label}.singleton")

    def current(self) -> RowT:
        if self._changed_in_open_transaction():
            return self._read()
        try:
            version = get_redis().get(self.version_key)
        except RedisError:
            return self._read()
        kept = self._kept
        if kept is not None and kept[0] == version and time.monotonic() - kept[1] < KEEP_SECONDS:
            return copy.deepcopy(kept[2])
        row = self._read()
        self._kept = (version, time.monotonic(), row)
        return copy.deepcopy(row)

    def _read(self) -> RowT:
        row, _ = self.model.objects.get_or_create(pk=1)  # type: ignore[attr-defined]
        return row

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
                "singleton.version_not_moved",
                extra={"model": self.model._meta.label, "error": str(error), "stale_up_to_s": KEEP_SECONDS},
            )
