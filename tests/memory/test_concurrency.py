"""Concurrent asks never lose a count: 4 OS processes ask the same question 50 times each through
``POST /v1/memory/ask``, and the memory's access count is exactly 200 higher (``F()`` updates)."""

from __future__ import annotations

import multiprocessing

import pytest

from apps.memory.models import Memory, MemoryAccess
from apps.memory.services import Scope, TellItem, memory_tell
from tests.mcp_server.conftest import subprocess_environment
from tests.memory.ask_process import ask_repeatedly

SPAWN = multiprocessing.get_context("spawn")
PROCESSES, ASKS = 4, 50
FACT = "The nightly backup of the billing database is copied to the Oslo data centre at 02:30."


@pytest.mark.django_db(transaction=True)
def test_four_processes_asking_fifty_times_add_exactly_two_hundred_accesses(make_token) -> None:
    token, raw = make_token("read", "write", name="racing-agent")
    told = memory_tell(scope=Scope(token=token), items=[TellItem(content=FACT, domain="ops")])
    memory = Memory.objects.get(pk=told[0]["id"])
    before_count, before_accesses = memory.access_count, MemoryAccess.objects.filter(memory=memory).count()

    # A per-token budget would refuse some of 200 asks in a few seconds: not what is tested here.
    env = subprocess_environment(CORTEX_TOKEN_REQUESTS_PER_MINUTE="0", LOG_LEVEL="WARNING")
    messages, start = SPAWN.Queue(), SPAWN.Event()
    hosts = [
        SPAWN.Process(target=ask_repeatedly, args=(env, raw, [FACT] * ASKS, messages, start))
        for _ in range(PROCESSES)
    ]
    for host in hosts:
        host.start()
    try:
        ready = [messages.get(timeout=120) for _ in hosts]
        assert sorted(pid for _, pid in ready) == sorted(host.pid for host in hosts)
        start.set()
        finished = [messages.get(timeout=300) for _ in hosts]
    finally:
        for host in hosts:
            host.join(timeout=60)
    assert [host.exitcode for host in hosts] == [0] * PROCESSES

    # The processes really asked at the same time: every one started before any other finished.
    windows = [window for _, _, window in finished]
    assert max(began for began, _ in windows) < min(ended for _, ended in windows), windows
    answers = [answer for _, host_answers, _ in finished for answer in host_answers]
    # Every ask of every process returned the memory, first.
    assert answers == [(200, str(memory.pk))] * PROCESSES * ASKS
    memory.refresh_from_db()
    assert memory.access_count - before_count == PROCESSES * ASKS == 200
    assert MemoryAccess.objects.filter(memory=memory).count() - before_accesses == 200
    assert memory.decay_factor == 1.0
