"""Untrusted work (an agent's SPARQL query) in a forked child process under a hard deadline.

Why a process: Python cannot interrupt a thread, and work that holds the interpreter lock (a
backtracking regular expression, big-integer arithmetic, one huge ``FILTER``) stalls every thread of
the web process, its health check included. A forked child shares the parent's memory copy-on-write,
so the ontology graph the parent holds for the current version is the graph the child reads — nothing
is copied, reloaded or sent, and a merged proposal is seen by the next query exactly as before. The
child writes its JSON answer to a pipe and exits; the parent waits on the pipe without the
interpreter lock and ``SIGKILL``s the child at the deadline.

Why a fork per call rather than a pool of pre-started workers: a fork of the web process costs a few
milliseconds (``bench/ontology_query.py``), while a pool would have to ship each new ontology version
to its workers, and a worker killed at its deadline would have to be replaced anyway.

The child is made harmless to its parent before it runs anything: its output goes to ``/dev/null``
(``manage.py mcp_stdio`` speaks JSON-RPC on stdout), it takes no signal the parent's event loop
would hear, it runs at a lower CPU priority than the web process, its address space is capped, and
it leaves with ``os._exit`` — no ``atexit`` hook, buffer flush or connection close of the parent's.
The database and Redis clients close nothing on the parent's behalf either: psycopg and redis-py
only close a connection in the process that opened it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import resource
import select
import signal
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import psutil

# The child's exit codes, read by the parent when no answer came.
_EXIT_FAILED = 1
_EXIT_OUT_OF_MEMORY = 2
_READ_CHUNK = 65536
_forking = threading.Lock()


class IsolatedTimeout(Exception):
    """The child was still running at the deadline and was killed."""


class IsolatedFailed(Exception):
    """The child ended without an answer: ``reason`` is ``memory`` (over its address-space cap) or
    ``crashed`` (an exception the work did not handle, or a signal)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IsolationBusy(Exception):
    """Every slot was taken for the whole wait: ``concurrency`` children are already running."""


class Slots:
    """At most ``size`` children of this process at a time (each takes one core while it runs)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._semaphore = threading.BoundedSemaphore(size)

    @contextlib.contextmanager
    def held(self, *, wait: float) -> Any:
        if not self._semaphore.acquire(timeout=max(wait, 0.0)):
            raise IsolationBusy
        try:
            yield
        finally:
            self._semaphore.release()


def run_isolated(
    work: Callable[[], dict[str, Any]],
    *,
    timeout: float,
    memory_bytes: int,
    locks: Sequence[Any] = (),
) -> dict[str, Any]:
    """``work()`` run in a forked child, its answer (JSON-able) returned here; ``IsolatedTimeout``
    when it runs past ``timeout`` seconds (the child is killed), ``IsolatedFailed`` when it ends
    without an answer. ``memory_bytes`` is the most the child may map beyond what it inherits.

    ``locks`` are held across the fork, so the child gets them released and not in whatever state
    another thread of the parent had them (a lock held by a thread that does not exist in the child
    would never be released there)."""
    with contextlib.ExitStack() as held:
        # One fork at a time, the pipe's write end closed here before the next: a child forked by
        # another thread in between would hold it open and this answer's end would wait for that child.
        held.enter_context(_forking)
        for lock in locks:
            held.enter_context(lock)
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            raise
        if pid == 0:  # the child: never returns
            _child(work, read_fd=read_fd, write_fd=write_fd, memory_bytes=memory_bytes, locks=locks)
        os.close(write_fd)
    try:
        payload = _read_until(read_fd, deadline=time.monotonic() + timeout)
    finally:
        os.close(read_fd)
    if payload is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _reap_later(pid)
        raise IsolatedTimeout
    if not payload:  # no answer: how the child ended says why
        status = _reap(pid)
        raise IsolatedFailed("memory" if status == _EXIT_OUT_OF_MEMORY else "crashed")
    # The child closed the pipe before exiting: its exit (unmapping its copy of this process, as
    # long as the fork itself) need not delay the answer.
    _reap_later(pid)
    try:
        answer: dict[str, Any] = json.loads(payload)
    except ValueError:  # cut short: the child died while writing
        raise IsolatedFailed("crashed") from None
    return answer


def _read_until(fd: int, *, deadline: float) -> bytes | None:
    """Everything written to ``fd`` until its end, or ``None`` if the end did not come by
    ``deadline``. ``poll`` rather than ``select``: a busy server's descriptors pass 1024."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    chunks: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        if not poller.poll(remaining * 1000):
            continue
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _reap(pid: int) -> int:
    """The child's exit code (negative: the signal that ended it); 0 when something else reaped it."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return 0
    return os.waitstatus_to_exitcode(status)


_exiting: set[int] = set()
_exiting_lock = threading.Lock()


def _reap_later(pid: int) -> None:
    """Collect ``pid`` once it has exited, without waiting for it: each call collects every earlier
    child that has exited since, so at most the children of the last moments are zombies."""
    with _exiting_lock:
        _exiting.add(pid)
        for waiting in list(_exiting):
            try:
                done, _ = os.waitpid(waiting, os.WNOHANG)
            except ChildProcessError:
                done = waiting  # reaped elsewhere
            if done:
                _exiting.discard(waiting)


def _child(
    work: Callable[[], dict[str, Any]],
    *,
    read_fd: int,
    write_fd: int,
    memory_bytes: int,
    locks: Sequence[Any],
) -> NoReturn:
    code = _EXIT_FAILED
    try:
        os.close(read_fd)
        for lock in locks:
            lock.release()
        _detach()
        inherited = psutil.Process().memory_info().vms
        resource.setrlimit(resource.RLIMIT_AS, (inherited + memory_bytes, inherited + memory_bytes))
        payload = json.dumps(work(), allow_nan=False).encode("utf-8")
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view) :]
        os.close(write_fd)  # the parent answers now, while this process is still being torn down
        code = 0
    except MemoryError:
        code = _EXIT_OUT_OF_MEMORY
    except BaseException:  # noqa: BLE001 - the parent reports a crash; nothing may escape a fork
        code = _EXIT_FAILED
    finally:
        os._exit(code)


def _detach() -> None:
    """Make the child unable to disturb its parent: see the module's docstring."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    # The event loop's signal handlers write to a wake-up socket the parent shares.
    # (The forking thread is the child's main thread, the only one allowed to change signals.)
    signal.set_wakeup_fd(-1)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    os.nice(10)
