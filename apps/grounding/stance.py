"""Stance: whether a sentence endorses or rejects each thing it names, and the clash of two stances.

"Passwords should be hashed with MD5" endorses MD5 for passwords; "fast hashes such as MD5 … must not
be used for passwords" rejects it. The two are about the same thing and take opposite sides, which is
a contradiction a reader can name ("the claim recommends MD5; the evidence says it must not be used"),
even though the two sentences are close in meaning and share their words.

A sentence is cut into pieces at semicolons, colons and contrasts ("but", "while", "whereas"); in
each piece the stance cues of ``judge_words.json`` are found (longest first, "must not" before
"must"). A cue that works backwards ("… must not be used", "… is recommended") gives its stance to
the words since the previous cue; one that works forwards ("avoid …", "recommends …", "rather than
…") to the words up to the next cue — for a bare negation ("not", "never", "no") only the next few
words. A rejection overrides an endorsement of the same word in the same piece ("use Argon2id rather
than MD5" endorses Argon2id and rejects MD5). Words no cue reaches have no stance.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from apps.grounding.contradictions import content_words, name_tokens, shared_weight, without_non_negations
from apps.grounding.judge_words import stance_cues

REJECT, ENDORSE = "reject", "endorse"
_PIECE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])|;|:(?=\s)|,?\s+(?:but|whereas|while)\s+", re.I)
_BARE_NEGATIONS = frozenset({"not", "never", "no", "without"})
#: How many words a bare negation reaches ("not a certification", "never store plaintext passwords").
BARE_NEGATION_WORDS = 3
_WORD_RE = re.compile(r"[A-Za-z0-9][\w.'-]*")


@dataclass(frozen=True)
class Stance:
    side: str  # REJECT or ENDORSE
    cue: str  # the words that say so ("must not", "should")
    piece: str  # the part of the sentence it was read in


@dataclass(frozen=True)
class _Cue:
    start: int
    end: int
    side: str
    forwards: bool
    text: str
    backwards: bool = False  # a forwards cue that also reaches back (two overlapping cues of one side)


def _cues(piece: str) -> list[_Cue]:
    cues = stance_cues()
    found = [
        _Cue(match.start(), match.end(), side, forwards, match.group(0))
        for pattern, side, forwards in (
            (cues.reject_before, REJECT, False),
            (cues.reject_after, REJECT, True),
            (cues.endorse_before, ENDORSE, False),
            (cues.endorse_after, ENDORSE, True),
        )
        for match in pattern.finditer(piece)
    ]
    # A cue inside a longer one is part of it: the longest wins ("must not be used" over "must", "MUST NOT"
    # over its "not"); two of the same side that only partly overlap work both ways ("MD5 is fine to use":
    # "is fine", "fine to").
    found.sort(key=lambda cue: (cue.start, -(cue.end - cue.start)))
    kept: list[_Cue] = []
    for cue in found:
        if kept and cue.start < kept[-1].end:
            last = kept[-1]
            if cue.end <= last.end:
                continue
            if cue.side == last.side and cue.forwards != last.forwards:
                kept[-1] = _Cue(last.start, max(last.end, cue.end), cue.side, True, last.text, backwards=True)
            elif cue.end - cue.start > last.end - last.start:
                kept[-1] = cue
            continue
        kept.append(cue)
    return kept


_NUMBER_RE = re.compile(r"\d+(?:,\d{3})*")


def _names(text: str) -> set[str]:
    return {name for name in name_tokens(text) if not _NUMBER_RE.fullmatch(name)}


def _terms(text: str) -> set[str]:
    """The names and content words of a stretch of text, as the rest of the judge compares them; bare
    numbers are quantities, which the quantity checks compare, not things a sentence takes sides on."""
    return {term for term in (*name_tokens(text), *content_words(text)) if not _NUMBER_RE.fullmatch(term)}


@functools.lru_cache(maxsize=4096)
def stances(text: str) -> dict[str, Stance]:
    """Each term of ``text`` that some cue reaches, with the stance taken on it."""
    found: dict[str, Stance] = {}
    for piece in (p.strip() for p in _PIECE_RE.split(without_non_negations(text)) if p and p.strip()):
        cues = _cues(piece)
        for index, cue in enumerate(cues):
            spans = []
            if cue.forwards:
                end = cues[index + 1].start if index + 1 < len(cues) else len(piece)
                after = piece[cue.end : end]
                if cue.text.lower() in _BARE_NEGATIONS:
                    after = " ".join(_WORD_RE.findall(after)[:BARE_NEGATION_WORDS])
                spans.append(after)
            if not cue.forwards or cue.backwards:
                spans.append(piece[cues[index - 1].end if index else 0 : cue.start])
            for term in _terms(" ".join(spans)):
                current = found.get(term)
                if current is None or (current.piece == piece and cue.side == REJECT):
                    found[term] = Stance(cue.side, cue.text, piece)
    return found


@dataclass(frozen=True)
class StanceClash:
    term: str
    claim: Stance
    evidence: Stance

    def as_signal(self) -> dict[str, str]:
        return {
            "type": "stance",
            "claim": f"{self.claim.cue} … {self.term}",
            "evidence": f"{self.term} … {self.evidence.cue}",
        }


#: A clash needs the two pieces to share at least this much besides the term (a name counts double): the
#: same thing taken for the same purpose, not MD5 for passwords against MD5 for checksums.
MIN_SHARED_TOPIC = 1


def stance_agreement(claim: str, evidence: str) -> bool:
    """Whether the evidence takes the claim's side on the names both take a side on, and never the other
    side: "TLS 1.0 … should no longer be used" and "deprecates TLS 1.0" agree, whatever else the
    evidence's sentence goes on to recommend."""
    mine, theirs = stances(claim), stances(evidence)
    claim_names = _names(claim)
    shared = [term for term in mine.keys() & theirs.keys() if term in claim_names]
    return bool(shared) and all(mine[term].side == theirs[term].side for term in shared)


def stance_clash(claim: str, evidence: str) -> StanceClash | None:
    """A name the claim endorses and the evidence rejects, or the reverse, in pieces about the same
    thing (they share a word besides it); None when there is none."""
    mine, theirs = stances(claim), stances(evidence)
    claim_names = _names(claim)
    for term in sorted(mine.keys() & theirs.keys() & claim_names):
        # Only names: a common word ("data", "use") is too often taken both ways in one text.
        ours, other = mine[term], theirs[term]
        if ours.side == other.side:
            continue
        topic = shared_weight(_terms(ours.piece) - {term}, _terms(other.piece) - {term})
        if topic >= MIN_SHARED_TOPIC:
            return StanceClash(term, ours, other)
    return None
