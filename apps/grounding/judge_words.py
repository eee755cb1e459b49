"""The local judge's word lists, read once from ``GROUNDING_JUDGE_WORDS`` (``config/grounding/``
``judge_words.json``).

They are data, not code, so that a list can be reviewed and extended without touching a rule, and so
that each list is tested on its own on text that has nothing to do with the knowledge packs
(``tests/grounding/test_judge_words.py``): a word belongs in a list because it is general English for
what the list is about, never because one claim needs it.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class StanceCues:
    """Phrases that reject or endorse what stands before them or what follows them, compiled."""

    reject_before: re.Pattern[str]
    reject_after: re.Pattern[str]
    endorse_before: re.Pattern[str]
    endorse_after: re.Pattern[str]


def _phrases(words: list[str]) -> re.Pattern[str]:
    """One pattern matching any of the phrases as whole words (longest first, so "must not" wins over
    "must"), case-insensitively."""
    alternatives = sorted({re.escape(word.strip()) for word in words if word.strip()}, key=len, reverse=True)
    return re.compile(rf"(?<![\w-])(?:{'|'.join(alternatives)})(?![\w-])", re.I)


def _leading(words: list[str]) -> re.Pattern[str]:
    """One pattern matching any of the phrases as the first words of a text, case-insensitively."""
    alternatives = sorted({re.escape(word.strip()) for word in words if word.strip()}, key=len, reverse=True)
    return re.compile(rf"^\s*(?:{'|'.join(alternatives)})(?![\w-])", re.I)


@functools.cache
def judge_words() -> dict[str, Any]:
    """The whole file (parsed once per process)."""
    return json.loads(Path(settings.GROUNDING_JUDGE_WORDS).read_text(encoding="utf-8"))


@functools.cache
def stance_cues() -> StanceCues:
    stance = judge_words()["stance"]
    return StanceCues(
        reject_before=_phrases(stance["reject_before"]),
        reject_after=_phrases(stance["reject_after"]),
        endorse_before=_phrases(stance["endorse_before"]),
        endorse_after=_phrases(stance["endorse_after"]),
    )


@dataclass(frozen=True)
class ModalityCues:
    """Phrases that prohibit, require, recommend or permit what a sentence names, compiled; the verbs of
    advice that make a sentence starting with them a recommendation, and the verbs of being that say
    such a first word is not a command after all ("Hash functions are …")."""

    prohibit: re.Pattern[str]
    require: re.Pattern[str]
    recommend: re.Pattern[str]
    permit: re.Pattern[str]
    imperative_verbs: frozenset[str]
    being: frozenset[str]
    negated_imperative: re.Pattern[str]  # prohibits only at the start of a sentence ("Never use …")


@functools.cache
def modality_cues() -> ModalityCues:
    modality = judge_words()["modality"]
    return ModalityCues(
        prohibit=_phrases(modality["prohibit"]),
        require=_phrases(modality["require"]),
        recommend=_phrases(modality["recommend"]),
        permit=_phrases(modality["permit"]),
        imperative_verbs=frozenset(modality["imperative_verbs"]),
        being=frozenset(modality["being"]),
        negated_imperative=_leading(modality["negated_imperative"]),
    )


@functools.cache
def scope_words() -> frozenset[str]:
    """Words that rank, order, count or bound what a sentence says ("only", "first", "higher")."""
    return frozenset(judge_words()["scope"]["words"])


@functools.cache
def negative_verbs() -> re.Pattern[str]:
    """Words that say a thing is not done or not there without a "not" ("bypasses", "outside")."""
    return _phrases(judge_words()["negative_verbs"]["words"])


#: Endings taken off a word before it is compared with the opposites: "increases", "increased",
#: "increasing" and "increase" share one base; "-ies"/"-ied" end in "y" ("denies" → "deny").
_ENDINGS = ("ing", "ed", "es", "s", "e")
MIN_BASE_LETTERS = 3


@functools.lru_cache(maxsize=16384)
def word_base(word: str) -> str:
    """The base a word is matched on against the opposites list (crude, and the same on both sides)."""
    word = word.lower()
    if len(word) > MIN_BASE_LETTERS + 3 and word.endswith(("ies", "ied")):
        return word[:-3] + "y"
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_BASE_LETTERS:
            return word[: -len(ending)]
    return word


@functools.cache
def opposite_pairs() -> tuple[tuple[str, str], ...]:
    """The opposites list with the lists it names (``also_from``: files beside this one, such as
    WordNet's direct antonyms)."""
    opposites = judge_words()["opposites"]
    pairs = [tuple(pair) for pair in opposites["pairs"]]
    folder = Path(settings.GROUNDING_JUDGE_WORDS).parent
    for name in opposites.get("also_from", []):
        listed = json.loads((folder / name).read_text(encoding="utf-8"))["pairs"]
        pairs.extend(tuple(pair) for pair in listed)
    return tuple((left, right) for left, right in pairs)


@functools.cache
def opposite_bases() -> dict[str, frozenset[str]]:
    """Each word base of the opposites lists with the bases of its opposites (both ways)."""
    found: dict[str, set[str]] = {}
    for left, right in opposite_pairs():
        found.setdefault(word_base(left), set()).add(word_base(right))
        found.setdefault(word_base(right), set()).add(word_base(left))
    return {base: frozenset(others) for base, others in found.items()}


@functools.cache
def sentence_openers() -> frozenset[str]:
    """Words that open a sentence without being part of a name ("Under", "Since", "The"), with the verbs
    of advice that open a command ("Use Django's …")."""
    words = judge_words()
    return frozenset((*words["sentence_openers"]["words"], *words["modality"]["imperative_verbs"]))
