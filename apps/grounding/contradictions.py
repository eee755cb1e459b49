"""Explicit contradiction signals between a claim and a piece of evidence, without a model.

Similarity says whether the two talk about the same thing; these say whether they disagree:

* **quantity** — a number with a unit that the evidence states differently ("48 hours" against
  "72 hours"; "3 days" equals "72 hours", so it is not a signal), or another count of the same noun;
* **identifier** — the same kind of named number with another value (Article 34 vs Article 33,
  RFC 5246 vs RFC 8446, TLS 1.2 vs TLS 1.3, CWE-89 vs CWE-79, Python 3.11 vs "version 3.12");
* **complexity** — a different big-O class ("O(n)" against "O(log n)"), per case when qualified;
* **superseded** — an identifier the evidence says was obsoleted, presented as current;
* **negation** — one side negates what the other states: in the aligned clause, a category the
  evidence denies ("not a certification"), or what the claim negates that the evidence states;
* **modal** — the claim makes optional what the evidence makes mandatory (may vs must), or allows an
  action the evidence forbids ("may store" vs "MUST NOT store"), or the reverse;
* **swapped** — two names described in each other's words;
* **opposite** — the claim uses a term whose opposite the evidence uses (idempotent /
  not idempotent, client-side / server-side, deprecated / added …).

Each signal is ``{"type", "claim", "evidence"}`` naming the words that disagree.
:func:`unstated_details` is the other side of the coin: the claim's numbers and names that the
evidence does not state, which keep a close claim from counting as supported.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from apps.grounding.judge_words import judge_words, negative_verbs, opposite_bases, scope_words, word_base

Signal = dict[str, str]

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 1000,
}  # fmt: skip
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_UNITS_IN_WORDS = "|".join(
    sorted((word for word, value in _NUMBER_WORDS.items() if 0 < value < 20), key=len, reverse=True)
)
_SIMPLE_NUMBER_WORD = rf"(?:(?:{_TENS})(?:-(?:{_UNITS_IN_WORDS}))?|{_UNITS_IN_WORDS}|zero)"
#: A number in words, whole: "four", "sixty-four", "five hundred", "two thousand and twelve" (read as one
#: number, so "sixty-four bits" is not "four bits" and "five hundred residents" not "hundred residents").
_NUMBER_WORD_ALTERNATIVES = (
    rf"(?:{_SIMPLE_NUMBER_WORD}[\s-]+(?:hundred|thousand)(?:[\s-]+(?:and\s+)?{_SIMPLE_NUMBER_WORD})?"
    rf"|{_SIMPLE_NUMBER_WORD}|hundred|thousand)"
)


def number_word_value(text: str) -> int | None:
    """The value of a number written in words ("sixty-four" 64, "five hundred" 500), else ``None``."""
    total = current = 0
    words = re.split(r"[\s-]+", text.strip().lower())
    if not set(words) & _NUMBER_WORDS.keys():
        return None
    for word in words:
        if word == "and":
            continue
        if word == "hundred":
            current = (current or 1) * 100
        elif word == "thousand":
            total, current = total + (current or 1) * 1000, 0
        elif word in _NUMBER_WORDS:
            current += _NUMBER_WORDS[word]
        else:
            return None
    return total + current


# Units → (dimension, factor to the dimension's base unit).
_UNITS = {
    "second": ("time", 1 / 3600), "seconds": ("time", 1 / 3600), "minute": ("time", 1 / 60),
    "minutes": ("time", 1 / 60), "hour": ("time", 1), "hours": ("time", 1), "hrs": ("time", 1),
    "day": ("time", 24), "days": ("time", 24), "business days": ("time", 24), "calendar days": ("time", 24),
    "business day": ("time", 24), "calendar day": ("time", 24),
    "week": ("time", 168), "weeks": ("time", 168), "month": ("time", 720), "months": ("time", 720),
    "year": ("time", 8760), "years": ("time", 8760),
    "ms": ("time", 1 / 3_600_000), "milliseconds": ("time", 1 / 3_600_000),
    "%": ("percent", 1), "percent": ("percent", 1), "per cent": ("percent", 1),
    "bits": ("bits", 1), "bit": ("bits", 1), "bytes": ("bytes", 1), "byte": ("bytes", 1),
    "characters": ("chars", 1), "character": ("chars", 1), "chars": ("chars", 1),
    "identifiers": ("count-identifiers", 1), "criteria": ("count-criteria", 1),
    "categories": ("count-categories", 1), "lawful bases": ("count-bases", 1), "bases": ("count-bases", 1),
    "rounds": ("count-rounds", 1), "iterations": ("count-iterations", 1), "residents": ("count-people", 1),
    "individuals": ("count-people", 1), "people": ("count-people", 1), "million": ("money-million", 1),
}  # fmt: skip
# A unit of two words may be hyphenated with its number: "a 60-calendar-day limit".
_UNIT_PATTERN = "|".join(
    re.escape(unit).replace(r"\ ", r"[\s-]") for unit in sorted(_UNITS, key=len, reverse=True)
)
# "1,209,600 seconds" is one number (thousands groups), not "209,600 seconds".
_NUMBER = r"(\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:[.,]\d+)?|" + _NUMBER_WORD_ALTERNATIVES + r")"
_QUANTITY_RE = re.compile(
    rf"(?<![\w.]){_NUMBER}(?:-|\s+)?(?:{'|'.join(['more', 'additional'])}\s+)?({_UNIT_PATTERN})\b", re.I
)
# Named numbers: the word before says what kind of thing the number names (A03 is OWASP's).
_IDENTIFIER_KINDS = r"art(?:icle)?\.?|rfc|cwe|tls|ssl|http/|python|django|section|§"
_IDENTIFIER_RE = re.compile(rf"\b({_IDENTIFIER_KINDS}|a)\s?-?(\d+(?:\.\d+)?)\b", re.I)
# What the evidence says is obsolete: "RFC 9113 … obsoletes RFC 7540", "deprecates TLS 1.0 and TLS 1.1",
# "RFC 2616 was replaced by …".
_NAMED = rf"(?:{_IDENTIFIER_KINDS})\s?-?\d+(?:\.\d+)?"
_NAMED_LIST = rf"{_NAMED}(?:(?:\s*,\s*|\s+(?:and|or)\s+){_NAMED})*"
_SUPERSEDED_RE = re.compile(
    rf"\b(?:obsoletes|supersedes|replaces|deprecates)\s+(?:the\s+)?({_NAMED_LIST})"
    rf"|\b({_NAMED_LIST})\s+(?:is|are|was|were|has been|have been)\s+(?:now\s+)?"
    r"(?:obsoleted|superseded|replaced|deprecated)\b",
    re.I,
)
# A claim with these words already speaks of the old version as old.
_AWARE_OF_SUPERSESSION_RE = re.compile(
    r"\b(obsolete\w*|supersed\w*|replac\w*|deprecat\w*|former\w*|original\w*|previous\w*|older|earlier|"
    r"anymore|any longer|no longer|until|before)\b",
    re.I,
)
# "an opinion, not a certification", "is not a standard": the evidence denies a category by name.
_DENIED_CATEGORY_RE = re.compile(r"\bnot\s+(?:a|an)\s+([a-z][\w-]{2,})", re.I)
_COMPLEXITY_RE = re.compile(r"\b[OΩΘ]\(\s*([^)]*?)\s*\)")
# "no" is not negation inside a name ("no-store", "no-cache").
_NEGATION_RE = re.compile(
    r"\b(not|never|no longer|cannot|can't|don't|doesn't|isn't|aren't|wasn't|won't|mustn't|shouldn't|"
    r"neither|nor|nothing|prohibit(?:s|ed)?|forbid(?:s|den)?|no)(?![\w-])",
    re.I,
)
# Phrases with a negative word that bound a quantity or add emphasis rather than negate the statement.
_NOT_NEGATIONS_RE = re.compile(
    r"\b(?:not|no) (?:later|more|less|fewer|longer|sooner|earlier) than\b|\bnot only\b|\bwhether or not\b|"
    r"\bif not\b|\bnot exceed(?:ing)?\b|\bno matter\b|\bin no case\b|\bno (?:more|less) than\b",
    re.I,
)
# A negative word written as a name inside a sentence names something ("403 Forbidden", "Do Not Track"); in
# capitals it is still a negation ("MUST NOT").
_NAMED_NEGATION_RE = re.compile(r"(?<=[\w)\]] )(?:Forbidden|Prohibited|Not|No|Never|Nor)\b")
# Words that deny what follows without negating the statement ("addressable rather than required").
_DENIES_FOLLOWING_RE = re.compile(r"\b(?:rather than|instead of)\b", re.I)
# A contrast at the end of a clause denies the second term but asserts the clause ("encryption is an
# addressable specification, not a required one").
_CONTRAST_RE = re.compile(
    r",\s*not\s+(?:an?\s+|the\s+)?[\w-]+(?:\s+ones?)?(?=\s*(?:[.;,]|$))"
    # "… with the secrets module, and not with the random module": the alternative denied, at the end.
    r"|(?:^\s*|,\s*(?:and\s+|but\s+)?|\s+(?:and|but)\s+)not\s+(?:with|in|by|for|from|on|as|via|through|over|at)\s+"
    r"(?:an?\s+|the\s+)?[\w.()-]+(?:\s+[\w.()-]+){0,2}(?=\s*(?:[.;]|$))",
    re.I,
)
_STRONG_MODAL_RE = re.compile(
    r"\b(must|shall|required|mandatory|obligat\w+|has to|have to|needs? to)\b", re.I
)
_WEAK_MODAL_RE = re.compile(
    r"\b(may|optional|optionally|can choose|is allowed|are allowed|permitted|voluntary)\b", re.I
)
_OPPOSITES = [
    ("idempotent", "not idempotent"), ("client-side", "server-side"), ("client side", "server side"),
    ("deprecated", "added"), ("deprecated", "introduced"), ("removed", "added"), ("removed", "introduced"),
    ("increase", "decrease"), ("increases", "decreases"), ("higher", "lower"), ("faster", "slower"),
    ("before", "after"), ("synchronous", "asynchronous"), ("encrypted", "plaintext"),
    ("required", "optional"), ("mandatory", "optional"), ("allowed", "forbidden"), ("allowed", "prohibited"),
    ("stateless", "stateful"), ("symmetric", "asymmetric"), ("public", "private"), ("minimum", "maximum"),
    ("at least", "at most"), ("more", "fewer"), ("weak", "strong"), ("enable", "disable"),
    ("enabled", "disabled"), ("secure", "insecure"), ("safe", "unsafe"), ("worst", "best"),
    ("lowest", "highest"), ("smaller", "larger"), ("inner", "outer"), ("first", "last"),
    ("supervisory authority", "data subjects"), ("controller", "processor"), ("amortised", "worst-case"),
    ("average", "worst"), ("salted", "unsalted"), ("random", "sequential"), ("read-only", "writable"),
    ("one-way", "reversible"), ("lossless", "lossy"), ("new", "unchanged"), ("supports", "removed"),
    ("supported", "removed"), ("certification", "attestation"), ("stable", "unstable"),
]  # fmt: skip
_WORD_CACHE: dict[str, re.Pattern[str]] = {}


def _word(term: str) -> re.Pattern[str]:
    pattern = _WORD_CACHE.get(term)
    if pattern is None:
        pattern = _WORD_CACHE[term] = re.compile(rf"(?<![\w-]){re.escape(term)}(?![\w-])", re.I)
    return pattern


def _number(text: str) -> float | None:
    text = text.lower().replace(",", "")
    in_words = number_word_value(text)
    if in_words is not None:
        return float(in_words)
    try:
        return float(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class Quantity:
    value: float  # in the dimension's base unit
    dimension: str
    text: str


def quantities(text: str) -> list[Quantity]:
    found = []
    for match in _QUANTITY_RE.finditer(text):
        number = _number(match.group(1))
        unit = re.sub(r"[\s-]+", " ", match.group(2).lower())
        if number is None or unit not in _UNITS:
            continue
        dimension, factor = _UNITS[unit]
        found.append(Quantity(round(number * factor, 6), dimension, match.group(0)))
    return found


# "18 specified types of identifiers", "10 types": a whole number counting a noun, not a year, a version
# or a number that names something (Article 33, RFC 8446). The noun is the next word or, past one word
# between, the word after it: both are counted, since only one of them is the noun ("18 specified types",
# "100 requests per second").
# "one" (and "zero") alone is as often a pronoun as a number; digits say "1".
_COUNTED_WORDS = rf"(?!(?:zero|one)\b(?![\s-]+(?:hundred|thousand))){_NUMBER_WORD_ALTERNATIVES}"
_COUNT_RE = re.compile(
    rf"(?<![\w.$/-])(\d{{1,6}}|(?:{_COUNTED_WORDS})\b)\s+([a-z]+)(?:\s+([a-z]{{3,}}))?\b", re.I
)
_NOT_COUNTED = frozenset(
    {"and", "or", "to", "of", "the", "in", "on", "at", "by", "for", "with", "than", "is", "are"}
)


# "the iteration count to 1,000,000", "the number of iterations went up to 600,000": a count named
# before its number, which follows within a few words.
_NAMED_COUNT_RE = re.compile(
    r"\b(?:number of ([a-z]{3,})|([a-z]{3,}) count)\b(?:\s+[a-z][\w-]*){0,5}?"
    r"\s+(?:to|of|is|at|was|reaches|reached)\s+(\d{1,3}(?:,\d{3})+|\d+)(?![\w.,]?\d)",
    re.I,
)


def counts(text: str) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for match in _NAMED_COUNT_RE.finditer(text):
        value = int(match.group(3).replace(",", ""))
        if not 1900 <= value <= 2100:
            found.setdefault(_stem((match.group(1) or match.group(2)).lower()), set()).add(value)
    for match in _COUNT_RE.finditer(text):
        number = match.group(1).lower()
        value = int(number) if number.isdigit() else number_word_value(number) or 0
        if 1900 <= value <= 2100 or _IDENTIFIER_PREFIX_RE.search(
            text[max(0, match.start() - 10) : match.start()]
        ):
            continue
        for noun in (word.lower() for word in match.group(2, 3) if word):
            if len(noun) >= 3 and noun not in _NOT_COUNTED and noun not in _UNITS:
                found.setdefault(_stem(noun), set()).add(value)
    return found


_IDENTIFIER_PREFIX_RE = re.compile(rf"({_IDENTIFIER_KINDS})\s?-?$", re.I)


_VERSION_RE = re.compile(r"\bversion\s+(\d+(?:\.\d+)?)\b", re.I)
_PRODUCT_RE = re.compile(r"\b(python|django|tls)\b(?!\s?-?\d)", re.I)


def identifiers(text: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for match in _IDENTIFIER_RE.finditer(text):
        kind = match.group(1).lower().rstrip(".")
        kind = {"art": "article", "a": "owasp", "§": "section"}.get(kind, kind)
        found.setdefault(kind, set()).add(match.group(2).lstrip("0") or "0")
    # "Python added it in version 3.8": a bare version number belongs to the one product the text names.
    products = {match.group(1).lower() for match in _PRODUCT_RE.finditer(text)}
    if len(products) == 1:
        (product,) = products
        for match in _VERSION_RE.finditer(text):
            found.setdefault(product, set()).add(match.group(1))
    return found


def complexities(text: str) -> set[str]:
    return {re.sub(r"\s+", "", match.group(1)).lower() for match in _COMPLEXITY_RE.finditer(text)}


_CASE_RE = re.compile(r"\b(worst|average|amortis|amortiz|expected|best)", re.I)


def _qualified_complexities(text: str) -> dict[str, set[str]]:
    """Big-O classes by the case they are stated for (worst, average, best), clause by clause."""
    found: dict[str, set[str]] = {}
    for clause in _CLAUSE_RE.split(text):
        if not clause:
            continue
        case = _CASE_RE.search(clause)
        if case is None:
            continue
        kind = {"amortis": "average", "amortiz": "average", "expected": "average"}.get(
            case.group(1).lower(), case.group(1).lower()
        )
        found.setdefault(kind, set()).update(complexities(clause))
    return {kind: values for kind, values in found.items() if values}


def _qualified_complexity_clash(claim: str, evidence: str) -> Signal | None:
    mine, theirs = _qualified_complexities(claim), _qualified_complexities(evidence)
    for case, values in mine.items():
        other = theirs.get(case)
        if other and not values & other:
            return {"type": "complexity", "claim": f"{case} O({', '.join(sorted(values))})",
                    "evidence": f"{case} O({', '.join(sorted(other))})"}  # fmt: skip
    return None


def without_non_negations(text: str) -> str:
    """``text`` without the phrases whose negative word bounds or stresses ("no later than", "not only") and
    the negative words that are names ("403 Forbidden")."""
    return _NAMED_NEGATION_RE.sub(" ", _NOT_NEGATIONS_RE.sub(" ", text))


def negated(text: str) -> bool:
    """Whether the statement of ``text`` is negated."""
    return bool(_NEGATION_RE.search(_CONTRAST_RE.sub(" ", without_non_negations(text))))


def _has(term: str, text: str) -> bool:
    # A plain substring test first: most terms are absent, and it is far cheaper than the regex.
    return term in text.lower() and bool(_word(term).search(text))


def contradiction_signals(claim: str, evidence: str) -> list[Signal]:
    """How ``claim`` disagrees with one evidence text (empty when nothing explicit does)."""
    claim_ids, evidence_ids = identifiers(claim), identifiers(evidence)
    signals = [
        *_quantity_clashes(claim, evidence),
        *(_identifier_clashes(claim_ids, evidence_ids) if _same_edition(claim, evidence) else ()),
        *_complexity_clashes(claim, evidence),
    ]
    superseded = _superseded(claim, evidence, claim_ids, evidence_ids)
    if superseded:
        signals.append(superseded)
    from apps.grounding.stance import stance_agreement  # stance reads this module's word tools

    if stance_agreement(claim, evidence):
        # Both take the same side on the same named things: a "not" or an opposite word elsewhere in
        # the evidence is about something else ("… TLS 1.2 should be used instead").
        return signals
    # Disagreements in words overlap (an opposite term is often a negation too): the first found says it.
    for check in (
        _permission_clash,
        _stance_clash,
        _denied_category,
        _swapped_names,
        _reversed_change,
        _opposite_terms,
        _opposite_in_aligned_clause,
        _clause_polarity_flip,
        _requirement_level_clash,
        _negated_head_stated,
    ):
        found = check(claim, evidence)
        if found:
            signals.append(found)
            break
    return signals


_YEAR_RE = re.compile(r"(?<![\w.:])(?:19|20)\d\d(?![\w.])")


def _same_edition(claim: str, evidence: str) -> bool:
    """Whether an identifier of the claim can be the evidence's: not when the claim dates it to a year
    the evidence never names ("category A4 in the 2017 edition" against an entry on the 2021 one)."""
    stated = set(_YEAR_RE.findall(evidence)) | set(re.findall(r"(?<=:)(?:19|20)\d\d", evidence))
    return not set(_YEAR_RE.findall(claim)) - stated


def _stance_clash(claim: str, evidence: str) -> Signal | None:
    from apps.grounding.stance import stance_clash  # stance reads this module's word tools

    clash = stance_clash(claim, evidence)
    return clash.as_signal() if clash else None


def _quantity_clashes(claim: str, evidence: str) -> list[Signal]:
    signals: list[Signal] = []
    evidence_quantities = quantities(evidence)
    for quantity in quantities(claim):
        same_dimension = [q for q in evidence_quantities if q.dimension == quantity.dimension]
        if same_dimension and all(abs(q.value - quantity.value) > 1e-6 for q in same_dimension):
            signals.append({"type": "quantity", "claim": quantity.text,
                            "evidence": ", ".join(q.text for q in same_dimension)})  # fmt: skip
    evidence_counts = counts(evidence)
    for noun, numbers in counts(claim).items():
        stated = evidence_counts.get(noun)
        if stated and not numbers & stated:
            signals.append({"type": "quantity", "claim": f"{', '.join(map(str, sorted(numbers)))} {noun}",
                            "evidence": f"{', '.join(map(str, sorted(stated)))} {noun}"})  # fmt: skip
    return signals


def _identifier_clashes(claim_ids: dict[str, set[str]], evidence_ids: dict[str, set[str]]) -> list[Signal]:
    signals: list[Signal] = []
    for kind, values in claim_ids.items():
        other = evidence_ids.get(kind)
        if other and not values & other:
            signals.append({"type": "identifier", "claim": f"{kind} {', '.join(sorted(values))}",
                            "evidence": f"{kind} {', '.join(sorted(other))}"})  # fmt: skip
    return signals


def _complexity_clashes(claim: str, evidence: str) -> list[Signal]:
    qualified = _qualified_complexity_clash(claim, evidence)
    if qualified:
        return [qualified]
    claim_big_o, evidence_big_o = complexities(claim), complexities(evidence)
    if claim_big_o and evidence_big_o and not claim_big_o & evidence_big_o:
        return [{"type": "complexity", "claim": ", ".join(f"O({c})" for c in sorted(claim_big_o)),
                 "evidence": ", ".join(f"O({c})" for c in sorted(evidence_big_o))}]  # fmt: skip
    return []


def _negative(clause: str) -> bool:
    """Whether a clause says something is not so: a negation, or a negative verb ("bypasses the save()
    method", "outside a closed ecosystem"), but not both ("does not bypass" affirms)."""
    return negated(clause) != bool(negative_verbs().search(clause))


def _clause_polarity_flip(claim: str, evidence: str) -> Signal | None:
    """Polarity and modality compared clause by clause: a claim clause against the evidence clause sharing
    most of its words, so a "not" elsewhere in a long sentence does not count."""
    for claim_clause, evidence_clause in aligned_clauses(claim, evidence):
        if not _same_names(claim_clause, evidence_clause):
            continue
        if _negative(claim_clause) != _negative(evidence_clause) and not _negates_alike(
            claim_clause, evidence_clause, claim, evidence
        ):
            return {
                "type": "negation",
                "claim": _negation(claim_clause),
                "evidence": _negation(evidence_clause),
            }
        modal = _modal_flip(claim_clause, evidence_clause)
        if modal:
            return modal
    return None


_SENTENCE_END = r"(?<=[.!?])\s+(?=[A-Z0-9])"
_SENTENCE_END_RE = re.compile(_SENTENCE_END)
_CLAUSE_RE = re.compile(
    _SENTENCE_END + r"|;|:(?=\s)"
    r"|,\s*(?:and|but|while|whereas|so|which|although|even though|though)\b"
    r"|\s+(?:but|whereas|while|even though)\s+",
    re.I,
)


@functools.lru_cache(maxsize=32768)
def _clauses(text: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in _CLAUSE_RE.split(text) if c and c.strip())


def clauses(text: str) -> tuple[str, ...]:
    """``text`` split at sentence ends, semicolons, colons and the connectives that start a clause
    (", and", ", but", ", which", " whereas " …)."""
    return _clauses(text)


_CONTENT_WORD_RE = re.compile(r"[a-z0-9][a-z0-9'-]+")
MIN_SHARED_WORDS = 2
MIN_SHARED_SHARE = 0.34  # of the claim clause's content words


@functools.lru_cache(maxsize=16384)
def _stem(word: str) -> str:
    """A crude stem, enough to align clauses: requires/required/requiring → requir."""
    for suffix in ("ing", "ed", "es", "s", "d"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


# Evidence texts come back claim after claim: their words and names are worked out once per process.
@functools.lru_cache(maxsize=32768)
def content_words(text: str) -> frozenset[str]:
    words = _CONTENT_WORD_RE.findall(text.lower())
    return frozenset(_stem(w) for w in words if len(w) > 2 and w not in _FUNCTION_WORDS)


_FUNCTION_WORDS = frozenset(
    {
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "that",
        "this",
        "with",
        "from",
        "have",
        "has",
        "had",
        "not",
        "never",
        "can",
        "cannot",
        "must",
        "should",
        "may",
        "will",
        "shall",
        "its",
        "their",
        "them",
        "they",
        "been",
        "being",
        "into",
        "than",
        "then",
        "also",
        "only",
        "such",
        "when",
        "which",
        "who",
        "what",
        "does",
        "doe",
        "don",
        "isn",
        "aren",
        "wasn",
        "won",
        "mustn",
        "shouldn",
        "no",
        "nor",
        "neither",
        "under",
        "per",
        "any",
        "all",
        "each",
    }
)


_WORD_TOKEN_RE = re.compile(r"[a-z][a-z'-]*[a-z]")


@functools.lru_cache(maxsize=32768)
def word_bases(text: str) -> dict[str, str]:
    """Each word base of ``text`` (``judge_words.word_base``) with the word it came from; a hyphenated
    word's parts too, unless the whole word is one of the opposites ("non-blocking" is not "blocking")."""
    opposites = opposite_bases()
    bases: dict[str, str] = {}
    for token in _WORD_TOKEN_RE.findall(text.lower()):
        whole = word_base(token)
        bases.setdefault(whole, token)
        if "-" in token and whole not in opposites:
            for part in token.split("-"):
                if part:
                    bases.setdefault(word_base(part), part)
    return bases


def opposed_words(claim: str, evidence: str) -> list[tuple[str, str]]:
    """The words of ``claim`` whose opposite ``evidence`` says in their place: "increases" against
    "reduced" (neither text says both words of the pair)."""
    mine, theirs = word_bases(claim), word_bases(evidence)
    opposites = opposite_bases()
    return [
        (word, theirs[other])
        for base, word in sorted(mine.items())
        if base not in theirs
        for other in sorted(opposites.get(base, frozenset()))
        if other in theirs and other not in mine
    ]


def _opposite_in_aligned_clause(claim: str, evidence: str) -> Signal | None:
    """The evidence clause that says the rest of a claim clause says the opposite of one of its words
    ("a CDN increases the latency" against "a CDN reduces the latency"). Only clauses that share most of
    their words are compared, so an opposite word about something else in the entry does not count; a
    negated clause is left to the negation checks ("does not increase" is not "reduces")."""
    for claim_clause, evidence_clause in aligned_clauses(claim, evidence):
        if negated(claim_clause) or negated(evidence_clause):
            continue
        for mine, theirs in opposed_words(claim_clause, evidence_clause):
            return {"type": "opposite", "claim": mine, "evidence": theirs}
    return None


def shared_weight(mine: AbstractSet[str], theirs: AbstractSet[str]) -> float:
    """Shared content words; words with digits (MD5, SHA-1, 8446) name something and count double."""
    return sum(2 if any(ch.isdigit() for ch in word) else 1 for word in mine & theirs)


def aligned_clauses(claim: str, evidence: str) -> list[tuple[str, str]]:
    """Each claim clause with the evidence clause that shares most of its content words (at least
    two), best aligned first."""
    evidence_clauses = _clauses(evidence)
    pairs: list[tuple[float, str, str]] = []
    for clause in _clauses(claim):
        words = content_words(clause)
        scored = [(shared_weight(words, content_words(other)), other) for other in evidence_clauses]
        shared, best = max(scored, default=(0.0, ""), key=lambda item: item[0])
        if shared >= MIN_SHARED_WORDS and shared >= MIN_SHARED_SHARE * len(words):
            pairs.append((shared, clause, best))
    return [(clause, other) for _, clause, other in sorted(pairs, key=lambda item: -item[0])]


def _negation(text: str) -> str:
    return _first(_NEGATION_RE, without_non_negations(text)) or "(affirmative)"


#: How many content words after a negation it is taken to negate ("must not negotiate these versions").
NEGATION_SCOPE_WORDS = 3
_SCOPE_END_RE = re.compile(r"[,;:.!?()]")


# A negated passive negates its subject, before it: "X should not be used", "X is prohibited by Y"; with
# an agent ("prohibited by Y") what follows the cue is not what it negates.
_PASSIVE_AFTER_CUE_RE = re.compile(r"\s+(?:be|been|by)\b", re.I)
_AGENT_AFTER_CUE_RE = re.compile(r"\s+by\b", re.I)
_WITHOUT_RE = re.compile(r"\bwithout\b", re.I)


def _scope_words(text: str) -> list[str]:
    return [
        _stem(part)
        for word in _CONTENT_WORD_RE.findall(text.lower())
        for part in word.split("-")
        if len(part) > 2 and part not in _FUNCTION_WORDS
    ]


def _negation_scopes(
    text: str, *, denials: bool = True, absences: bool = False, passives: bool = False, agents: bool = False
) -> list[tuple[str, list[str]]]:
    """Each negation in ``text`` and the content words it applies to: the next few, up to the clause's
    end ("no comparison-based sort can" → compar, bas, sort). With ``passives``, a negated passive's
    subject too ("the random module should not be used" → used, security, purpos, random, modul);
    with ``agents``, only the subject of one with an agent ("X is prohibited by Y" → X); with
    ``absences``, what follows "without" ("without neutralising elements")."""
    text = without_non_negations(text)
    scopes = []
    cues = [
        *_NEGATION_RE.finditer(text),
        *(_DENIES_FOLLOWING_RE.finditer(text) if denials else ()),
        *(_WITHOUT_RE.finditer(text) if absences else ()),
    ]
    for match in cues:
        rest = text[match.end() :]
        end = _SCOPE_END_RE.search(rest)
        words = _scope_words(rest[: end.start()] if end else rest)[:NEGATION_SCOPE_WORDS]
        with_agent = agents and _AGENT_AFTER_CUE_RE.match(rest)
        if with_agent or (passives and _PASSIVE_AFTER_CUE_RE.match(rest)):
            subject = _scope_words(_CLAUSE_RE.split(text[: match.start()])[-1] or "")
            words = subject if with_agent else [*words, *subject]
        scopes.append((match.group(0), words))
    return scopes


@functools.lru_cache(maxsize=32768)
def negated_words(text: str) -> frozenset[str]:
    """Every content word some negation in ``text`` applies to (asked of the same texts many times)."""
    return frozenset(word for _, words in _negation_scopes(text) for word in words)


@functools.cache
def _function_stems() -> frozenset[str]:
    """The judge's function words ("one", "there", "via"), stemmed as negation scopes are."""
    return frozenset(_stem(word) for word in judge_words()["function_words"]["words"])


@functools.lru_cache(maxsize=32768)
def denied_words(text: str) -> frozenset[str]:
    """Every content word ``text`` does not state plainly: those a negation applies to, a negated
    passive's subject ("oven spray should not be used") and what it does "without" ("made without
    activating the yeast")."""
    scopes = _negation_scopes(text, absences=True, passives=True)
    return frozenset(word for _, words in scopes for word in words)


def _bounds_a_quantity(text: str) -> bool:
    """Whether every negation in ``text`` is of a quantity ("nothing more to carry", "not all"): it bounds
    what is said, it does not deny it."""
    scopes = _negation_scopes(text, denials=False)
    return bool(scopes) and all(words[:1] and words[0] in _scope_stems() for _, words in scopes)


@functools.cache
def _scope_stems() -> frozenset[str]:
    """The words that rank, count or bound (judge_words.json "scope"), stemmed as negation scopes are."""
    return frozenset(_stem(word) for word in scope_words())


def _negated_head_stated(claim: str, evidence: str) -> Signal | None:
    """What the claim negates, the evidence states plainly and never negates: "UTF-8 is not required"
    against "RFC 8259 requires JSON text … to be encoded in UTF-8" (whose own "not" is about something
    else)."""
    evidence_negated = denied_words(evidence)
    for sentence in _SENTENCE_END_RE.split(claim):
        # Only a plain negation: "hashed with Argon2id rather than a fast hash" names the fast hash as
        # the subject the evidence forbids, not as something it states.
        for cue, words in _negation_scopes(sentence, denials=False, agents=True):
            head = words[0] if words else ""
            # A negated quantity ("nothing more to carry") bounds what is said; it does not deny it.
            if head in _scope_stems():
                continue
            # The evidence negates what the claim negates, in other words: "does not cover disclosures …
            # for treatment" against "… covered entities …; it does not apply to disclosures … for treatment".
            if not head or _overlap(set(words) - _function_stems(), evidence_negated):
                continue
            for other in _SENTENCE_END_RE.split(evidence):
                if head in content_words(other) and _same_names(sentence, other):
                    shared = shared_weight(content_words(sentence), content_words(other))
                    if shared >= MIN_SHARED_WORDS + 1:
                        return {"type": "negation", "claim": f"{cue} {head}…", "evidence": "(affirmative)"}
    return None


# Words that say a thing is required: negated, each says what "not required" says ("there is no need to
# tell them" against "this is not required").
# (Stemmed as crudely as the rest: "need" is "nee", "needs" and "needed" are "need".)
_REQUIREMENT_STEMS = frozenset(
    {"requir", "nee", "need", "necessary", "mandatory", "obligatory", "compulsory"}
)


def _overlap(words: AbstractSet[str], other: AbstractSet[str]) -> bool:
    """Whether two sets of stems share a word, whatever its form: the crude stem keeps the "e" of a bare
    verb ("does not require" → require, "is not required" → requir), and every word of requirement is
    one."""

    def forms(stems: AbstractSet[str]) -> set[str]:
        return {"requir" if stem in _REQUIREMENT_STEMS else stem.removesuffix("e") for stem in stems}

    return bool(forms(words) & forms(other))


def _negates_alike(claim_clause: str, evidence_clause: str, claim: str, evidence: str) -> bool:
    """Whether the two agree though only one clause is negated:

    * the other side negates the same thing elsewhere: "servers must not negotiate TLS 1.0" agrees
      with "…deprecates TLS 1.0: implementations MUST NOT negotiate these versions";
    * the negation is about something the other side does not speak of: "RFC 8996 deprecates TLS 1.0"
      does not disagree with "TLS 1.0 is deprecated by RFC 8996 and must not be used";
    * the claim prohibits what the evidence only describes: "Never unpickle data from an untrusted
      source" is the advice drawn from "… warns that unpickling data from an untrusted source can
      execute arbitrary code". Whether the evidence recommends, permits or requires the prohibited
      thing is the modal and stance checks' question, not a polarity's."""
    negated_clause = claim_clause if negated(claim_clause) else evidence_clause
    other_clause = evidence_clause if negated_clause is claim_clause else claim_clause
    return (
        _overlap(negated_words(claim_clause), denied_words(evidence))
        or _overlap(negated_words(evidence_clause), negated_words(claim))
        or _bounds_a_quantity(negated_clause)
        or not negated_words(negated_clause) & content_words(other_clause)
        or (negated_clause is claim_clause and _prohibits_what_is_described(claim_clause, evidence_clause))
    )


def _prohibits_what_is_described(claim_clause: str, evidence_clause: str) -> bool:
    from apps.grounding.stance import PROHIBIT, RECOMMEND, REQUIRE, modalities  # stance reads this module

    # What the evidence permits ("… can execute arbitrary code" reads as "can") is the permission check's.
    return PROHIBIT in modalities(claim_clause) and not modalities(evidence_clause) & {RECOMMEND, REQUIRE}


def _first(pattern: re.Pattern[str], text: str) -> str:
    match = pattern.search(text)
    return match.group(0) if match else ""


def _superseded(
    claim: str, evidence: str, claim_ids: dict[str, set[str]], evidence_ids: dict[str, set[str]]
) -> Signal | None:
    """The claim presents as current an identifier the evidence says was obsoleted, without naming
    what replaced it ("HTTP/2 is RFC 7540" against "RFC 9113 … obsoletes RFC 7540")."""
    if negated(claim) or _AWARE_OF_SUPERSESSION_RE.search(claim):
        return None
    for match in _SUPERSEDED_RE.finditer(evidence):
        for kind, old in identifiers(match.group(1) or match.group(2)).items():
            cited_old = claim_ids.get(kind, set()) & old
            replacements = evidence_ids.get(kind, set()) - old
            if cited_old and not claim_ids[kind] & replacements:
                return {"type": "superseded", "claim": f"{kind} {', '.join(sorted(cited_old))}",
                        "evidence": match.group(0)}  # fmt: skip
    return None


def _denied_category(claim: str, evidence: str) -> Signal | None:
    """The claim says something *is a* X where the evidence says it is *not a* X."""
    for match in _DENIED_CATEGORY_RE.finditer(evidence):
        category = match.group(1)
        asserted = re.search(
            rf"\b(?:is|are|was|were)\s+(?:an?\s+)?(?:[\w-]+\s+)?{re.escape(category)}\b", claim, re.I
        )
        if asserted and not re.search(rf"\bnot\s+(?:an?\s+)?{re.escape(category)}\b", claim, re.I):
            return {"type": "negation", "claim": asserted.group(0), "evidence": match.group(0)}
    return None


def _mentions(term: str, text: str, containing: str) -> bool:
    """``term`` in ``text`` on its own: "idempotent" is not mentioned by "not idempotent"."""
    if term in containing and term != containing:
        text = _word(containing).sub(" ", text)
    return _has(term, text)


def _opposite_terms(claim: str, evidence: str) -> Signal | None:
    claim_lower, evidence_lower = claim.lower(), evidence.lower()
    for left, right in _OPPOSITES:
        # Substring tests first: most pairs are absent from one side, and they are far cheaper than regexes.
        if (left not in claim_lower and right not in claim_lower) or (
            left not in evidence_lower and right not in evidence_lower
        ):
            continue
        claim_left, claim_right = _mentions(left, claim, right), _mentions(right, claim, left)
        evidence_left, evidence_right = _mentions(left, evidence, right), _mentions(right, evidence, left)
        if claim_left and not claim_right and evidence_right and not evidence_left:
            return {"type": "opposite", "claim": left, "evidence": right}
        if claim_right and not claim_left and evidence_left and not evidence_right:
            return {"type": "opposite", "claim": right, "evidence": left}
    return None


# An action allowed or forbidden: the cue ends right before the verb ("may still store", "allows servers to
# negotiate", "MUST NOT store", "cannot be read").
_PERMITS_RE = re.compile(
    r"\b(?:may|can)(?!\s+(?:not|never)\b)(?:\s+(?:still|also|safely))?(?:\s+be)?\s+"
    r"|\b(?:is|are)\s+(?:still\s+)?(?:allowed|permitted|free)\s+to\s+(?:be\s+)?"
    r"|\ballows?\s+(?:\w+\s+){0,2}?to\s+(?:be\s+)?",
    re.I,
)
_FORBIDS_RE = re.compile(
    r"\b(?:must|shall|should|may)\s+(?:not|never)\s+(?:be\s+)?|\b(?:mustn't|shouldn't|cannot|can't)\s+(?:be\s+)?"
    r"|\b(?:is|are)\s+(?:not\s+allowed|prohibited|forbidden)\s+to\s+(?:be\s+)?",
    re.I,
)
_VERB_RE = re.compile(r"[a-z][a-z-]+", re.I)
# Names: words with a digit, an underscore or a capital inside (MD5, SHA-1, 8996, select_related, PBKDF2).
# A token is read whole from its first dotted part that has such a mark ("models.CompositePrimaryKey" is
# "CompositePrimaryKey"); a hyphen joins it ("SHA-1", "UTF-8", "CWE-79" are names, not the numbers 1, 8
# and 79). Two linear passes, never a backtracking pattern: a long run of "a-a-a-…" costs its length.
_NAME_CANDIDATE_RE = re.compile(r"\w[\w.-]*", re.U)
_NAME_MARK_RE = re.compile(r"\d|_|[a-z][A-Z]", re.U)


def _actions(pattern: re.Pattern[str], text: str) -> list[tuple[str, str, str]]:
    """(cue and verb, verb stem, sentence) for each action the pattern's cue governs."""
    found = []
    for sentence in _SENTENCE_END_RE.split(text):
        for match in pattern.finditer(sentence):
            verb = _VERB_RE.match(sentence, match.end())
            if verb:
                found.append((match.group(0) + verb.group(0), _stem(verb.group(0).lower()), sentence))
    return found


@functools.lru_cache(maxsize=32768)
def name_tokens(text: str) -> frozenset[str]:
    found = set()
    for token in _NAME_CANDIDATE_RE.findall(text):
        parts = token.split(".")
        marked = next((index for index, part in enumerate(parts) if _NAME_MARK_RE.search(part)), None)
        if marked is not None:
            found.add(".".join(parts[marked:]).lower().rstrip("."))
    return frozenset(found)


#: How many more words a claim clause must share with another name's evidence clause than with its own.
SWAP_MARGIN = 2


# "from False to True", "from second place to seventh", "from third place in 2017 to first": what
# follows "from" and "to" (a word or two of what it is may come between).
_CHANGE_RE = re.compile(
    r"\bfrom\s+(?:the\s+)?([\w-]+(?:\.\w+)*)(?:\s+[\w-]+){0,3}?\s+to\s+(?:the\s+)?([\w-]+(?:\.\w+)*)", re.I
)


def _reversed_change(claim: str, evidence: str) -> Signal | None:
    """A change the claim tells the other way round: "changed the default from True to False" against
    "changed from False to True"."""
    said = {(before.lower(), after.lower()) for before, after in _CHANGE_RE.findall(evidence)}
    for before, after in _CHANGE_RE.findall(claim):
        if before.lower() != after.lower() and (after.lower(), before.lower()) in said - {
            (before.lower(), after.lower())
        }:
            return {
                "type": "opposite",
                "claim": f"from {before} to {after}",
                "evidence": f"from {after} to {before}",
            }
    return None


def _swapped_names(claim: str, evidence: str) -> Signal | None:
    """Two names the evidence describes in separate clauses, each described in the claim in the other's
    words: "prefetch_related() … with a SQL join, while select_related() … a separate query" against
    "select_related() … with a SQL join, and prefetch_related() … with one extra query"."""
    evidence_clauses = _clauses(evidence)
    homes: dict[str, set[int]] = {}
    for index, clause in enumerate(evidence_clauses):
        for name in name_tokens(clause):
            homes.setdefault(name, set()).add(index)
    claim_names = name_tokens(claim)
    for claim_clause in _clauses(claim):
        names = name_tokens(claim_clause)
        words = content_words(claim_clause) - {_stem(part) for name in names for part in name.split("-")}
        for name in names:
            if len(homes.get(name, ())) != 1:
                continue
            (home,) = homes[name]
            own = shared_weight(words, content_words(evidence_clauses[home]))
            for index, other in enumerate(evidence_clauses):
                # The other clause's own name is in the claim too, described elsewhere: a swap.
                rivals = (name_tokens(other) - name_tokens(evidence_clauses[home])) & (claim_names - names)
                closer = shared_weight(words, content_words(other)) >= own + SWAP_MARGIN
                if index != home and rivals and closer:
                    return {"type": "swapped", "claim": claim_clause, "evidence": other}
    return None


def _same_names(text: str, other: str) -> bool:
    """Whether two passages can be about the same things: they share a name, or one names nothing."""
    names, their_names = name_tokens(text), name_tokens(other)
    return not names or not their_names or bool(names & their_names)


def _permission_clash(claim: str, evidence: str) -> Signal | None:
    """The claim allows an action the evidence forbids on the same things, or the reverse: "a cache may
    still store a response marked no-store" against "no-store means a cache MUST NOT store the response"."""
    for allowed, forbidden in ((_PERMITS_RE, _FORBIDS_RE), (_FORBIDS_RE, _PERMITS_RE)):
        for claim_cue, verb, claim_sentence in _actions(allowed, claim):
            for evidence_cue, other, sentence in _actions(forbidden, evidence):
                if verb != other:
                    continue
                # About the same things: more shared than the verb, and no other names in their place
                # ("may use Argon2id" does not clash with "MD5 must not be used").
                shared = shared_weight(content_words(claim_sentence), content_words(sentence)) - 1
                if shared >= 1 and _same_names(claim_sentence, sentence):
                    return {"type": "modal", "claim": claim_cue, "evidence": evidence_cue}
    return None


# The requirement levels of RFC 2119 ("MUST", "SHOULD", "MAY"), when not negated: an evidence that writes
# one in capitals means exactly that level, so a claim at another level says something else.
_REQUIREMENT_LEVELS = {
    "must": "required", "shall": "required", "required": "required",
    "should": "recommended", "recommended": "recommended",
    "may": "optional", "optional": "optional",
}  # fmt: skip
_REQUIREMENT_LEVEL_RE = re.compile(rf"\b({'|'.join(_REQUIREMENT_LEVELS)})\b(?!\s+not\b)", re.I)


def _requirement_levels(text: str, *, capitals: bool) -> dict[str, str]:
    """The requirement levels ``text`` states, each with the word that says it (only words in capitals
    with ``capitals``)."""
    return {
        _REQUIREMENT_LEVELS[match.group(1).lower()]: match.group(1)
        for match in _REQUIREMENT_LEVEL_RE.finditer(text)
        if not capitals or match.group(1).isupper()
    }


def _modal_flip(claim: str, evidence: str) -> Signal | None:
    claim_weak, evidence_strong = _first(_WEAK_MODAL_RE, claim), _first(_STRONG_MODAL_RE, evidence)
    if claim_weak and evidence_strong and not _STRONG_MODAL_RE.search(claim):
        return {"type": "modal", "claim": claim_weak, "evidence": evidence_strong}
    return None


def _requirement_level_clash(claim: str, evidence: str) -> Signal | None:
    """A claim clause at another requirement level than an evidence clause that writes its level in
    capitals and says the same thing (its names, three words of it): "every 429 response must include a
    Retry-After header" against "… the response MAY include a Retry-After header"."""
    for claim_clause in clauses(claim):
        claimed = _requirement_levels(claim_clause, capitals=False)
        if not claimed:
            continue
        for clause in clauses(evidence):
            stated = _requirement_levels(clause, capitals=True)
            if (
                stated
                and not stated.keys() & claimed.keys()
                and _same_names(claim_clause, clause)
                and shared_weight(content_words(claim_clause), content_words(clause)) >= MIN_SHARED_WORDS + 1
            ):
                (claim_word, *_), (evidence_word, *_) = claimed.values(), stated.values()
                return {"type": "modal", "claim": claim_word, "evidence": evidence_word}
    return None


# Details a claim can add that its evidence must state for it to be supported: numbers, and names written
# with capitals inside, digits or underscores (BRIN, UUID, SHA-256, select_related).
_DETAIL_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*|\b\w*(?:[A-Z]\w*[A-Z]|\d|_)[\w-]*", re.U)


_NUMBER_IN_WORDS_RE = re.compile(rf"(?<![\w-]){_NUMBER_WORD_ALTERNATIVES}(?![\w-])", re.I)


def numbers_in_words(text: str) -> list[int]:
    """The numbers ``text`` writes in words, each read whole ("five hundred" 500, "seventy-two" 72)."""
    values = (number_word_value(match.group(0)) for match in _NUMBER_IN_WORDS_RE.finditer(text))
    return [value for value in values if value is not None]


def unstated_details(claim: str, evidence: str) -> list[str]:
    """The claim's numbers and names that the evidence does not state ("UUID version 8" against an entry
    on versions 4 and 7): a claim that adds such a detail is more than its evidence supports.
    Quantities count as stated when equal in value ("3 days" and "72 hours"), numbers when written in
    words ("six years")."""
    lowered = evidence.lower()
    stated_numbers = {_number(match.group(0)) for match in _NUMBER_IN_WORDS_RE.finditer(lowered)}
    stated_numbers.update(_number(n) for n in re.findall(r"\d+(?:[.,]\d+)*", evidence))
    equal_quantities = {
        q.text for q in quantities(claim) if any(abs(q.value - e.value) < 1e-6 for e in quantities(evidence))
    }
    missing = []
    for match in _DETAIL_RE.finditer(claim):
        detail = match.group(0)
        if detail[0].isdigit():
            number = _number(detail)
            if number in stated_numbers or any(detail in text for text in equal_quantities):
                continue
        elif detail.lower() in lowered:  # a part of a longer name counts: SHA256 in PBKDF2-HMAC-SHA256
            continue
        missing.append(detail)
    return missing
