"""Review memory: what operators decided about a claim, found again when the same claim comes back.

A claim is "the same claim" as a reviewed one when its normalised text is identical, or when its
embedding is at least ``SAME_CLAIM_SIMILARITY`` close *and* it has the same numbers, names,
polarity and modality (``claim_features``). The similarity alone is not enough: "must be kept
for 6 years" and "must be kept for 10 years" embed almost alike, and a reviewed verdict on one is
wrong for the other.

The threshold was measured on ``tests/data/review_memory_pairs.jsonl`` (written for it: paraphrases
of the first claim set's claims, and near-misses on the same entries) by
``tests/grounding/test_review_memory.py::test_the_threshold_separates_the_measured_pairs``; the
figures are in docs/grounding.md "Review memory".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone
from pgvector.django import CosineDistance

from apps.embeddings.services import embed_text
from apps.grounding.contradictions import number_word_value, numbers_in_words
from apps.grounding.models import ReviewMemory, Verification

# Cosine similarity (all-MiniLM-L6-v2) at or above which two claims with the same features are the
# same claim; measured (see the module docstring).
SAME_CLAIM_SIMILARITY = 0.84
CANDIDATES = 5  # nearest reviewed claims checked for matching features

_WORD_RE = re.compile(r"[\w’'-]+")
_POSSESSIVE_RE = re.compile(r"['’]s$", re.I)
_CODE_RE = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# Words that count besides the numbers written in words ("five hundred" is read whole by the judge's reader).
_COUNTING_WORDS = {"single": 1, "once": 1, "twice": 2, "half": 0.5, "double": 2}
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_NEGATIONS = frozenset(
    {"not", "no", "never", "neither", "nor", "none", "without", "cannot", "nothing", "nobody", "nowhere"}
)
# Modal strength classes: two claims that differ in class say different things ("must" vs "may").
_MODALS = {
    "must": "required", "shall": "required", "required": "required", "requires": "required",
    "require": "required", "mandatory": "required", "obliged": "required", "obligatory": "required",
    "need": "required", "needs": "required", "have": "required", "has": "required",
    "should": "recommended", "recommended": "recommended", "recommends": "recommended",
    "ought": "recommended", "advisable": "recommended", "encouraged": "recommended",
    "may": "allowed", "can": "allowed", "could": "allowed", "might": "allowed", "optional": "allowed",
    "allowed": "allowed", "permitted": "allowed", "acceptable": "allowed", "fine": "allowed",
    "prohibited": "prohibited", "forbidden": "prohibited", "banned": "prohibited",
}  # fmt: skip
_ONLY_WITH_TO = frozenset({"have", "has", "need", "needs"})
# "have"/"has" only count as an obligation in "have to"/"has to".
_OBLIGATION_HAVE_RE = re.compile(r"\b(?:have|has|had|need|needs)\s+to\b", re.I)


def _words(text: str) -> list[str]:
    """The words of ``text``, possessives dropped ("Django's" is "Django")."""
    words = (_POSSESSIVE_RE.sub("", word).strip("’'-") for word in _WORD_RE.findall(text))
    return [word for word in words if word]


def normalized(text: str) -> str:
    """Lower case, words only, single spaces: "Hash passwords with MD5." == "hash passwords with md5"."""
    return " ".join(_words(text.lower()))


def _number(digits: str) -> float | str:
    """72 == 72.0 == "72"; a version ("2.0.0") stays as written."""
    try:
        return float(digits.replace(",", ""))
    except ValueError:
        return digits


def _number_key(words: list[str], text: str) -> list[float | str]:
    """The claim's numbers: in digits, and in words read whole as the judge reads them ("seventy-two" is
    72, "five hundred" 500, so a review of "500 residents" is one of "five hundred residents" too)."""
    values = [_number(n) for n in _NUMBER_RE.findall(text)]
    values += [float(value) for value in numbers_in_words(text)]
    values += [float(_COUNTING_WORDS[word]) for word in words if word in _COUNTING_WORDS]
    return sorted(set(values), key=str)


def features_refresh(model: type[ReviewMemory] = ReviewMemory) -> int:
    """Read every remembered claim's features again (after the reader changed); how many changed.
    ``model`` is a migration's historical model, whose columns are those of its time."""
    changed = []
    for memory in model.objects.only("pk", "claim", "features"):
        features = claim_features(memory.claim)
        if features != memory.features:
            memory.features = features
            changed.append(memory)
    model.objects.bulk_update(changed, ["features"], batch_size=500)
    return len(changed)


def _is_name(word: str, index: int) -> bool:
    # A capitalised word after the first; any word with a capital or digit inside (MD5, HttpOnly, SHA-1);
    # an identifier (select_related, no-cache): things a paraphrase keeps as they are. A number is not a
    # name: numbers are compared by value ("72" and "seventy-two").
    if _NUMBER_RE.fullmatch(word) or number_word_value(word) is not None:
        return False
    return (index > 0 and word[:1].isupper()) or bool(re.search(r".[A-Z0-9]|[_-]", word))


def claim_features(text: str) -> dict[str, Any]:
    """What must be equal for two similar claims to be the same claim."""
    words = _words(text)
    lower = [w.lower() for w in words]
    names = {word.lower() for index, word in enumerate(words) if _is_name(word, index)} - _NEGATIONS
    # Dotted code (datetime.utcnow()) is one name: "utcnow" and "utcfromtimestamp" differ.
    names |= {normalized(code) for code in _CODE_RE.findall(text)}
    negations = sum(word in _NEGATIONS or word.endswith("n't") for word in lower)
    modals = {_MODALS[word] for word in lower if word in _MODALS and word not in _ONLY_WITH_TO}
    if _OBLIGATION_HAVE_RE.search(text):
        modals.add("required")
    return {
        "numbers": _number_key(lower, text),
        "names": sorted(names),
        "negated": negations % 2 == 1,
        "modality": sorted(modals),
    }


def same_features(features: dict[str, Any], text: str, other: dict[str, Any], other_normalized: str) -> bool:
    """Same numbers, polarity and modality, and each claim's names are said in the other (a name that
    opens one claim is not seen as a name there: "Django …" vs "… in Django")."""
    if any(features[key] != other.get(key) for key in ("numbers", "negated", "modality")):
        return False
    mine, theirs = f" {normalized(text)} ", f" {other_normalized} "
    return all(f" {name} " in theirs for name in features["names"]) and all(
        f" {name} " in mine for name in other.get("names", [])
    )


@dataclass(frozen=True)
class Recalled:
    """A remembered review that applies to a claim: how it matched and how close it was."""

    memory: ReviewMemory
    match: str  # "exact" or "paraphrase"
    similarity: float


def recalled(*, claim: str, domain: str | None = None) -> Recalled | None:
    """The newest review in force of the same claim (see the module docstring), or None."""
    memories = ReviewMemory.objects.in_force()
    if domain:
        memories = memories.filter(domain__in=[domain, ""])
    exact = memories.filter(normalized=normalized(claim)).first()
    if exact is not None:
        return Recalled(exact, "exact", 1.0)
    features = claim_features(claim)
    # Only a review with the same numbers, polarity and modality can match: when there is none, the
    # claim is not embedded (the judge embeds it again; this keeps the common case at two small queries).
    alike = memories.filter(
        features__numbers=features["numbers"],
        features__negated=features["negated"],
        features__modality=features["modality"],
    )
    if not alike.exists():
        return None
    vector = embed_text(text=claim)
    nearest = alike.annotate(distance=CosineDistance("embedding", vector)).order_by("distance")
    for memory in nearest[:CANDIDATES]:
        similarity = 1.0 - float(memory.distance)
        if similarity < SAME_CLAIM_SIMILARITY:
            break
        if same_features(features, claim, memory.features, memory.normalized):
            return Recalled(memory, "paraphrase", round(similarity, 4))
    return None


def claim_similarity(first: str, second: str) -> float:
    """Cosine similarity of two claims' embeddings (unit vectors)."""
    return float(np.dot(embed_text(text=first), embed_text(text=second)))


def remember(*, verification: Verification, reviewer_name: str = "") -> ReviewMemory:
    """Remember ``verification``'s review (replacing an earlier review of it): called in the review's
    transaction, after the verification has its review fields. ``reviewer_name`` is who it is cited as
    (default: the reviewer's username)."""
    verdict = verification.reviewed_verdict or verification.verdict
    reviewer = verification.reviewer
    defaults = {
        "claim": verification.claim,
        "normalized": normalized(verification.claim),
        "embedding": embed_text(text=verification.claim),
        "features": claim_features(verification.claim),
        "domain": verification.domain.name if verification.domain else "",
        "decision": _decision(verification),
        "verdict": verdict,
        "correction": verification.correction if verdict == "contradicted" else "",
        "reviewer": reviewer,
        "reviewer_name": reviewer_name or (reviewer.get_username() if reviewer is not None else ""),
        "reviewed_at": verification.reviewed_at or timezone.now(),
        "note": verification.review_note,
        "revoked_at": None,
    }
    memory, _ = ReviewMemory.objects.update_or_create(verification=verification, defaults=defaults)
    return memory


def _decision(verification: Verification) -> str:
    return {"approved": "approve", "rejected": "reject", "corrected": "correct"}[verification.review_status]


def memories_revoke(*, memory_ids: list[int]) -> int:
    """Stop using these reviews (the admin's "revoke" action); how many were in force."""
    with transaction.atomic():
        return ReviewMemory.objects.in_force().filter(pk__in=memory_ids).update(revoked_at=timezone.now())
