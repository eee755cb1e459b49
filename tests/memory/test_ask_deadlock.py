"""Concurrent reinforcements of overlapping memories never deadlock (issue 23).

Each ``ask`` reinforces the memories it returns. An ``UPDATE … WHERE id IN (…)`` visits its rows in
the plan's order (a bitmap heap scan: their physical order, as its snapshot sees them), and an update
moves a row, so two asks whose snapshots differ visited shared rows in opposite orders: under 50
concurrent asks, 16 of 119 answered 503 ("deadlock detected"). The interleaving is built here step by
step, with real committed rows and one database connection per party:

- ``holder`` updates memory X (its new version lands physically after Y and Z) and keeps it locked;
  ``gate`` keeps Z locked;
- ask B (X, Z, Y) starts: it reaches X (old place) first and waits for ``holder``;
- ``holder`` commits: B reinforces X and waits for Z;
- ask A (X, Y) starts, its snapshot seeing X at its new place: it reinforces Y, then waits for X;
- ``gate`` commits: B takes Z, then wants Y, which A holds while waiting for B.

On the old code Postgres breaks that cycle by failing one of them; locked in id order, neither waits
for the other in a circle. Every reinforcement counts once.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid

import pytest
from django.db import connection

from apps.memory.models import Memory, MemoryAccess
from apps.memory.services import Scope, TellItem, memories_reinforce, memory_tell

SYSTEMS = ("billing database", "search cluster", "payment gateway", "mail relay", "build farm")
PLACES = ("Oslo", "Lisbon", "Osaka", "Toronto")
FACTS = [
    f"The {system} was moved to the {place} data centre last week." for system in SYSTEMS for place in PLACES
]
WAIT = 20.0


def _raw_connection():
    """A connection of its own (not Django's for this thread), in autocommit off: one transaction."""
    return connection.get_new_connection(connection.get_connection_params())


def _ask(ids: list[uuid.UUID], pids: queue.Queue, outcome: dict[str, object], name: str) -> None:
    """What ``ask`` does with the memories it found, in a thread with its own connection."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pids.put(cursor.fetchone()[0])
        memories_reinforce(hits=[(memory_id, 0.5) for memory_id in ids])
        outcome[name] = "reinforced"
    except Exception as error:
        outcome[name] = repr(error).split("\n")[0]
    finally:
        connection.close()


def _start(ids: list[uuid.UUID], outcome: dict[str, object], name: str) -> tuple[threading.Thread, int]:
    pids: queue.Queue = queue.Queue()
    thread = threading.Thread(target=_ask, args=(ids, pids, outcome, name), daemon=True)
    thread.start()
    return thread, pids.get(timeout=WAIT)


def _waiting_or_done(pid: int) -> bool:
    """Whether ``pid``'s backend, its reinforcement sent, waits for a lock or has finished."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT state, wait_event_type, query FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    if row is None:
        return True  # its thread is done and closed its connection
    state, wait_event_type, query = row
    return "memory_memory" in query and (wait_event_type == "Lock" or state == "idle")


def _settle(pid: int) -> None:
    """Until ``pid``'s backend waits for a lock or is done, twice 0.2 s apart: one that was just let
    go must reach its next lock, if it has one, first."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if _waiting_or_done(pid):
            time.sleep(0.2)
            if _waiting_or_done(pid):
                return
        time.sleep(0.02)
    raise AssertionError(f"backend {pid} neither waited for a lock nor finished in {WAIT} s")


@pytest.mark.django_db(transaction=True)
def test_asks_reinforcing_overlapping_memories_in_crossed_orders_both_answer(make_token) -> None:
    token, _ = make_token("read", "write", name="busy-agent")
    memory_tell(scope=Scope(token=token), items=[TellItem(content=fact, domain="ops") for fact in FACTS])
    holder, gate = _raw_connection(), _raw_connection()
    try:
        with holder.cursor() as cursor:
            cursor.execute(
                "SELECT id, ctid::text FROM memory_memory WHERE token_id = %s ORDER BY ctid LIMIT 1",
                [token.pk],
            )
            x, x_at = cursor.fetchone()
            # X moves: updated until its newest version lies after two other rows (a page that has
            # room takes the first new versions; then they go to a page further on).
            between: list[uuid.UUID] = []
            for _ in range(20):
                cursor.execute(
                    "UPDATE memory_memory SET importance = importance WHERE id = %s RETURNING ctid::text", [x]
                )
                x_moved_to = cursor.fetchone()[0]
                cursor.execute(
                    "SELECT id FROM memory_memory WHERE token_id = %s AND ctid > %s::tid AND ctid < %s::tid "
                    "ORDER BY ctid",
                    [token.pk, x_at, x_moved_to],
                )
                between = [row[0] for row in cursor.fetchall()]
                if len(between) >= 2:
                    break
        assert len(between) >= 2, (x_at, x_moved_to)
        z, y = between[0], between[-1]
        with gate.cursor() as cursor:
            cursor.execute("SELECT id FROM memory_memory WHERE id = %s FOR UPDATE", [z])

        outcome: dict[str, object] = {}
        b, b_pid = _start([x, z, y], outcome, "B")
        _settle(b_pid)
        holder.commit()
        _settle(b_pid)
        a, a_pid = _start([x, y], outcome, "A")
        _settle(a_pid)
        gate.commit()
        for thread in (a, b):
            thread.join(timeout=WAIT)
    finally:
        holder.close()
        gate.close()

    assert outcome == {"A": "reinforced", "B": "reinforced"}
    counts = dict(Memory.objects.filter(id__in=[x, y, z]).values_list("id", "access_count"))
    assert counts == {x: 2, y: 2, z: 1}
    assert MemoryAccess.objects.filter(memory__token=token).count() == 5
