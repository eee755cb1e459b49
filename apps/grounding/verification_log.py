"""The verification log file: every stored verification as one JSON line, appended after its commit
(``GROUNDING_VERIFICATION_LOG``, the seed's ``logs/grounding-verifications.jsonl``).

Web processes and workers append to the same file. Each append opens the file by its path, takes an
exclusive ``flock`` on a sidecar ``<file>.lock``, rotates when this line would pass
``GROUNDING_VERIFICATION_LOG_MAX_BYTES`` (``file`` → ``file.1`` → … → ``file.N``, the oldest
dropped), writes the line with one ``write()`` on an ``O_APPEND`` descriptor, and closes it.
``RotatingFileHandler`` is not used: it keeps its descriptor open, so a process that did not rotate
would go on writing into the renamed file, and two processes could both rotate. Under the lock no
line is lost, split or written to a rotated file. The lock is per host (the file lives on local disk);
Postgres keeps the complete record either way (``manage.py grounding export-log``).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from django.conf import settings

from apps.core.logging import get_logger

logger = get_logger(__name__)


def verification_log_path() -> Path | None:
    """The log file, or None when the setting is empty (the log is off)."""
    value = str(getattr(settings, "GROUNDING_VERIFICATION_LOG", "") or "").strip()
    return Path(value) if value else None


def verification_log_append(line: str) -> None:
    """Append one line (rotating first when it would not fit). A failure to write is logged and
    swallowed: the verification is already committed, and the caller's answer must not change."""
    path = verification_log_path()
    if path is None:
        return
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{path}.lock", "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            _rotate_if_full(path, len(data))
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(descriptor, data)
            finally:
                os.close(descriptor)
    except OSError as error:
        logger.warning("grounding.verification_log_failed", path=str(path), error=str(error))


def _rotate_if_full(path: Path, incoming: int) -> None:
    limit = int(settings.GROUNDING_VERIFICATION_LOG_MAX_BYTES)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    # An empty file takes any line, so one line longer than the limit is still written once.
    if limit <= 0 or size == 0 or size + incoming <= limit:
        return
    backups = int(settings.GROUNDING_VERIFICATION_LOG_BACKUPS)
    if backups <= 0:
        path.unlink()
        return
    oldest = Path(f"{path}.{backups}")
    if oldest.exists():
        oldest.unlink()
    for number in range(backups - 1, 0, -1):
        older = Path(f"{path}.{number}")
        if older.exists():
            older.rename(f"{path}.{number + 1}")
    path.rename(f"{path}.1")
