"""What ``tell`` does to text before storing it: chunks at sentence boundaries and concepts.

Concepts are keywords found without a model (Semem asks an LLM; a memory must be storable when no
LLM is configured): capitalised phrases ("Marie Curie", "Open Policy Agent"), identifiers with
digits ("CVE-2021-44228"), names (a capitalised word inside a sentence: "Postgres"), and the
content words that recur, lowercased, stopwords dropped, plurals folded ("backups" → "backup"), ranked
by weight (phrases and identifiers 3, names 2, words 1) and frequency, then first appearance. They
feed ``ask``'s domain component (concept overlap) and the RDF export's ``semem:concepts``.
"""

from __future__ import annotations

import re
from collections import Counter

from apps.core.text import sentences

#: Semem's chunk size: content longer than this is stored as several memories.
CHUNK_CHARS = 8000
MAX_CONCEPTS = 12

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each either else etc ever
    every few for from further had has have having he her here hers herself him himself his how however
    i if in into is it its itself just like may me might more most much must my myself no nor not now of
    off on once one only or other our ours ourselves out over own per please same shall she should so
    some such than that the their theirs them themselves then there these they this those through thus
    to too under until up upon us use used using very via was we were what when where whether which
    while who whom whose why will with within without would yes yet you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9'’_-]*[A-Za-z0-9]|[A-Za-z]")
_IDENTIFIER_RE = re.compile(r"\b[A-Za-z]+[-_]?\d[\w.-]*\b|\b\d+[A-Za-z][\w-]*\b")
_PHRASE_RE = re.compile(r"\b(?:[A-Z][\w'’-]*|[A-Z]{2,})(?:\s+(?:of\s+|de\s+|the\s+)?(?:[A-Z][\w'’-]*))+")


def content_chunks(content: str, *, size: int = CHUNK_CHARS) -> list[str]:
    """``content`` in pieces of at most ``size`` characters, cut between sentences.

    A sentence longer than ``size`` on its own is cut at the last space before the limit (or hard,
    when it has none), so no piece is ever over the limit and nothing is lost.
    """
    text = content.strip()
    if len(text) <= size:
        return [text]
    chunks: list[str] = []
    current = ""
    for sentence in _sentence_pieces(text, size):
        candidate = f"{current} {sentence}" if current else sentence
        if len(candidate) <= size:
            current = candidate
            continue
        chunks.append(current)
        current = sentence
    if current:
        chunks.append(current)
    return chunks


def _sentence_pieces(text: str, size: int) -> list[str]:
    pieces: list[str] = []
    for sentence in sentences(text):
        rest = sentence
        while len(rest) > size:
            cut = rest.rfind(" ", 0, size + 1)
            cut = cut if cut > 0 else size
            pieces.append(rest[:cut].strip())
            rest = rest[cut:].strip()
        if rest:
            pieces.append(rest)
    return pieces


def concepts_extract(text: str, *, limit: int = MAX_CONCEPTS) -> list[str]:
    """Up to ``limit`` concepts of ``text``, lowercased, most salient first (see the module docstring)."""
    found: Counter[str] = Counter()
    first_seen: dict[str, int] = {}

    def add(concept: str, weight: int, position: int) -> None:
        concept = " ".join(concept.lower().split()).strip(".-_'’")
        if len(concept) < 2 or concept in STOPWORDS:
            return
        found[concept] += weight
        first_seen.setdefault(concept, position)

    phrase_spans: list[tuple[int, int]] = []
    for match in _PHRASE_RE.finditer(text):
        phrase = match.group()
        # A sentence's first word is capitalised anyway: "The Eiffel Tower" is "Eiffel Tower".
        words = [w for w in phrase.split() if w.lower() not in STOPWORDS]
        if len(words) >= 2:
            add(" ".join(words), 3, match.start())
            phrase_spans.append(match.span())
    for match in _IDENTIFIER_RE.finditer(text):
        add(match.group(), 3, match.start())
    for match in _WORD_RE.finditer(text):
        word = match.group().lower()
        if len(word) <= 2 or word in STOPWORDS:
            continue
        if any(start <= match.start() < end for start, end in phrase_spans):
            continue  # counted with its phrase
        if match.group()[0].isupper() and not _sentence_start(text, match.start()):
            add(word, 2, match.start())  # a name ("Postgres", "Frankfurt"): kept as written, weighed more
        else:
            add(_singular(word), 1, match.start())
    ranked = sorted(found, key=lambda concept: (-found[concept], first_seen[concept]))
    return [concept[:100] for concept in ranked[:limit]]


def _sentence_start(text: str, position: int) -> bool:
    before = text[:position].rstrip()
    return not before or before[-1] in ".!?:;\n\"'(["


def _singular(word: str) -> str:
    """A light plural fold, so "passwords" and "password" are one concept (not a stemmer)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "os")):
        return word[:-1]
    return word
