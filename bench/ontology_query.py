"""What running each ``ontology_query`` in a forked child costs (issue 23), on a generated ontology
of ``BENCH_ONTOLOGY_QUERY_CLASSES`` classes (default 1,000; ``bench/ontology.py``'s generator):

- a typical SELECT evaluated in this process (``query_answer``, the work alone) and through
  ``ontology_query`` (fork, evaluate, answer over a pipe, reap): the difference is the isolation;
- ``run_isolated`` of nothing: the fork, exit and reap alone;
- the issue's ``REGEX("aaa…!", "^(a+)+$")`` with 100 ``a``s, evaluated once per triple of the closure
  (RE2: no backtracking; the time is the number of triples);
- how late a thread of this process wakes (asked to sleep 5 ms, as the event loop serving
  ``/healthz`` would) while a child spends 2 s in Python's backtracking ``re`` and is killed: the
  delay the web process's other requests see. Run in the thread itself, the same regex would hold
  the interpreter lock for the whole 2 s.

Needs a migrated database; the classes live in one transaction that is rolled back.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable

from django.db import transaction

from apps.ontology import graph as graph_module
from apps.ontology import isolation
from apps.ontology.graph import ontology_graph
from apps.ontology.models import OntologyClass, OntologyState
from apps.ontology.sparql import MEMORY_LIMIT_BYTES, ROW_CAP, ontology_query, query_answer
from bench import timed
from bench.ontology import generated

SIZE = int(os.environ.get("BENCH_ONTOLOGY_QUERY_CLASSES", "1000"))
ROUNDS = 50
TYPICAL = (
    "SELECT ?class ?label WHERE { ?class rdfs:subClassOf ?parent . ?class rdfs:label ?label . "
    "?parent rdfs:label ?name FILTER(CONTAINS(LCASE(?name), 'access')) } LIMIT 50"
)
REDOS = 'ASK { ?s ?p ?o . FILTER(regex("' + "a" * 100 + '!", "^(a+)+$")) }'


class _Rollback(Exception):
    pass


def _wake_delays(work: Callable[[], object], *, nap: float = 0.005) -> list[float]:
    """How much later than asked a napping thread woke, each time, while ``work`` ran."""
    delays: list[float] = []
    done = threading.Event()

    def napper() -> None:
        while not done.is_set():
            started = time.perf_counter()
            time.sleep(nap)
            delays.append(time.perf_counter() - started - nap)

    thread = threading.Thread(target=napper)
    thread.start()
    try:
        work()
    finally:
        done.set()
        thread.join()
    return delays


def _backtracking() -> dict[str, object]:
    return {"matched": re.search(r"^(a+)+$", "a" * 40 + "!") is not None}


def run(report: Callable[[str, list[float]], None]) -> None:
    classes, _ = generated(SIZE)
    try:
        with transaction.atomic():
            OntologyClass.objects.bulk_create(classes, batch_size=1000)
            state, _ = OntologyState.objects.get_or_create(pk=1)
            state.version += 1_000_000  # a version no process has built
            state.save(update_fields=["version"])
            graph = ontology_graph()
            ontology_query(sparql=TYPICAL)  # warm: the child inherits a warm parser
            report(
                f"ontology_query {SIZE} classes, in process",
                timed(lambda: query_answer(TYPICAL, graph, row_cap=ROW_CAP, time_limit=5.0), ROUNDS),
            )
            report(
                f"ontology_query {SIZE} classes, forked child",
                timed(lambda: ontology_query(sparql=TYPICAL), ROUNDS),
            )
            report(
                "run_isolated(nothing): fork, exit, reap",
                timed(
                    lambda: isolation.run_isolated(dict, timeout=5, memory_bytes=MEMORY_LIMIT_BYTES), ROUNDS
                ),
            )
            report(
                "REGEX ^(a+)+$ on 100 a's (RE2), forked child",
                timed(lambda: ontology_query(sparql=REDOS), 10),
            )

            def killed() -> None:
                try:
                    isolation.run_isolated(_backtracking, timeout=2.0, memory_bytes=MEMORY_LIMIT_BYTES)
                except isolation.IsolatedTimeout:
                    pass

            report("a 5 ms nap's lateness while a child backtracks for 2 s", _wake_delays(killed))
            raise _Rollback
    except _Rollback:
        pass
    graph_module._cache.clear()
