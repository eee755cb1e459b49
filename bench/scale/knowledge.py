"""Knowledge search at 1k, 10k and 100k entries (issue 27 item 4): ``python -m bench scale``, part
``knowledge``.

What is timed is ``apps.knowledge.selectors.knowledge_search``, the service behind
``POST /v1/knowledge/search``: hybrid, the 20 nearest entries by pgvector cosine (HNSW, iterative
scan) and the 20 best by Postgres full text (``websearch_to_tsquery`` over the GIN index, ranked by
``ts_rank``), fused by reciprocal rank; no domain, limit 10. The similarity floor only labels hits
(``matches_well``), it filters nothing, so it costs nothing here. Three variants take turns within
each round, on the same question:

- the service with the question's embedding precomputed (``query_vector``, as the raw query gets it);
- the service with the real model call (``embed_text``, the in-process ONNX model, not cached);
- the raw pgvector query on the same rows, the reference line:
  ``SELECT id FROM knowledge_entry ORDER BY embedding <=> %s LIMIT 10``.

The entries are synthetic, and so are most of their vectors: ``BENCH_SCALE_KNOWLEDGE_SENTENCES``
(default 3,000) real sentences (the shipped knowledge packs, the project's labelled claims and
memories, and docstrings of the Python standard library) are embedded with the real model, once;
each entry takes a run of 3 consecutive ones (mostly one pack entry's or docstring's) as its base:
its vector is the mean of their embeddings, renormalised, plus Gaussian noise (norm 0.5,
renormalised again: cosine about 0.89 to the base), and its text is those sentences followed by 20
words drawn from the sentences' vocabulary by a Zipf law (so a query's words match few or many
entries, as in real text). 100k texts are not embedded: that would take longer than the whole budget
on two cores. The questions are the 36 of ``tests/data/knowledge_floor_queries.json`` (real ones).

Sizes: ``BENCH_SCALE_KNOWLEDGE_SIZES`` (default ``1000,10000,100000``; the table's total, existing
entries included), ``BENCH_SCALE_KNOWLEDGE_ROUNDS`` (default 100 timed rounds a size, after 10 warm-up
rounds). Per size, in one transaction that is rolled back at the end: the table's two search indexes
are dropped, the missing entries copied in (binary ``COPY``), the indexes rebuilt from their own
definitions (as the migration made them) and the table analysed. Nothing is left behind.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from importlib import import_module
from pathlib import Path
from types import ModuleType

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from pgvector import Vector
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from apps.embeddings.backends import EMBEDDING_DIMENSION
from apps.embeddings.services import embed_texts
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry
from apps.knowledge.selectors import knowledge_search
from bench.__main__ import percentile
from bench.scale.table import ms, print_table, ratio

SIZES = [int(size) for size in os.environ.get("BENCH_SCALE_KNOWLEDGE_SIZES", "1000,10000,100000").split(",")]
SENTENCES = int(os.environ.get("BENCH_SCALE_KNOWLEDGE_SENTENCES", "3000"))
ROUNDS = int(os.environ.get("BENCH_SCALE_KNOWLEDGE_ROUNDS", "100"))
WARMUP = 10
NOISE = 0.5  # norm of the Gaussian noise added to a unit base vector
BASE_SENTENCES, FILLER_WORDS, TOPIC_WORDS = 3, 20, 5
DOMAINS = ("bench-scale-a", "bench-scale-b", "bench-scale-c", "bench-scale-d")
SEED = 27
COPY_BATCH = 5000

# Standard-library modules whose docstrings are plain English prose (none with import side effects).
DOC_MODULES = [
    "argparse",
    "asyncio",
    "bisect",
    "calendar",
    "collections",
    "concurrent.futures",
    "configparser",
    "csv",
    "datetime",
    "decimal",
    "difflib",
    "doctest",
    "email.message",
    "fractions",
    "ftplib",
    "functools",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "http.client",
    "http.cookiejar",
    "http.server",
    "imaplib",
    "inspect",
    "ipaddress",
    "itertools",
    "json",
    "locale",
    "logging",
    "mailbox",
    "multiprocessing",
    "numbers",
    "optparse",
    "os",
    "pathlib",
    "pdb",
    "pickle",
    "platform",
    "poplib",
    "pprint",
    "queue",
    "random",
    "re",
    "sched",
    "secrets",
    "selectors",
    "shelve",
    "shutil",
    "smtplib",
    "socket",
    "sqlite3",
    "ssl",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "tokenize",
    "trace",
    "traceback",
    "types",
    "typing",
    "unittest",
    "urllib.parse",
    "urllib.request",
    "uuid",
    "wave",
    "weakref",
    "xml.dom.minidom",
    "xml.etree.ElementTree",
    "zipfile",
    "zoneinfo",
    "abc",
    "asyncio.base_events",
    "asyncio.streams",
    "asyncio.tasks",
    "codecs",
    "contextlib",
    "dataclasses",
    "email.parser",
    "email.policy",
    "enum",
    "filecmp",
    "glob",
    "graphlib",
    "http.cookies",
    "importlib.metadata",
    "logging.handlers",
    "mimetypes",
    "operator",
    "pkgutil",
    "pstats",
    "reprlib",
    "shlex",
    "socketserver",
    "sysconfig",
    "timeit",
    "unittest.mock",
    "warnings",
    "wsgiref.simple_server",
    "xml.sax",
    "xmlrpc.client",
]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_PROSE = re.compile(r"^[A-Z][A-Za-z ,;'’()\-]+[.!?]$")
_WORD = re.compile(r"[a-z]{4,}")


class _Rollback(Exception):
    pass


def _sentences_in(text: str) -> Iterator[str]:
    for sentence in _SENTENCE_END.split(" ".join(text.split())):
        if 40 <= len(sentence) <= 240 and len(sentence.split()) >= 6 and _PROSE.match(sentence):
            yield sentence


def _texts() -> Iterator[str]:
    """Real English: the shipped packs, the labelled claims and memories, then stdlib docstrings."""
    root = Path(settings.BASE_DIR)
    for pack in sorted((root / "config" / "knowledge").rglob("*.json")):
        for entry in json.loads(pack.read_text())["entries"]:
            yield entry["content"]
    for labelled in sorted((root / "tests" / "data").glob("*.jsonl")):
        for line in labelled.read_text().splitlines():
            record = json.loads(line)
            yield from (record[key] for key in ("claim", "memory", "question") if key in record)
    for name in DOC_MODULES:
        with warnings.catch_warnings():  # reading a deprecated alias (typing.io) warns
            warnings.simplefilter("ignore", DeprecationWarning)
            docstrings = _docstrings(import_module(name))
        yield from docstrings


def _docstrings(module: ModuleType) -> list[str]:
    """The docstrings of what ``module`` defines: its classes (and their methods) and functions."""
    found = []
    for _, member in sorted(vars(module).items()):
        if getattr(member, "__module__", None) == module.__name__:
            found.append(inspect.getdoc(member) or "")
            if inspect.isclass(member):
                methods = [method for _, method in sorted(vars(member).items()) if callable(method)]
                found += [inspect.getdoc(method) or "" for method in methods]
    return found


def real_sentences(count: int) -> list[str]:
    seen: dict[str, None] = {}
    for text in _texts():
        for sentence in _sentences_in(text):
            seen.setdefault(sentence)
            if len(seen) == count:
                return list(seen)
    return list(seen)


def _questions() -> list[str]:
    path = Path(settings.BASE_DIR) / "tests" / "data" / "knowledge_floor_queries.json"
    data = json.loads(path.read_text())
    return [*data["relevant"], *data["nonsense"]]


class _Generator:
    """Entries made from real sentences and their real embeddings (see the module docstring)."""

    def __init__(self, sentences: list[str], vectors: np.ndarray) -> None:
        self.sentences, self.vectors = sentences, vectors
        counts = Counter(word for sentence in sentences for word in _WORD.findall(sentence.lower()))
        self.vocabulary = np.array([word for word, _ in counts.most_common()])
        weights = 1 / np.arange(1, len(self.vocabulary) + 1)
        self.weights = weights / weights.sum()
        self.rng = np.random.default_rng(SEED)

    def rows(self, start: int, count: int, domain_ids: list[int]) -> Iterator[tuple]:
        # Runs of consecutive sentences: mostly from one pack entry or docstring, so they read on.
        bases = (self.rng.integers(0, len(self.sentences), count)[:, None] + np.arange(BASE_SENTENCES)) % len(
            self.sentences
        )
        vectors = self.vectors[bases].mean(axis=1)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        noise = self.rng.standard_normal((count, EMBEDDING_DIMENSION)).astype(np.float32)
        vectors += noise * (NOISE / np.linalg.norm(noise, axis=1, keepdims=True))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        words = self.rng.choice(self.vocabulary, size=(count, FILLER_WORDS + TOPIC_WORDS), p=self.weights)
        now = datetime.now(UTC)
        for offset in range(count):
            number = start + offset
            topic = " ".join(words[offset, :TOPIC_WORDS]).capitalize()
            text = " ".join(self.sentences[base] for base in bases[offset])
            content = f"{text} {' '.join(words[offset, TOPIC_WORDS:])}."
            yield (
                _entry_id(number),
                domain_ids[number % len(domain_ids)],
                topic,
                content,
                "bench scale (generated)",
                "",
                [],
                [str(word) for word in words[offset, :2]],
                1.0,
                Vector(vectors[offset]),
                "bench",
                "bench",
                now,
                now,
            )


def _entry_id(number: int) -> str:
    """``QZ`` and three letters, a hyphen and three digits: a valid id no shipped pack uses."""
    letters, digits = divmod(number, 1000)
    word = ""
    for _ in range(3):
        letters, letter = divmod(letters, 26)
        word = chr(ord("A") + letter) + word
    return f"QZ{word}-{digits:03d}"


COPY_COLUMNS = (
    ("entry_id", "varchar"),
    ("domain_id", "int8"),
    ("topic", "varchar"),
    ("content", "text"),
    ("source", "varchar"),
    ("url", "varchar"),
    ("related", "varchar[]"),
    ("tags", "varchar[]"),
    ("confidence", "float8"),
    ("embedding", "vector"),
    ("content_hash", "varchar"),
    ("embedded_hash", "varchar"),
    ("created_at", "timestamptz"),
    ("updated_at", "timestamptz"),
)


def _load(generator: _Generator, start: int, count: int, domain_ids: list[int]) -> None:
    table = KnowledgeEntry._meta.db_table
    columns = ", ".join(name for name, _ in COPY_COLUMNS)
    with connection.cursor() as wrapper:
        cursor = wrapper.cursor  # psycopg's own cursor: the vector dumper is registered on it only
        register_vector_info(cursor, TypeInfo.fetch(cursor.connection, "vector"))
        for batch in range(start, start + count, COPY_BATCH):
            size = min(COPY_BATCH, start + count - batch)
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types([kind for _, kind in COPY_COLUMNS])
                for row in generator.rows(batch, size, domain_ids):
                    copy.write_row(row)


def _indexes() -> list[tuple[str, str]]:
    """The table's search indexes (HNSW and GIN) as ``(name, CREATE INDEX …)``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s "
            "AND (indexdef LIKE '%%USING hnsw%%' OR indexdef LIKE '%%USING gin%%') ORDER BY indexname",
            [KnowledgeEntry._meta.db_table],
        )
        return cursor.fetchall()


def _grow(generator: _Generator, total: int, domain_ids: list[int], indexes: list[tuple[str, str]]) -> float:
    """The table brought to ``total`` entries, its indexes rebuilt: seconds taken."""
    started = time.perf_counter()
    have = KnowledgeEntry.objects.count()
    with connection.cursor() as cursor:
        # Django's foreign keys are deferred: their checks would be pending at CREATE INDEX, which
        # Postgres refuses. Checked at each statement's end instead (the same checks, earlier).
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
    if total > have:
        _load(generator, have, total - have, domain_ids)
    with connection.cursor() as cursor:
        # Enough memory for the HNSW graph of 100k vectors to be built in memory (else it spills),
        # and no request's statement timeout for the build; the searches get it back after.
        cursor.execute("SHOW statement_timeout")
        (timeout,) = cursor.fetchone()
        cursor.execute("SET LOCAL maintenance_work_mem = '1GB'")
        cursor.execute("SET LOCAL statement_timeout = 0")
        for _, definition in indexes:
            cursor.execute(definition)
        cursor.execute(f"ANALYZE {KnowledgeEntry._meta.db_table}")
        cursor.execute("SELECT set_config('statement_timeout', %s, true)", [timeout])
    return time.perf_counter() - started


def _raw_query(vector_text: str) -> object:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {KnowledgeEntry._meta.db_table} ORDER BY embedding <=> %s::vector LIMIT 10",
            [vector_text],
        )
        return cursor.fetchall()


def _text_matches(question: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {KnowledgeEntry._meta.db_table} "
            "WHERE search_vector @@ websearch_to_tsquery('english', %s)",
            [question],
        )
        return cursor.fetchone()[0]


def _measure(questions: list[str], vectors: np.ndarray) -> dict[str, list[float]]:
    vector_texts = [Vector(vector).to_text() for vector in vectors]
    variants: dict[str, Callable[[int], object]] = {
        "precomputed": lambda i: knowledge_search(query=questions[i], query_vector=vectors[i]),
        "model": lambda i: knowledge_search(query=questions[i]),
        "raw": lambda i: _raw_query(vector_texts[i]),
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for round_number in range(WARMUP + ROUNDS):
        index = round_number % len(questions)
        for name, call in variants.items():
            started = time.perf_counter()
            call(index)
            if round_number >= WARMUP:
                samples[name].append(time.perf_counter() - started)
    return samples


def _p(samples: list[float]) -> str:
    return f"{ms(percentile(samples, 0.50))} / {ms(percentile(samples, 0.95))}"


def run() -> None:
    started = time.perf_counter()
    sentences = real_sentences(SENTENCES)
    sentence_vectors = embed_texts(texts=sentences)
    questions = _questions()
    question_vectors = embed_texts(texts=questions)
    embedding_seconds = time.perf_counter() - started
    generator = _Generator(sentences, sentence_vectors)
    rows = []
    existing = KnowledgeEntry.objects.count()
    try:
        with transaction.atomic():
            base, _ = KnowledgeBase.objects.get_or_create(name="bench-scale")
            domain_ids = [
                KnowledgeDomain.objects.get_or_create(name=name, defaults={"base": base})[0].pk
                for name in DOMAINS
            ]
            indexes = _indexes()
            for size in sorted(SIZES):
                build = _grow(generator, size, domain_ids, indexes)
                total = KnowledgeEntry.objects.count()
                samples = _measure(questions, question_vectors)
                matches = sorted(count for count in map(_text_matches, questions) if count)
                median_matches = matches[len(matches) // 2] if matches else 0
                precomputed, raw = samples["precomputed"], samples["raw"]
                rows.append(
                    (
                        f"{total:,}",
                        _p(precomputed),
                        _p(samples["model"]),
                        _p(raw),
                        f"{ratio(percentile(precomputed, 0.5), percentile(raw, 0.5))} / "
                        f"{ratio(percentile(precomputed, 0.95), percentile(raw, 0.95))}",
                        f"{len(matches)} of {len(questions)}; median {median_matches:,}",
                        f"{build:.1f} s",
                    )
                )
            raise _Rollback
    except _Rollback:
        pass
    print_table(
        "scale: knowledge search",
        (
            "entries",
            "search, vector precomputed (p50 / p95)",
            "search with the model call",
            "raw pgvector HNSW top 10",
            "search / raw (p50 / p95)",
            "questions with full-text matches; median entries matched",
            "load + index build",
        ),
        rows,
        f"`knowledge_search` (hybrid: 20 HNSW + 20 full-text candidates fused by RRF, limit 10) against the "
        f"raw pgvector query on the same rows, taking turns each round; {ROUNDS} rounds a size over "
        f"{len(questions)} real questions. Entries synthetic: {len(sentences):,} real sentences embedded "
        f"({embedding_seconds:.0f} s with the model), each entry's vector Gaussian noise "
        f"(norm {NOISE}, renormalised) to the mean embedding of {BASE_SENTENCES} consecutive ones, its text "
        f"those sentences plus {FILLER_WORDS} Zipf-drawn words of their vocabulary; 100k texts were not "
        f"embedded. {existing:,} entries existed before; all rolled back.",
    )
