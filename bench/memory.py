"""Agent memory at scale (issue 13): ``ask`` against the raw pgvector HNSW query for the same vector,
in the same run (goal: ask ≤ 3x the raw query), and ``tell`` throughput in memories/s.

One scope (one API token) holds ``BENCH_MEMORIES`` memories (default 100,000, the issue's figure;
set it lower for a quick run): random unit vectors inserted with ``bulk_create`` in batches while the
HNSW index is dropped, then the index rebuilt as the migration defines it (``hnsw_cosine_index``:
m=16, ef_construction=64, cosine), and the table analysed. Then real memories are told through
``services.memory_tell`` — the tell figures: single calls, batches of 100 and of 500 (distinct
sentences, so each one is embedded and checked for a near-duplicate against the whole scope).

The raw query's recall@10 against an exact scan is printed first (HNSW is approximate; random
vectors are its hard case). Timed per question, the variants taking turns within each round (drift
on a busy machine hits all alike), with the iterative-scan settings of ``hnsw_filtered_scan`` set
for the whole run:

- ``raw_hnsw``: ``SELECT id … ORDER BY embedding <=> %s LIMIT 10``, the precomputed question vector;
- ``candidates_sql``: the SQL ``memory_ask`` sends for its candidates (scope filter, 50 rows, every
  column but the embedding), executed with a cursor: what Python and the scoring add is the rest;
- ``memory_ask`` and ``ask_result`` (``memory_ask`` + the extractive answer + reinforcement: what
  REST and MCP run), each with the question's embedding precomputed (patched in, as the raw query gets
  it) and with the real model call (``embed_text``, not cached).

Then where ``ask_result``'s time goes, step by step (settings reads, the candidate query, scoring,
the answer, reinforcement; "other" holds the winners made into models), and EXPLAIN ANALYZE of the
raw query, of ask's candidate query and of one reinforcement UPDATE.
Everything runs in one transaction that is rolled back; the answer's sentence embeddings are cached
under the bench's own Redis keys, deleted at the end. Needs a migrated database (``make run`` once).
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

import numpy as np
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from pgvector import Vector

import apps.embeddings.services as embedding_services
from apps.core.redis import get_redis
from apps.core.services import api_token_create
from apps.embeddings.backends import EMBEDDING_DIMENSION
from apps.memory import answers, selectors
from apps.memory.models import Memory, MemorySettings, MemoryType
from apps.memory.services import Scope, TellItem, memory_tell
from bench.__main__ import percentile

SIZE = int(os.environ.get("BENCH_MEMORIES", "100000"))
INSERT_BATCH = 1000  # larger batches are slower: psycopg's parameter conversion is not linear
SINGLE_TELLS, BATCH_TELLS = 100, ((100, 3), (500, 2))  # (batch size, calls)
QUESTIONS, WARMUP, ROUNDS = 20, 10, 200
GOAL_RATIO = 3.0
SEED = 13

PEOPLE = (
    "Alice Moreau",
    "Bilal Haddad",
    "Chen Wei",
    "Dana Kowalski",
    "Emeka Obi",
    "Farah Nasser",
    "Goran Petrovic",
    "Hana Sato",
    "Ines Duarte",
    "Jonas Berg",
    "Keiko Mori",
    "Luca Romano",
    "Maya Levin",
    "Nils Ek",
    "Olu Adeyemi",
    "Priya Raman",
    "Quinn Walsh",
    "Rosa Jimenez",
    "Sven Lund",
    "Tariq Aziz",
    "Uma Iyer",
    "Viktor Novak",
    "Wen Li",
    "Yara Haddad",
    "Zofia Nowak",
    "Arjun Mehta",
    "Bea Fischer",
    "Carlos Ruiz",
    "Dmitri Volkov",
    "Elif Kaya",
)
SYSTEMS = (
    "billing database",
    "search cluster",
    "payment gateway",
    "mail relay",
    "build farm",
    "data warehouse",
    "login service",
    "image cache",
    "job queue",
    "metrics store",
    "backup vault",
    "DNS resolvers",
    "VPN concentrator",
    "message broker",
    "feature flag service",
    "ticketing system",
    "wiki",
    "CI runners",
    "object storage",
    "print server",
)
ACTIONS = (
    "migrated",
    "upgraded",
    "restarted",
    "audited",
    "resized",
    "patched",
    "moved",
    "backed up",
    "decommissioned",
    "load-tested",
    "encrypted",
    "rebuilt",
)
PLACES = (
    "Oslo",
    "Frankfurt",
    "Lisbon",
    "Osaka",
    "Toronto",
    "Nairobi",
    "Santiago",
    "Dublin",
    "Mumbai",
    "Sydney",
    "Warsaw",
    "Seoul",
    "Cape Town",
    "Helsinki",
    "Lima",
)
WHEN = ("on Monday", "on Tuesday", "on Wednesday", "on Thursday", "on Friday", "last weekend", "last night")
WHY = (
    "after the outage",
    "for the security audit",
    "to cut hosting costs",
    "before the product launch",
    "because the disks were failing",
    "at the customer's request",
    "to meet the new latency target",
    "as part of the yearly review",
)


class _Rollback(Exception):
    pass


def _unmigrated() -> bool:
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def _facts(count: int, rng: random.Random) -> list[tuple[str, str]]:
    """``count`` facts as ``(statement, question about it)``, no two answering the same question."""
    slots = (PEOPLE, ACTIONS, SYSTEMS, PLACES, WHEN, WHY)
    asked: set[tuple[str, str, str]] = set()
    facts = []
    while len(facts) < count:
        person, action, system, place, when, why = (words[rng.randrange(len(words))] for words in slots)
        if (person, system, place) in asked:
            continue  # one fact per question
        asked.add((person, system, place))
        facts.append(
            (
                f"{person} {action} the {system} in {place} {when} {why}.",
                f"What did {person} do to the {system} in {place}, and why?",
            )
        )
    return facts


def _bulk_load(token_id: int, size: int) -> None:
    """``size`` memories with random unit vectors (and plausible ages, counts, importance, decay)."""
    rng = np.random.default_rng(SEED)
    domains = ("", "ops", "travel", "research", "personal")
    now = timezone.now()
    for start in range(0, size, INSERT_BATCH):
        count = min(INSERT_BATCH, size - start)
        vectors = rng.standard_normal((count, EMBEDDING_DIMENSION), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ages = rng.uniform(0, 60 * 86400, count)
        rows = []
        for offset in range(count):
            number = start + offset
            content = f"Background note {number} about topic {number % 997} of the archive."
            created = now - timedelta(seconds=float(ages[offset]))
            rows.append(
                Memory(
                    token_id=token_id,
                    content=content,
                    content_hash=hashlib.sha256(content.encode()).hexdigest(),
                    embedding=vectors[offset],
                    domain=domains[number % len(domains)],
                    type=MemoryType.SHORT_TERM,
                    concepts=["background", f"topic{number % 997}"],
                    importance=float(rng.uniform(0.2, 0.9)),
                    access_count=int(rng.integers(0, 30)),
                    decay_factor=float(rng.uniform(0.3, 1.0)),
                    created_at=created,
                    valid_from=created,
                )
            )
        Memory.objects.bulk_create(rows)


def _hnsw_rebuilt(load: Callable[[], None]) -> tuple[float, float]:
    """Drop the embedding index, ``load()``, build the index again as the migration defines it:
    (seconds loading, seconds building)."""
    index = next(index for index in Memory._meta.indexes if index.name == "memory_embedding")
    with connection.schema_editor() as editor:
        editor.remove_index(Memory, index)
    started = time.perf_counter()
    load()
    loaded = time.perf_counter() - started
    with connection.cursor() as cursor:
        # The graph must fit in maintenance_work_mem or the build slows down by an order of magnitude.
        cursor.execute("SET LOCAL maintenance_work_mem = '1GB'")
        # The web's DATABASE_STATEMENT_TIMEOUT is meant for requests, not for building an index.
        cursor.execute("SET LOCAL statement_timeout = 0")
        # The rows' deferred foreign-key checks run now: an index cannot be built with them pending.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    started = time.perf_counter()
    with connection.schema_editor() as editor:
        editor.add_index(Memory, index)
    built = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        cursor.execute(f"ANALYZE {Memory._meta.db_table}")  # planner statistics, as autovacuum would
    return loaded, built


def _tell_figures(report, scope: Scope, facts: list[str]) -> None:
    def tell(contents: list[str]) -> list[dict]:
        return memory_tell(scope=scope, items=[TellItem(content=text, domain="ops") for text in contents])

    position = 0
    plans = [(1, SINGLE_TELLS), *BATCH_TELLS]
    for batch, calls in plans:
        samples, statuses = [], []
        for _ in range(calls):
            contents = facts[position : position + batch]
            position += batch
            started = time.perf_counter()
            results = tell(contents)
            samples.append(time.perf_counter() - started)
            statuses.extend(result["status"] for result in results)
        name = "single" if batch == 1 else f"batch_{batch}"
        report(f"memory.tell_{name}(per call)", samples)
        print(
            f"memory.tell_{name}.throughput: {len(statuses) / sum(samples):.1f} memories/s "
            f"({statuses.count('stored')} stored, {statuses.count('reinforced')} reinforced "
            f"as near-duplicates, {calls} calls)",
            flush=True,
        )


@contextmanager
def _precomputed(vectors: dict[str, np.ndarray]) -> Iterator[None]:
    """``ask`` with the question's embedding already computed (as the raw query receives it)."""
    originals = selectors.embed_text, answers.embed_text

    def embed_text(*, text: str) -> np.ndarray:
        return vectors[text]

    selectors.embed_text = answers.embed_text = embed_text
    try:
        yield
    finally:
        selectors.embed_text, answers.embed_text = originals


def _candidates(scope: Scope, vector: np.ndarray):
    """The queryset behind ``memory_ask``'s candidate query (a question with no domain, type, agent or
    session: the bench's shape), with its values; ``memory_ask`` runs it as a compiled template."""
    shape = selectors._AskShape(
        agent=False,
        session=False,
        domain=False,
        memory_type=False,
        include_superseded=False,
        candidates=selectors.MIN_CANDIDATES,
    )
    values = {
        "token_id": scope.token.pk,
        "agent": "",
        "session": "",
        "domain": "",
        "memory_type": "",
        "now": timezone.now(),
        "vector": Vector(vector).to_text(),
    }
    return selectors._ask_candidates(shape=shape, **values)


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(value)) for value in vector) + "]"


def _ask_figures(report, scope: Scope, questions: list[tuple[str, str]]) -> dict[str, list[float]]:
    table = Memory._meta.db_table
    raw_sql = f"SELECT id FROM {table} ORDER BY embedding <=> %s::vector LIMIT 10"
    vectors = {question: embedding_services.embed_text(text=question) for _, question in questions}
    texts = {question: _vector_text(vector) for question, vector in vectors.items()}
    candidate_sql = {q: _candidates(scope, v).query.sql_with_params() for q, v in vectors.items()}
    expected = {question: fact for fact, question in questions}
    _recall(questions, texts)
    first_hits: list[bool] = []
    misses: dict[str, dict] = {}

    def raw(question: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(raw_sql, [texts[question]])
            assert len(cursor.fetchall()) == 10

    def candidates(question: str) -> None:
        sql, params = candidate_sql[question]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            assert len(cursor.fetchall()) == selectors.MIN_CANDIDATES

    def ask_alone(question: str) -> None:
        assert selectors.memory_ask(scope=scope, question=question)

    def ask_full(question: str) -> None:
        result = answers.ask_result(scope=scope, question=question)
        first_hits.append(result["memories"][0]["content"] == expected[question])
        if not first_hits[-1]:
            misses[question] = result

    def precomputed(call: Callable[[str], None]) -> Callable[[str], None]:
        def wrapped(question: str) -> None:
            with _precomputed(vectors):
                call(question)

        return wrapped

    variants: list[tuple[str, Callable[[str], None]]] = [
        ("raw_hnsw(LIMIT 10)", raw),
        ("candidates_sql(scope filter, LIMIT 50, all columns)", candidates),
        ("memory_ask(question embedding precomputed)", precomputed(ask_alone)),
        ("ask_result(question embedding precomputed)", precomputed(ask_full)),
        ("memory_ask(question embedded)", ask_alone),
        ("ask_result(question embedded)", ask_full),
        ("question_embedding(embed_text)", lambda question: embedding_services.embed_text(text=question)),
    ]
    names = [name for name, _ in variants]
    order = [question for _, question in questions]
    for round_ in range(WARMUP):
        for _, call in variants:
            call(order[round_ % len(order)])
    first_hits.clear()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(ROUNDS):
        question = order[round_ % len(order)]
        for name, call in variants:
            started = time.perf_counter()
            call(question)
            samples[name].append(time.perf_counter() - started)
    for name in names:
        report(f"memory.{name}", samples[name])
    _ask_steps(report, scope, order, vectors)
    print(
        f"memory.ask_told_fact_first: {sum(first_hits)}/{len(first_hits)} asks "
        "returned the fact asked about first",
        flush=True,
    )
    for question, result in misses.items():
        first = result["memories"][0]
        told = next((hit for hit in result["memories"] if hit["content"] == expected[question]), None)
        print(
            f"memory.ask_miss: {question!r} -> first {first['content']!r} "
            f"(relevance {first['relevance']:.3f}, scores {first['scores']}); the fact: "
            + (f"relevance {told['relevance']:.3f}, scores {told['scores']}" if told else "not returned"),
            flush=True,
        )
    return samples


@contextmanager
def _steps_timed(durations: dict[str, float]) -> Iterator[None]:
    """Add the time spent in each step of ``ask_result`` to ``durations`` (by patching the names
    ``selectors`` and ``answers`` call; restored on exit)."""
    patched: list[tuple[object, str, object]] = []

    def timed_call(step: str, function: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                durations[step] = durations.get(step, 0.0) + time.perf_counter() - started

        return wrapper

    @contextmanager
    def scan_timed() -> Iterator[None]:
        started = time.perf_counter()
        with original_scan():
            yield
        durations["candidates(query)"] = time.perf_counter() - started

    original_scan = selectors.hnsw_filtered_scan
    settings_current = MemorySettings.__dict__["current"]
    replacements = [
        (selectors, "hnsw_filtered_scan", scan_timed),
        (selectors, "relevance_components", timed_call("scoring", selectors.relevance_components)),
        (selectors, "concepts_extract", timed_call("question_concepts", selectors.concepts_extract)),
        (answers, "answer_compose", timed_call("answer", answers.answer_compose)),
        (answers, "memories_reinforce", timed_call("reinforce", answers.memories_reinforce)),
        (
            MemorySettings,
            "current",
            classmethod(timed_call("settings_reads", settings_current.__func__)),
        ),
    ]
    for owner, name, replacement in replacements:
        patched.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, original in patched:
            setattr(owner, name, original)


def _ask_steps(report, scope: Scope, questions: list[str], vectors: dict[str, np.ndarray]) -> None:
    """``ask_result`` (question embedding precomputed) step by step; "other" is the rest."""
    steps: dict[str, list[float]] = {}
    with _precomputed(vectors):
        for round_ in range(ROUNDS // 2):
            durations: dict[str, float] = {}
            with _steps_timed(durations):
                started = time.perf_counter()
                answers.ask_result(scope=scope, question=questions[round_ % len(questions)])
                total = time.perf_counter() - started
            durations["other"] = total - sum(durations.values())
            for step, seconds in durations.items():
                steps.setdefault(step, []).append(seconds)
    for step, samples in steps.items():
        report(f"memory.ask_result.step.{step}", samples)


def _recall(questions: list[tuple[str, str]], texts: dict[str, str]) -> None:
    """The raw query's recall@10 against an exact scan, and where the told fact ranks in each."""
    table = Memory._meta.db_table
    approximate_sql = f"SELECT id, content FROM {table} ORDER BY embedding <=> %s::vector LIMIT 10"
    # "+ 0" hides the ordering from the index: an exact scan over every row.
    exact_sql = f"SELECT id, content FROM {table} ORDER BY (embedding <=> %s::vector) + 0 LIMIT 10"
    shared = exact_first = approximate_first = 0
    with connection.cursor() as cursor:
        for fact, question in questions:
            cursor.execute(approximate_sql, [texts[question]])
            approximate = cursor.fetchall()
            cursor.execute(exact_sql, [texts[question]])
            exact = cursor.fetchall()
            shared += len({row[0] for row in approximate} & {row[0] for row in exact})
            exact_first += exact[0][1] == fact
            approximate_first += approximate[0][1] == fact
    print(
        f"memory.hnsw_recall@10: {shared / (10 * len(questions)):.3f} (raw query against an exact scan, "
        f"{len(questions)} questions); the told fact is the nearest memory for {exact_first} of them "
        f"(exact), {approximate_first} (HNSW)",
        flush=True,
    )


def _print_ratio(name: str, ask: list[float], raw: list[float]) -> None:
    ratios = {label: percentile(ask, q) / percentile(raw, q) for label, q in (("p50", 0.50), ("p95", 0.95))}
    verdict = "met" if max(ratios.values()) <= GOAL_RATIO else "NOT met"
    print(
        f"memory.ratio({name}/raw_hnsw): p50 {ratios['p50']:.2f}x p95 {ratios['p95']:.2f}x "
        f"(goal ≤ {GOAL_RATIO}x: {verdict})",
        flush=True,
    )


def _explain(scope: Scope, question: str) -> None:
    """Where the time goes, by the planner's own account (buffers and timings)."""
    vector = embedding_services.embed_text(text=question)
    table = Memory._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM {table} ORDER BY embedding <=> %s::vector LIMIT 10",
            [_vector_text(vector)],
        )
        plans = {"raw_hnsw": "\n".join(row[0] for row in cursor.fetchall())}
    plans["ask candidates"] = _candidates(scope, vector).explain(analyze=True, buffers=True)
    top = [row[0] for row in _candidates(scope, vector)[:10]]
    with connection.cursor() as cursor:
        # What memories_reinforce sends for ask's 10 results (as an UPDATE with F() expressions).
        cursor.execute(
            f"EXPLAIN (ANALYZE, BUFFERS) UPDATE {table} SET access_count = access_count + 1, "
            "last_accessed_at = now(), decay_factor = LEAST(decay_factor * 1.1, 1.0) WHERE id = ANY(%s)",
            [top],
        )
        plans["reinforce UPDATE (10 rows)"] = "\n".join(row[0] for row in cursor.fetchall())
    for name, plan in plans.items():
        print(f"memory.explain[{name}]:", flush=True)
        shortened = re.sub(r"'\[[^']*\]'::vector", "'[…384 floats]'::vector", plan)
        shortened = re.sub(r"'\{[0-9a-f,-]{300,}\}'", "'{…10 ids}'", shortened)
        for line in shortened.splitlines():
            print(f"    {line}", flush=True)


def run(report) -> None:
    if _unmigrated():
        print("memory: skipped: the database is not migrated (start `make run` once, or `manage.py migrate`)")
        return
    # One info line per tell would bury the figures.
    logging.getLogger("apps.memory.services").setLevel(logging.WARNING)
    namespace = uuid.uuid4().hex[:8]
    original_key = embedding_services._cache_key
    embedding_services._cache_key = lambda model, text: f"bench-{namespace}:" + original_key(model, text)
    rng = random.Random(SEED)
    told_count = SINGLE_TELLS + sum(batch * calls for batch, calls in BATCH_TELLS)
    facts = _facts(told_count, rng)
    # The settings row exists in any database that has answered an ask. Created inside the bench's
    # transaction, it would be an uncommitted change, which is read from the database on every ask.
    MemorySettings.current()
    try:
        with transaction.atomic():
            token, _ = api_token_create(name=f"bench-memory-{namespace}", scopes=["read", "write"])
            scope = Scope(token=token)
            # Every connection has hnsw_filtered_scan's settings (DATABASES options), the raw query too.
            loaded, built = _hnsw_rebuilt(lambda: _bulk_load(token.pk, SIZE))
            print(
                f"memory.setup: {SIZE} memories with random vectors inserted in {loaded:.1f} s "
                f"({SIZE / loaded:.0f}/s, bulk_create by {INSERT_BATCH}); HNSW index built in {built:.1f} s",
                flush=True,
            )
            _tell_figures(report, scope, [fact for fact, _ in facts])
            stored = Memory.objects.filter(token=token).count()
            print(f"memory.scope: {stored} memories in the scope", flush=True)
            # Questions about facts told in single calls (their person, system and place), one per fact.
            samples = _ask_figures(report, scope, facts[:QUESTIONS])
            raw = samples["raw_hnsw(LIMIT 10)"]
            for name in samples:
                if name.startswith(("memory_ask", "ask_result")):
                    _print_ratio(name, samples[name], raw)
            _explain(scope, facts[0][1])
            raise _Rollback
    except _Rollback:
        pass
    finally:
        embedding_services._cache_key = original_key
        keys = list(get_redis().scan_iter(f"bench-{namespace}:*"))
        if keys:
            get_redis().delete(*keys)
