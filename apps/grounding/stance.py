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

from apps.grounding.contradictions import (
    _NUMBER_IN_WORDS_RE,
    MIN_SHARED_WORDS,
    _stem,
    content_words,
    name_tokens,
    negated_words,
    number_word_value,
    opposed_words,
    shared_weight,
    unstated_details,
    without_non_negations,
)
from apps.grounding.judge_words import judge_words, modality_cues, scope_words, stance_cues

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
    command = imperative(piece)
    if command and not any(cue.start == 0 for cue in found):
        # "Hash passwords with MD5." recommends what it names as surely as "… should be hashed with MD5".
        found.append(_Cue(0, len(command), ENDORSE, True, command))
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


@functools.lru_cache(maxsize=32768)
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


_FIRST_WORD_RE = re.compile(r"\s*([A-Za-z]+)\b")


def first_word(sentence: str) -> re.Match[str] | None:
    """The word a sentence opens with (group 1), ignoring leading spaces; ``None`` when it opens with
    anything else (a number, a quote)."""
    return _FIRST_WORD_RE.match(sentence)


PROHIBIT, REQUIRE, RECOMMEND, PERMIT, STATE = "prohibit", "require", "recommend", "permit", "state"


def imperative(sentence: str) -> str:
    """The verb of advice a command starts with ("Use …", "Hash passwords with MD5"), or "" when the
    sentence is not a command: its first word is no such verb, or a verb of being follows it ("Hash
    functions are fast" describes)."""
    cues = modality_cues()
    first = first_word(sentence)
    if first is None or first.group(1).lower() not in cues.imperative_verbs:
        return ""
    rest = {word.lower() for word in _WORD_RE.findall(sentence[first.end() :])}
    return "" if rest & cues.being else first.group(1)


@functools.lru_cache(maxsize=32768)
def modalities(text: str) -> frozenset[str]:
    """What ``text`` does with what it names: prohibits, requires, recommends, permits, or (none of
    these) only states. A prohibition's words are taken out before the rest is read, so "must not"
    is not also a "must"; a sentence may do several things ("recommends Argon2id … must not be used")."""
    cues = modality_cues()
    text = without_non_negations(text)
    found = set()
    if cues.prohibit.search(text) or cues.negated_imperative.search(text):
        found.add(PROHIBIT)
        text = cues.negated_imperative.sub(" ", cues.prohibit.sub(" ", text))
    for side, pattern in ((REQUIRE, cues.require), (RECOMMEND, cues.recommend), (PERMIT, cues.permit)):
        if pattern.search(text):
            found.add(side)
    if imperative(text) and PROHIBIT not in found:
        found.add(RECOMMEND)
    return frozenset(found or {STATE})


#: What evidence must do for a claim that does each thing to be stated by it: a recommendation is stated
#: by a recommendation or a requirement (a weaker claim than its evidence still holds), a requirement only
#: by a requirement, a prohibition only by a prohibition, a permission ("may", "optional") only by a
#: permission; a plain statement by anything but a prohibition (what must be, is, as the packs state
#: rules).
STATED_BY = {
    PROHIBIT: frozenset({PROHIBIT}),
    REQUIRE: frozenset({REQUIRE}),
    RECOMMEND: frozenset({RECOMMEND, REQUIRE}),
    PERMIT: frozenset({PERMIT}),
    STATE: frozenset({STATE, REQUIRE, RECOMMEND, PERMIT}),
}


def modality_stated(claim: str, evidence: str) -> bool:
    """Whether the evidence does what the claim does with what it names (``STATED_BY``), for every
    thing the claim does."""
    theirs = modalities(evidence)
    return all(STATED_BY[mine] & theirs for mine in modalities(claim))


@functools.cache
def _cue_words() -> frozenset[str]:
    """The content words of every cue: what a sentence does with a thing, not the thing (they are read
    as modality, not counted as words the evidence must share)."""
    words = judge_words_all()
    function_words = judge_words()["function_words"]["words"]
    return frozenset(word for phrase in (*words, *function_words) for word in content_words(phrase))


def judge_words_all() -> list[str]:
    """Every cue phrase of the stance and modality lists."""
    lists = judge_words()
    return [
        phrase
        for section in ("stance", "modality")
        for name, phrases in lists[section].items()
        if not name.startswith("_") and name != "being"
        for phrase in phrases
    ]


def asserted_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about and what it asserts of it (its content words
    less the cue words)."""
    return content_words(text) - _cue_words()


def asserted_share(claim: str, text: str) -> float:
    """The share of what ``claim`` asserts that ``text`` says; a hyphen reads as a space on both sides
    ("backward compatible" is said by "backward-compatible")."""
    mine = asserted_words(claim.replace("-", " "))
    said = content_words(text.replace("-", " "))
    return len(mine & said) / len(mine) if mine else 0.0


@dataclass(frozen=True)
class Parts:
    """How much of a claim one evidence sentence states, part by part."""

    details: tuple[str, ...]  # numbers and names of the claim the evidence does not state
    words: tuple[str, ...]  # what the claim asserts that the evidence does not say
    coverage: float  # the share of the claim's asserted words the evidence says
    polarity: bool  # both affirm, or both negate (or take the same side on the same names)
    modality: bool  # the evidence prohibits/requires/recommends/permits as the claim does

    substituted: tuple[str, ...] = ()  # claim words where the evidence has another word in their place
    scope: tuple[str, ...] = ()  # ranking, ordering or bounding words of the claim the evidence lacks
    unbound: tuple[str, ...] = ()  # claim parts the evidence states, but of another thing it names

    def missing(self, min_coverage: float) -> list[str]:
        """The parts not stated, named for a reader ("the number 30", "what it asserts: …")."""
        parts = []
        if self.details:
            parts.append("the numbers and names " + ", ".join(self.details))
        if self.substituted:
            parts.append("; ".join(self.substituted))
        if self.scope:
            parts.append("the words that rank or bound it (" + ", ".join(self.scope) + ")")
        if self.unbound:
            parts.append("; ".join(self.unbound))
        if self.coverage < min_coverage:
            parts.append("what it asserts (" + ", ".join(self.words) + ")")
        if not self.polarity:
            parts.append("its polarity (one side negates)")
        if not self.modality:
            parts.append("its modality (must/should/may/must not)")
        return parts


def claim_parts(claim: str, sentence: str, context: str) -> Parts:
    """The claim against one evidence sentence, part by part: its numbers and names (stated in the
    sentence or its entry's topic and source, ``context``), what it asserts (its content words), its
    polarity and its modality."""
    stated = f"{sentence} {context}"
    mine = asserted_words(claim)
    theirs = content_words(stated)
    words = tuple(sorted(mine - theirs))
    coverage = 1.0 - len(words) / len(mine) if mine else 0.0
    # Polarity is compared where it applies: what one side negates, the other must not state plainly
    # (a "not" about something the other side does not mention changes nothing).
    claim_negates, evidence_negates = negated_words(claim), negated_words(sentence)
    clash = ((claim_negates - evidence_negates) & content_words(sentence)) | (
        (evidence_negates - claim_negates) & mine
    )
    polarity = not clash or stance_agreement(claim, sentence)
    capitals = tuple(word for word in _CAPITALISED_RE.findall(claim) if word.lower() not in stated.lower())
    lowered = {word.lower() for word in _WORD_RE.findall(stated)}
    # A number written in words is a number too ("the number one risk" against "third"), read whole ("five
    # hundred or more" is stated by "more than 500").
    numbers = tuple(
        words
        for words in (match.group(0) for match in _NUMBER_IN_WORDS_RE.finditer(claim.lower()))
        if not _number_stated(words, stated)
    )
    return Parts(
        details=tuple(dict.fromkeys((*unstated_details(claim, stated), *capitals, *numbers))),
        substituted=(
            *_substitutions(claim, sentence),
            *(
                f"“{mine}” where the evidence says the opposite, “{theirs}”"
                for mine, theirs in opposed_words(claim, sentence)
            ),
        ),
        scope=tuple(sorted(_scope(claim) - lowered)),
        unbound=(*unbound_parts(claim, sentence), *misplaced_numbers(claim, sentence)),
        words=words,
        coverage=coverage,
        polarity=polarity,
        # A plain statement that takes the evidence's side ("RFC 8996 deprecates TLS 1.0" against "TLS 1.0
        # … must not be used") says what the evidence's modal does.
        modality=modality_stated(claim, sentence)
        or (modalities(claim) == {STATE} and stance_agreement(claim, sentence)),
    )


# A capitalised word inside a sentence names something ("Django", "Injection", "NIST"); the first word of
# a sentence is capitalised anyway.
_CAPITALISED_RE = re.compile(r"(?<=[\w,;:)] )[A-Z][a-z]+[\w-]*")
_TOKEN_RE = re.compile(r"[a-z0-9][a-z0-9'-]*")
#: How many words apart a claim word's two neighbours may stand in the evidence for the words between
#: them to be in its place.
SUBSTITUTION_SPAN = 3


def _content_sequence(text: str) -> list[str]:
    from apps.grounding.contradictions import _FUNCTION_WORDS, _stem  # its own crude stemming, shared

    stems = (
        _stem(word)
        for word in _TOKEN_RE.findall(text.lower())
        if len(word) > 2 and word not in _FUNCTION_WORDS
    )
    return [stem for stem in stems if stem not in _cue_words()]


def _substitutions(claim: str, evidence: str) -> list[str]:
    """Claim words whose neighbours the evidence has side by side with other words between them: "fetches
    … in the same query" against "fetches … in a separate query" — one word put in place of another,
    which is what a near copy that says something else looks like."""
    mine, theirs = _content_sequence(claim), _content_sequence(evidence)
    have = set(theirs)
    found = []
    for index, word in enumerate(mine):
        if word in have or index == 0 or index + 1 >= len(mine):
            continue
        left, right = mine[index - 1], mine[index + 1]
        if left not in have or right not in have:
            continue
        for start, other in enumerate(theirs):
            if other != left:
                continue
            between = theirs[start + 1 : start + 1 + SUBSTITUTION_SPAN + 1]
            if right in between:
                instead = between[: between.index(right)]
                if instead and not set(instead) & set(mine):
                    found.append(f"“{word}” where the evidence says “{' '.join(instead)}”")
                    break
    return found


def _number_stated(word: str, text: str) -> bool:
    """Whether ``text`` states the number ``word`` names, in words or digits."""
    value = number_word_value(word)
    return re.search(rf"(?<![\w.]){value}(?![\d])|\b{word}\b", text, re.I) is not None


def _scope(text: str) -> set[str]:
    """The ranking, ordering and bounding words of ``text``, outside the cues that only say what it does
    with a thing ("no longer", "no later than" are a prohibition and a bound, not a comparison)."""
    text = modality_cues().prohibit.sub(" ", without_non_negations(text))
    return {word.lower() for word in _WORD_RE.findall(text)} & scope_words()


# A sentence that sets two things side by side ("select_related() … a SQL join, while prefetch_related()
# … a separate lookup"; "gzip is defined in RFC 1952 and Brotli … in RFC 7932"; "the inclusive method,
# which includes …, or the carve-out method, which excludes …") holds every word of a claim that mixes
# them up. Its clauses are read apart: at sentence ends, semicolons, colons, contrasts, ", or", ", not a"
# ("an opinion, not a certification"; "not later than" is a bound), ", and", and an "and" that starts a
# new name. A clause opened by a contrast, an alternative or a "not a" is the other side.
_CONTRAST = r"but|whereas|while|versus|vs\.|rather than|instead of|unlike"
_BINDING_RE = re.compile(
    r"(?<=[.!?])\s+(?=[A-Z0-9])|;|:(?=\s)"
    rf"|,?\s+(?=(?i:{_CONTRAST})\s)|,\s*(?=(?i:or|not an?|not the)\s)|,\s*(?i:and)\s+|\s+and\s+(?=[A-Z])"
)
_OTHER_SIDE_RE = re.compile(rf"(?:{_CONTRAST}|or|not an?|not the)\s", re.I)
#: The most words a piece of a sentence has that is a name in a list rather than a clause.
MAX_FRAGMENT_WORDS = 3
_DIGITS_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")


def _joined_fragments(pieces: list[str]) -> list[str]:
    """``pieces`` with every piece of a few words read with the next (the last with the one before): a
    few words are a name in a list ("TLS 1.0 and TLS 1.1 are deprecated"), not a clause."""
    joined: list[str] = []
    fragment = ""
    for piece in (piece.strip() for piece in pieces if piece and piece.strip()):
        part = f"{fragment} {piece}" if fragment else piece
        if len(_WORD_RE.findall(part)) <= MAX_FRAGMENT_WORDS:
            fragment = part
            continue
        fragment = ""
        joined.append(part)
    if fragment:
        joined = [*joined[:-1], f"{joined[-1]} {fragment}"] if joined else [fragment]
    return joined


@functools.lru_cache(maxsize=32768)
def _binding_clauses(text: str) -> tuple[tuple[str, bool], ...]:
    """The clauses of ``text`` for binding, each with whether it is the other side of a contrast."""
    clauses = _joined_fragments(_BINDING_RE.split(text))
    return tuple((clause, _OTHER_SIDE_RE.match(clause) is not None) for clause in clauses)


@functools.lru_cache(maxsize=32768)
def _numbers(text: str) -> frozenset[str]:
    """The numbers of ``text``, in digits ("two" is "2", "1,209,600" is "1209600")."""
    found = {match.group(0).replace(",", "") for match in _DIGITS_RE.finditer(text)}
    # "one" is as often a pronoun ("a required one", "one of them") as a number: digits say "1".
    words = (word.lower() for word in _NUMBER_IN_WORDS_RE.findall(text))
    found |= {str(number_word_value(word)) for word in words if word != "one"}
    return frozenset(found)


@functools.lru_cache(maxsize=32768)
def _bound_words(text: str) -> frozenset[str]:
    """What a clause is about and asserts: its names and content words, less cue words and bare numbers."""
    return frozenset(term for term in _terms(text) if term not in _cue_words())


def unbound_parts(claim: str, sentence: str) -> list[str]:
    """The parts of the claim that ``sentence`` states, but of another thing it names: each claim clause is
    read against the evidence clause that shares most of its words (a later one on a tie: the first
    clause, which often names the subject of all, is read with every clause anyway). Its numbers must
    be the ones that clause (or the first) states, and none of its words may come only from the other
    side of a contrast."""
    clauses = _binding_clauses(sentence)
    if len(clauses) < 2:
        return []
    stated_numbers = _numbers(sentence)
    # Words only the other side of a contrast says (cue words too: "an addressable specification rather
    # than a required one" says "required" of the other side).
    other_side = set().union(*(_terms(text) for text, contrast in clauses if contrast))
    said = set().union(*(_terms(text) for text, _ in clauses))  # every term of the sentence, for rivals
    other_side -= set().union(*(_terms(text) for text, contrast in clauses if not contrast))
    found: list[str] = []
    for claim_clause, claim_contrast in _binding_clauses(claim):
        if claim_contrast:
            # The claim's own other side ("… addressable rather than a required one") is the evidence's.
            continue
        words = _bound_words(claim_clause)
        weights = [shared_weight(words, _bound_words(text)) for text, _ in clauses]
        best_weight = max(weights)
        if best_weight < MIN_SHARED_WORDS:  # about something else: nothing to bind
            continue
        best = max(range(len(clauses)), key=lambda index: (weights[index], index))
        numbers = _numbers(claim_clause) & stated_numbers
        # The clause that says what the claim says, with the subject the first clause names for all
        # ("RFC 9110 defines …, and defines PUT, DELETE … as idempotent").
        own = _numbers(clauses[best][0]) | _numbers(clauses[0][0])
        if own:
            # It states numbers of its own: the claim's must be among them ("EUR 20 million or 4 % …;
            # a lower tier of EUR 10 million or 2 %" does not state "EUR 20 million or 2 %").
            bound = numbers <= own
        else:
            # A first clause that introduces a list ("… gives minimum parameters: Argon2id with 19 MiB …;
            # bcrypt with a work factor of 10 …"): the numbers stand together in one item that shares a
            # word with the claim, not on the other side of a contrast.
            bound = any(
                numbers <= _numbers(text) and weight >= 1 and not contrast
                for (text, contrast), weight in zip(clauses, weights, strict=True)
            )
        if numbers and not bound:
            shown = ", ".join(sorted(numbers))
            found.append(f"the numbers {shown} for this (the evidence gives them to another thing)")
        home = _terms(clauses[best][0]) | _terms(clauses[0][0])
        # What the claim itself denies is the other side in the claim too ("so it is not a certification").
        crossed = sorted((_terms(claim_clause) - home - negated_words(claim_clause)) & other_side)
        if crossed:
            found.append(
                f"{_as_written(crossed, claim_clause)} of this (the evidence says it of the other side)"
            )
        moved = _said_of_a_rival(claim, claim_clause, clauses[best][0], home, said)
        if moved:
            found.append(
                f"{_as_written(moved, claim_clause)} of this (the evidence says it of another thing it names)"
            )
    return found


def _as_written(terms: list[str], text: str) -> str:
    """``terms`` (stems, lowered names) as ``text`` writes them, for a reader."""
    words = [word.rstrip(".'-") for word in _WORD_RE.findall(text)]  # "… Argon2PasswordHasher." ends one
    written = {_stem(word.lower()): word for word in words}
    written |= {word.lower(): word for word in words}
    return ", ".join(written.get(term, term) for term in terms)


def _said_of_a_rival(
    claim: str, claim_clause: str, best_clause: str, home: set[str], said: set[str]
) -> list[str]:
    """Claim words the evidence says only in another of its clauses (in ``said``, not in ``home``: the
    terms of the clause that says what the claim says and of the first), when that clause names
    something the claim does not: "By default Django stores passwords with the Argon2PasswordHasher"
    against "By default Django stores passwords with PBKDF2PasswordHasher …; Argon2PasswordHasher is also
    supported" — the claim puts a word of one clause into another's place."""
    if not _names(best_clause) - _names(claim):
        return []
    return sorted((_terms(claim_clause) - _cue_words() - home) & (said - home))


# The finer pieces a number is read in: a sentence that gives numbers to several things ("deprecated in
# Python 3.10 and removed from the standard library in Python 3.12"; "Cross-site Scripting ranked first,
# Out-of-bounds Write second and SQL Injection third") says each number of the piece it stands in.
_NUMBER_PIECE_RE = re.compile(
    r",(?!\d)\s*|[;:]\s*|\s+(?:and|or|but|while|whereas|with)\s+|\s+\(|\)\s*|(?<=[.!?])\s+(?=[A-Z0-9])", re.I
)
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
    "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10,
}  # fmt: skip
_ORDINAL_RE = re.compile(rf"\b(?:({'|'.join(_ORDINALS)})|(\d+)(?:st|nd|rd|th))\b", re.I)


@dataclass(frozen=True)
class _NumberPiece:
    numbers: frozenset[str]  # its numbers in digits, and its ranks ("#2" for "second" or "2nd")
    words: frozenset[str]  # what it is about (``_bound_words``)


#: The words before "second" that make it a unit of time, not a rank ("1 second", "per second").
_BEFORE_A_SECOND_OF_TIME = re.compile(r"(?:\d|\b(?:per|a|an|each|every|one|half))\s*$", re.I)


def _ranks(text: str) -> frozenset[str]:
    return frozenset(
        f"#{_ORDINALS[word.lower()] if word else digits}"
        for match in _ORDINAL_RE.finditer(text)
        for word, digits in [match.groups()]
        if not (word and word.lower() == "second" and _BEFORE_A_SECOND_OF_TIME.search(text[: match.start()]))
    )


@functools.lru_cache(maxsize=32768)
def _number_pieces(text: str) -> tuple[_NumberPiece, ...]:
    """``text`` in the pieces a number is read in; a piece of a few words joins the next (the last, the
    one before)."""
    pieces = _joined_fragments(_NUMBER_PIECE_RE.split(text))
    numbered = ((piece, _numbers(piece) | _ranks(piece)) for piece in pieces)
    return tuple(_NumberPiece(numbers, _bound_words(piece) - numbers) for piece, numbers in numbered)


def _shown(number: str) -> str:
    return f"rank {number[1:]}" if number.startswith("#") else number


def misplaced_numbers(claim: str, sentence: str) -> list[str]:
    """The claim's numbers that ``sentence`` gives to another thing than the claim does: the piece of the
    sentence that says what the claim's piece says holds another number, and the one that holds the
    claim's number says less of it ("removed … in Python 3.10" against "deprecated in Python 3.10 and
    removed … in Python 3.12")."""
    numbered = [piece for piece in _number_pieces(sentence) if piece.numbers]
    if len(numbered) < 2:
        return []
    claim_pieces = _number_pieces(claim)
    claim_numbers = frozenset().union(*(piece.numbers for piece in claim_pieces))
    found = []
    for mine in claim_pieces:
        for number in sorted(mine.numbers):
            holding = [
                shared_weight(mine.words, piece.words) for piece in numbered if number in piece.numbers
            ]
            if not holding:  # not stated at all: the numbers-and-names check says so
                continue
            elsewhere = [
                (shared_weight(mine.words, piece.words), piece)
                for piece in numbered
                if not piece.numbers & claim_numbers
            ]
            weight, other = max(elsewhere, key=lambda item: item[0], default=(0.0, None))
            if other is not None and weight >= MIN_SHARED_WORDS and weight > max(holding):
                shown = ", ".join(sorted(_shown(number) for number in other.numbers))
                found.append(f"{_shown(number)} for this (the evidence gives it {shown})")
    return found
