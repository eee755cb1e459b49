"""Memory ask at 10k, 100k and 1M memories against raw pgvector HNSW and FAISS on the same vectors.

Size knobs (environment):

- ``BENCH_SCALE_MEMORY_SIZES``: memories per curve point, default ``10000,100000,1000000``
  (``2000,20000`` runs in a minute);
- ``BENCH_SCALE_MEMORY_SENTENCES``: real sentences embedded with the real model, default 3000;
- ``BENCH_SCALE_MEMORY_QUESTIONS``: held-out question vectors, default 100 (half real questions
  embedded by the model, half perturbed held-out sentence vectors);
- ``BENCH_SCALE_MEMORY_ROUNDS``: timed rounds per size, default 200 (ask, the raw query and FAISS
  HNSW take turns in each round, so drift on a busy machine hits them alike; ``_latencies`` and
  ``Engines.timed`` say what else keeps the comparison fair);
- ``BENCH_SCALE_MEMORY_EF``: ``hnsw.ef_search`` values compared at the largest size, default
  ``40,100,200``.

The vectors: ``SENTENCES`` distinct statements from bench/memory.py's generator, embedded with the
real model, are the first memories; every further memory is one of them perturbed (Gaussian noise
shaped like the real embeddings' own covariance, scaled so its cosine to the sentence it came from is
about 0.80 to 0.95, then renormalised). Questions are never stored: real questions about the stored
statements (embedded by the model) and perturbed copies of stored statements from a separate random
stream. Exact search is numpy's brute force cosine over the same float32 vectors.

Per size, in one transaction rolled back at the end: one API token (one scope) gets every memory by a
binary COPY while the HNSW index is dropped; the index is then built as the migration defines it
(``hnsw_cosine_index``, with ``maintenance_work_mem`` large enough for an in-memory build) and the
table analysed. FAISS builds ``IndexHNSWFlat`` (M=16, efConstruction=64, inner product on unit
vectors = cosine, efSearch = the connection's ``hnsw.ef_search``) and ``IndexFlatIP`` over the same
vectors. Dropping the index locks ``memory_memory`` for the run: point the bench at its own database.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import struct
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from pgvector import Vector

from apps.core.services import api_token_create
from apps.embeddings.backends import EMBEDDING_DIMENSION
from apps.embeddings.services import embed_texts
from apps.memory import selectors
from apps.memory.models import Memory, MemorySettings, MemoryType
from apps.memory.services import Scope
from apps.memory.text import concepts_extract
from bench.__main__ import percentile
from bench.memory import _facts, _unmigrated
from bench.scale.table import ms, print_table, ratio

if TYPE_CHECKING:
    import faiss


def _ints(name: str, default: str) -> list[int]:
    return [int(value) for value in os.environ.get(name, default).split(",") if value.strip()]


SIZES = _ints("BENCH_SCALE_MEMORY_SIZES", "10000,100000,1000000")
SENTENCES = int(os.environ.get("BENCH_SCALE_MEMORY_SENTENCES", "3000"))
QUESTIONS = int(os.environ.get("BENCH_SCALE_MEMORY_QUESTIONS", "100"))
ROUNDS = int(os.environ.get("BENCH_SCALE_MEMORY_ROUNDS", "200"))
EF_SEARCHES = _ints("BENCH_SCALE_MEMORY_EF", "40,100,200")
WARMUP = 20
TOP = 10
GOAL_RATIO, GOAL_RECALL = 3.0, 0.95
# A perturbed memory's cosine to the sentence it came from: near enough to read as "another
# sentence of that kind", far enough that its copies do not collapse onto one point.
COSINE_RANGE = (0.80, 0.95)
SEED = 27
# Row ids are this prefix and the row's number, so a pgvector result maps back to the numpy row.
ID_PREFIX = 0xB5CA1E << 100


class _Rollback(Exception):
    pass


@dataclass
class Dataset:
    vectors: np.ndarray  # (largest size, 384) float32, unit rows; row n is memory n
    sentences: list[str]  # the real statements; memory n came from sentences[n % len(sentences)]
    concepts: list[list[str]]  # concepts_extract of each sentence, as tell stores them
    questions: np.ndarray  # (QUESTIONS, 384) float32, unit rows, never stored
    question_texts: list[str]  # what each question asks (the model's input for the embedded line)
    cosines: tuple[float, float, float]  # perturbed memories' cosine to their sentence: p5, p50, p95


@dataclass
class Figures:
    """One size's measurements: latency samples, recall@10, build seconds, bytes on disk."""

    size: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    recall: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    disk: dict[str, int] = field(default_factory=dict)
    ef_rows: list[list[object]] = field(default_factory=list)
    answered: list[int] = field(default_factory=list)


ASK = "CortexWeb `memory_ask` (question vector precomputed)"
ASK_EMBEDDED = "CortexWeb `memory_ask` (question embedded by the model)"
RAW = "pgvector HNSW, raw `ORDER BY embedding <=> q LIMIT 10`"
FAISS_HNSW = "FAISS `IndexHNSWFlat` (M=16, efConstruction=64)"
FAISS_FLAT = "FAISS `IndexFlatIP` (exact)"
ENGINES = (ASK, ASK_EMBEDDED, RAW, FAISS_HNSW, FAISS_FLAT)


def _dataset(size: int) -> Dataset:
    """``size`` unit vectors: the real sentences' embeddings first, then perturbed copies of them."""
    facts = _facts(SENTENCES, random.Random(SEED))
    sentences = [statement for statement, _ in facts]
    real = embed_texts(texts=sentences).astype(np.float32)
    rng = np.random.default_rng(SEED)
    half = QUESTIONS // 2
    asked = rng.choice(min(SENTENCES, size), size=QUESTIONS, replace=False)
    real_questions = embed_texts(texts=[facts[int(n)][1] for n in asked[:half]]).astype(np.float32)
    # Noise with the real embeddings' covariance: it moves a vector the ways sentences differ, not
    # into the hundreds of directions no sentence takes (isotropic noise would make every memory
    # as far from every other as random vectors are: the hardest case for any graph index).
    centred = real - real.mean(axis=0)
    shape = np.linalg.cholesky(centred.T @ centred / len(real) + 1e-6 * np.eye(EMBEDDING_DIMENSION))
    mean_norm = float(np.sqrt(np.trace(centred.T @ centred) / len(real)))

    def perturbed(bases: np.ndarray, noise_rng: np.random.Generator) -> np.ndarray:
        cosine = noise_rng.uniform(*COSINE_RANGE, size=(len(bases), 1)).astype(np.float32)
        radius = np.sqrt(1.0 / cosine**2 - 1.0)
        noise = noise_rng.standard_normal((len(bases), EMBEDDING_DIMENSION), dtype=np.float32) @ shape.T
        moved = bases + noise * (radius / mean_norm)
        return (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)

    vectors = np.empty((size, EMBEDDING_DIMENSION), dtype=np.float32)
    stored_real = min(SENTENCES, size)
    vectors[:stored_real] = real[:stored_real]
    chunk = 100_000
    for start in range(stored_real, size, chunk):
        stop = min(start + chunk, size)
        vectors[start:stop] = perturbed(real[np.arange(start, stop) % SENTENCES], rng)
    held_out = perturbed(real[asked[half:]], np.random.default_rng(SEED + 1))
    sample = np.arange(stored_real, size)[:100_000]
    cosines = np.einsum("ij,ij->i", vectors[sample], real[sample % SENTENCES]) if len(sample) else np.ones(1)
    return Dataset(
        vectors=vectors,
        sentences=sentences,
        concepts=[concepts_extract(sentence) for sentence in sentences],
        questions=np.vstack([real_questions, held_out]),
        question_texts=[facts[int(n)][1] for n in asked],
        cosines=tuple(float(value) for value in np.percentile(cosines, [5, 50, 95])),
    )


# --- Loading -------------------------------------------------------------------------------------

_COLUMNS = (
    "id",
    "token_id",
    "agent",
    "session",
    "shared",
    "content",
    "content_hash",
    "embedding",
    "domain",
    "type",
    "concepts",
    "metadata",
    "chunk_index",
    "importance",
    "access_count",
    "decay_factor",
    "created_at",
    "pinned",
    "valid_from",
    "version",
)
# Postgres' binary COPY format, written by hand: psycopg's write_row spent more time converting a
# row's 20 values than Postgres spent storing it (a million rows are the bench's longest step).
_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_TRAILER = struct.pack(">h", -1)
_VARCHAR_OID = 1043
_POSTGRES_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
# importance, access_count, decay_factor, created_at, pinned, valid_from, version: each length-prefixed.
_TAIL = struct.Struct(">idiiidiqi?iqii")


def _field(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


def _varchar_array(values: list[str]) -> bytes:
    """A ``varchar[]`` in Postgres' binary form: dimensions, null flag, element type, length and
    lower bound of the one dimension, then the elements."""
    if not values:
        return struct.pack(">iiI", 0, 0, _VARCHAR_OID)
    elements = b"".join(_field(value.encode()) for value in values)
    return struct.pack(">iiIii", 1, 0, _VARCHAR_OID, len(values), 1) + elements


def _copy(token_id: int, data: Dataset, size: int) -> None:
    """Rows 0 … ``size`` − 1 by one binary COPY (plausible ages, counts, importance and decay)."""
    rng = np.random.default_rng(SEED + size)
    now = timezone.now()
    now_microseconds = (now - _POSTGRES_EPOCH) // timedelta(microseconds=1)
    created = (now_microseconds - (rng.uniform(0, 60 * 86400, size) * 1e6).astype(np.int64)).tolist()
    importance = rng.uniform(0.2, 0.9, size).tolist()
    access = rng.integers(0, 30, size).tolist()
    decay = rng.uniform(0.3, 1.0, size).tolist()
    empty = _field(b"")
    # Each row: the field count and the id's length; the id; then token, agent, session and shared.
    row_start = struct.pack(">hi", len(_COLUMNS), 16)
    scope = _field(struct.pack(">q", token_id)) + empty + empty + _field(b"\x00")
    domain_and_type = empty + _field(MemoryType.SHORT_TERM.value.encode())
    concepts = [_field(_varchar_array(values)) for values in data.concepts]
    metadata_and_chunk = _field(b"\x01{}") + _field(struct.pack(">i", 0))  # jsonb version 1, then {}
    vector_prefix = struct.pack(">i", 4 + 4 * EMBEDDING_DIMENSION) + struct.pack(
        ">HH", EMBEDDING_DIMENSION, 0
    )
    sql = f"COPY {Memory._meta.db_table} ({', '.join(_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
    with connection.cursor() as cursor, cursor.copy(sql) as copy:
        copy.write(_SIGNATURE)
        for start in range(0, size, 10_000):
            stop = min(start + 10_000, size)
            embeddings = data.vectors[start:stop].astype(">f4")
            rows = []
            for number in range(start, stop):
                base = number % len(data.sentences)
                content = data.sentences[base]
                if number >= len(data.sentences):
                    content = f"{content} (note {number})"
                text = content.encode()
                rows += (
                    row_start,
                    (ID_PREFIX | number).to_bytes(16, "big"),
                    scope,
                    _field(text),
                    _field(hashlib.sha256(text).hexdigest().encode()),
                    vector_prefix,
                    embeddings[number - start].tobytes(),
                    domain_and_type,
                    concepts[base],
                    metadata_and_chunk,
                    _TAIL.pack(
                        8,
                        importance[number],
                        4,
                        access[number],
                        8,
                        decay[number],
                        8,
                        created[number],
                        1,
                        False,
                        8,
                        created[number],
                        4,
                        1,
                    ),
                )
            copy.write(b"".join(rows))
        copy.write(_TRAILER)


def _loaded(token_id: int, data: Dataset, size: int, figures: Figures) -> None:
    """Drop the embedding index, COPY the rows, build the index again as the migration defines it."""
    index = next(index for index in Memory._meta.indexes if index.name == "memory_embedding")
    with connection.cursor() as cursor:
        # The web's statement timeout is meant for requests, not for loading a million rows or
        # building an index; the graph must fit in memory for the build to be fast (pgvector says
        # when it does not).
        cursor.execute("SET LOCAL statement_timeout = 0")
        cursor.execute("SET LOCAL maintenance_work_mem = '4GB'")
    with connection.schema_editor() as editor:
        editor.remove_index(Memory, index)
    started = time.perf_counter()
    _copy(token_id, data, size)
    with connection.cursor() as cursor:
        # The rows' deferred foreign-key checks run now (an index cannot be built with them pending):
        # part of loading them.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    figures.seconds["copy"] = time.perf_counter() - started
    started = time.perf_counter()
    with connection.schema_editor() as editor:
        editor.add_index(Memory, index)
    figures.seconds["pg_index"] = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        cursor.execute(f"ANALYZE {Memory._meta.db_table}")  # planner statistics, as autovacuum would


def _disk_bytes(relation: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size(%s::regclass)", [relation])
        return int(cursor.fetchone()[0])


# --- Searching -----------------------------------------------------------------------------------


def _vector_text(vector: np.ndarray) -> str:
    return Vector(vector).to_text()


def _row_number(memory_id: uuid.UUID) -> int:
    return memory_id.int ^ ID_PREFIX


@contextmanager
def _candidates_kept(kept: list[list[int]]) -> Iterator[None]:
    """Record the candidate rows ``memory_ask`` fetches (row numbers, in the order Postgres sent them:
    nearest first), without changing what it runs."""
    template = selectors._ASK_CANDIDATES
    id_at = selectors._ROW_FIELDS.index("id")

    class Recording:
        def rows(self, **kwargs):
            rows = template.rows(**kwargs)
            kept.append([_row_number(row[id_at]) for row in rows])
            return rows

    selectors._ASK_CANDIDATES = Recording()
    try:
        yield
    finally:
        selectors._ASK_CANDIDATES = template


def _recall(found: list[list[int]], exact: np.ndarray) -> float:
    """Share of the exact top-10 among the first 10 found, over every question."""
    hits = sum(len(set(rows[:TOP]) & set(truth.tolist())) for rows, truth in zip(found, exact, strict=True))
    return hits / (TOP * len(exact))


class Engines:
    """One call per engine for question ``index``, each returning the row numbers it found."""

    def __init__(self, scope: Scope, data: Dataset, hnsw: faiss.Index, flat: faiss.Index) -> None:
        self.scope, self.data, self.hnsw, self.flat = scope, data, hnsw, flat
        self.texts = [_vector_text(vector) for vector in data.questions]
        self.answered: list[int] = []  # memories per answer, in the recall pass
        self.raw_sql = f"SELECT id FROM {Memory._meta.db_table} ORDER BY embedding <=> %s::vector LIMIT {TOP}"

    def raw(self, index: int) -> list[int]:
        with connection.cursor() as cursor:
            cursor.execute(self.raw_sql, [self.texts[index]])
            return [_row_number(row[0]) for row in cursor.fetchall()]

    def ask(self, index: int) -> int:
        """The memories the admin's settings answer with (how many: the rest is scoring)."""
        question, vector = self.data.question_texts[index], self.data.questions[index]
        return len(selectors.memory_ask(scope=self.scope, question=question, vector=vector))

    def ask_embedded(self, index: int) -> int:
        return len(selectors.memory_ask(scope=self.scope, question=self.data.question_texts[index]))

    def faiss_hnsw(self, index: int) -> list[int]:
        return self.hnsw.search(self.data.questions[index : index + 1], TOP)[1][0].tolist()

    def faiss_flat(self, index: int) -> list[int]:
        return self.flat.search(self.data.questions[index : index + 1], TOP)[1][0].tolist()

    def ask_candidates(self, index: int) -> list[int]:
        kept: list[list[int]] = []
        with _candidates_kept(kept):
            self.answered.append(self.ask(index))
        return kept[0]

    def timed(self) -> list[dict[str, Callable[[int], object]]]:
        """The engines timed together, taking turns; then, each alone, those that run threads (the
        model's ONNX runtime, FAISS's exhaustive scan): their threads spin on both cores for a
        while after returning and slowed whatever ran next about threefold."""
        return [
            {ASK: self.ask, RAW: self.raw, FAISS_HNSW: self.faiss_hnsw},
            {ASK_EMBEDDED: self.ask_embedded},
            {FAISS_FLAT: self.faiss_flat},
        ]


def _exact(vectors: np.ndarray, questions: np.ndarray) -> np.ndarray:
    """The exact top-10 row numbers per question, by cosine (the rows are unit vectors)."""
    similarity = questions @ vectors.T
    top = np.argpartition(-similarity, TOP, axis=1)[:, :TOP]
    order = np.argsort(-np.take_along_axis(similarity, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def _latencies(
    calls: dict[str, Callable[[int], object]], questions: int, rounds: int
) -> dict[str, list[float]]:
    """Seconds per call, the engines taking turns each round. In a round each engine asks another
    question (all ask every question over the run): asked the same one, the second would walk the
    index pages the first had just brought into shared buffers (at 1M, ask measured first paid
    4.5× the raw query measured after it, a gap that grew with ef_search)."""
    spread = max(questions // len(calls), 1)

    def question(round_: int, position: int) -> int:
        return (round_ + position * spread) % questions

    for round_ in range(WARMUP):
        for position, call in enumerate(calls.values()):
            call(question(round_, position))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for round_ in range(rounds):
        for position, (name, call) in enumerate(calls.items()):
            asked = question(round_, position)
            started = time.perf_counter()
            call(asked)
            samples[name].append(time.perf_counter() - started)
    return samples


def _ef_search(value: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(value)])


def _ef_rows(engines: Engines, exact: np.ndarray) -> list[list[object]]:
    """Recall@10 and p50 of the raw query, ask and FAISS HNSW at each of ``EF_SEARCHES``."""
    rows = []
    questions = len(exact)
    for ef in EF_SEARCHES:
        _ef_search(ef)
        engines.hnsw.hnsw.efSearch = ef
        recall = {
            name: _recall([call(index) for index in range(questions)], exact)
            for name, call in (
                (ASK, engines.ask_candidates),
                (RAW, engines.raw),
                (FAISS_HNSW, engines.faiss_hnsw),
            )
        }
        samples = _latencies(
            {ASK: engines.ask, RAW: engines.raw, FAISS_HNSW: engines.faiss_hnsw}, questions, ROUNDS // 2
        )
        p50 = {name: percentile(values, 0.5) for name, values in samples.items()}
        rows.append(
            [
                ef,
                f"{recall[ASK]:.3f}",
                ms(p50[ASK]),
                f"{recall[RAW]:.3f}",
                ms(p50[RAW]),
                f"{recall[FAISS_HNSW]:.3f}",
                ms(p50[FAISS_HNSW]),
            ]
        )
    _ef_search(settings.HNSW_EF_SEARCH)
    engines.hnsw.hnsw.efSearch = settings.HNSW_EF_SEARCH
    return rows


def _faiss_built(vectors: np.ndarray, figures: Figures, folder: Path) -> tuple[faiss.Index, faiss.Index]:
    import faiss  # imported when used: its loader logs which CPU build it picked, at INFO

    # Building uses every core, as pgvector's parallel build does; searching one question per call
    # uses one, as one API request would (two OpenMP threads made a single exhaustive search five
    # times slower on a busy 2-core machine).
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    hnsw = faiss.IndexHNSWFlat(EMBEDDING_DIMENSION, 16, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 64
    started = time.perf_counter()
    hnsw.add(vectors)
    figures.seconds["faiss_hnsw"] = time.perf_counter() - started
    hnsw.hnsw.efSearch = settings.HNSW_EF_SEARCH
    flat = faiss.IndexFlatIP(EMBEDDING_DIMENSION)
    started = time.perf_counter()
    flat.add(vectors)
    figures.seconds["faiss_flat"] = time.perf_counter() - started
    faiss.omp_set_num_threads(1)
    for name, index in (("faiss_hnsw", hnsw), ("faiss_flat", flat)):
        path = folder / f"{name}.index"
        faiss.write_index(index, str(path))
        figures.disk[name] = path.stat().st_size
        path.unlink()
    return hnsw, flat


def _vacuumed() -> None:
    """Reclaim the rows a rolled-back size left: the next size's table then grows by its own rows
    only, and the bench leaves no dead space behind (outside any transaction, as VACUUM must be)."""
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")
        try:
            cursor.execute(f"VACUUM {Memory._meta.db_table}")
        finally:
            cursor.execute("RESET statement_timeout")


def _measure(data: Dataset, size: int, *, sweep: bool) -> Figures:
    figures = Figures(size=size)
    vectors = data.vectors[:size]
    exact = _exact(vectors, data.questions)
    table = Memory._meta.db_table
    try:
        with transaction.atomic():
            token, _ = api_token_create(name=f"bench-scale-memory-{size}", scopes=["read", "write"])
            scope = Scope(token=token)
            before = _disk_bytes(table)
            _loaded(token.pk, data, size, figures)
            figures.disk["pg_table"] = _disk_bytes(table) - before
            figures.disk["pg_index"] = _disk_bytes("memory_embedding")
            with tempfile.TemporaryDirectory(prefix="bench-scale-memory-") as folder:
                hnsw, flat = _faiss_built(vectors, figures, Path(folder))
            engines = Engines(scope, data, hnsw, flat)
            questions = len(data.questions)
            for name, call in (
                (ASK, engines.ask_candidates),
                (RAW, engines.raw),
                (FAISS_HNSW, engines.faiss_hnsw),
                (FAISS_FLAT, engines.faiss_flat),
            ):
                figures.recall[name] = _recall([call(index) for index in range(questions)], exact)
            figures.answered = engines.answered
            for group in engines.timed():
                figures.samples.update(_latencies(group, questions, ROUNDS))
            if sweep:
                figures.ef_rows = _ef_rows(engines, exact)
            raise _Rollback
    except _Rollback:
        pass
    return figures


# --- Printing ------------------------------------------------------------------------------------


def _size(count: int) -> str:
    return (
        f"{count // 1_000_000}M"
        if count >= 1_000_000
        else f"{count // 1000}k"
        if count >= 1000
        else str(count)
    )


def _megabytes(count: int) -> str:
    return f"{count / 1024 / 1024:.1f} MB"


def _print(results: list[Figures], data: Dataset, setup_seconds: float) -> None:
    ef = settings.HNSW_EF_SEARCH
    low, mid, high = data.cosines
    counts = [count for figures in results for count in figures.answered]
    answered = (
        f"{min(counts)} to {max(counts)} memories per question"
        if min(counts) != max(counts)
        else f"{min(counts)} memories"
    )
    rows = []
    for figures in results:
        raw50 = percentile(figures.samples[RAW], 0.5)
        for name in ENGINES:
            p50 = percentile(figures.samples[name], 0.5)
            recall = figures.recall.get(name)
            rows.append(
                [
                    _size(figures.size),
                    name,
                    ms(p50),
                    ms(percentile(figures.samples[name], 0.95)),
                    ratio(p50, raw50),
                    "—" if recall is None else f"{recall:.3f}",
                ]
            )
    print_table(
        "scale: memory ask against pgvector HNSW and FAISS",
        ("memories", "engine", "p50", "p95", "p50 ÷ raw pgvector", "recall@10"),
        rows,
        f"Measured: one scope (one API token) holding every memory; the first {SENTENCES} memories "
        "are distinct statements embedded with the real model, every further one is one of those "
        "embeddings perturbed (Gaussian noise shaped by the real embeddings' covariance, then "
        f"renormalised; cosine to its original p5 {low:.2f}, p50 {mid:.2f}, p95 {high:.2f}): "
        f"synthetic vectors, not embedded text. {QUESTIONS} held-out questions, none stored: half real "
        "questions about stored statements embedded by the model, half stored statements perturbed "
        f"by another random stream. {ROUNDS} timed rounds per size after {WARMUP} warm-up ones; ask, "
        "the raw query and FAISS HNSW take turns, each on another question in a round (so none walks "
        "index pages another just brought into shared buffers), the embedded ask and FAISS flat "
        "are timed after them, each alone (their threads, spinning after a call, slowed the next "
        "call threefold). recall@10 = the share of the exact top 10 (numpy "
        "brute-force cosine over the same float32 vectors) among the 10 nearest an engine returns, "
        "over all questions; for `memory_ask`, among the 10 nearest of the candidates its own query "
        f"fetched ({selectors.MIN_CANDIDATES} by the filtered HNSW scan, which it then re-ranks by "
        "the four relevance components: its answer is that ranking, not a nearest-neighbour list; "
        f"with the admin's default threshold and semantic floor it answered with {answered}). "
        f"`hnsw.ef_search` {ef} (`HNSW_EF_SEARCH`, the connection's setting, raw query and ask alike) "
        "and the same efSearch for FAISS HNSW. FAISS searches one question per call on one thread, "
        "as one API request would. The embedded line includes the model call, so it has no recall "
        "of its own. "
        f"Setup (sentences embedded, vectors made): {setup_seconds:.0f} s.",
    )
    build_rows = []
    for figures in results:
        seconds, disk = figures.seconds, figures.disk
        build_rows += [
            [
                _size(figures.size),
                "pgvector",
                f"{seconds['pg_index']:.1f} s (COPY of the rows: {seconds['copy']:.1f} s)",
                f"{_megabytes(disk['pg_index'])} (table: {_megabytes(disk['pg_table'])})",
            ],
            [
                _size(figures.size),
                "FAISS HNSW",
                f"{seconds['faiss_hnsw']:.1f} s",
                _megabytes(disk["faiss_hnsw"]),
            ],
            [
                _size(figures.size),
                "FAISS flat",
                f"{seconds['faiss_flat']:.2f} s",
                _megabytes(disk["faiss_flat"]),
            ],
        ]
    print_table(
        "scale: memory index build time and size on disk",
        ("memories", "engine", "index build", "index on disk"),
        build_rows,
        "Measured: pgvector's HNSW index (m=16, ef_construction=64, cosine, as the migration defines "
        "it) built by CREATE INDEX after the rows were loaded by one binary COPY with it dropped "
        "(maintenance_work_mem 4 GB, the server's max_parallel_maintenance_workers); "
        "pg_relation_size of the index and the table's growth by the COPY (every column of a "
        "memory, not only its vector; fillfactor 70, as the migration sets it; the table is "
        "vacuumed before each size). FAISS: `add` of the same float32 vectors (its OpenMP threads), "
        "and the size of the file `write_index` writes.",
    )
    swept = [figures for figures in results if figures.ef_rows]
    if swept:
        figures = swept[-1]
        print_table(
            f"scale: memory recall@10 and p50 by hnsw.ef_search at {_size(figures.size)} memories",
            (
                "ef_search",
                "ask recall",
                "ask p50",
                "raw recall",
                "raw p50",
                "FAISS HNSW recall",
                "FAISS HNSW p50",
            ),
            figures.ef_rows,
            f"Measured: the same questions and vectors, `hnsw.ef_search` (pgvector) and efSearch "
            f"(FAISS) set to each value in turn, {ROUNDS // 2} timed rounds each; recall@10 as above. "
            f"CortexWeb runs with {ef}.",
        )
    largest = results[-1]
    ask50 = percentile(largest.samples[ASK], 0.5)
    raw50 = percentile(largest.samples[RAW], 0.5)
    met = ask50 <= GOAL_RATIO * raw50 and largest.recall[ASK] >= GOAL_RECALL
    print(
        f"Goal at {_size(largest.size)} memories (ask p50 within {GOAL_RATIO:g}× of raw pgvector HNSW, "
        f"recall@10 ≥ {GOAL_RECALL}): ask p50 {ratio(ask50, raw50)} of raw, recall@10 "
        f"{largest.recall[ASK]:.3f}: {'met' if met else 'NOT met'}.\n",
        flush=True,
    )


def run() -> None:
    if _unmigrated():
        print("memory: skipped: the database is not migrated (`manage.py migrate` once)\n", flush=True)
        return
    # One line per token created and FAISS's loader's choice of CPU build would bury the tables.
    for name in ("apps.core.services", "faiss.loader"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # The settings row exists in any database that has answered an ask; created inside the rolled-back
    # transaction it would be read from the database on every ask, not from the process cache.
    MemorySettings.current()
    started = time.perf_counter()
    data = _dataset(max(SIZES))
    setup_seconds = time.perf_counter() - started
    results = []
    for size in sorted(SIZES):
        _vacuumed()
        results.append(_measure(data, size, sweep=size == max(SIZES)))
    _vacuumed()
    _print(results, data, setup_seconds)
