"""``discover``'s lexical match, answered from an index built once per ontology version.

The rule (``selectors.ontology_discover``) compares the normalised query (lower case, single spaces)
with each class's preferred term, alternative terms and definition: the query *is* a term, or it
occurs in one as a phrase — with no word character (``\\w``) just before or after it — or, failing
that, some of the query's words occur in them that way. Scanning every class with a regular
expression per call cost most of ``discover``'s time at 10k classes (bench/ontology.py), so
``LexicalIndex`` keeps, per field, each word-character run (``\\w+``) → the classes whose text has
it as a whole run, and answers with dictionary lookups:

- a phrase that occurs with no word character around it covers whole runs of the text: each of
  its own runs is a whole run there. So the classes holding all of a phrase's runs are a superset
  of its matches — exactly them when the phrase is a single run, and otherwise few enough to
  confirm with the regular expression;
- only a phrase with no word character at all (``"--"``) cannot be looked up; it is checked against
  every class, which such queries (no words, so no word score) are rare enough to afford.

The index is built from the graph's classes (``OntologyGraph.lexical``), so it lives and is rebuilt
with the graph of each version.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter

from apps.ontology.models import OntologyClass

# Lexical scores (``selectors.ontology_discover`` documents the rule).
EXACT, IN_PREFERRED, IN_ALT, IN_DEFINITION, WORDS = 1.0, 0.9, 0.8, 0.6, 0.5
STOP_WORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "by", "for", "from", "in", "is", "it", "of", "on", "or", "the",
     "to", "with"]
)  # fmt: skip
_RUN_RE = re.compile(r"\w+")
_WORD_RE = re.compile(r"\w[\w'-]*")
_NONE: frozenset[str] = frozenset()


def normal(text: str) -> str:
    """Lower case, runs of white space as one space, no space at either end."""
    return " ".join(text.lower().split())


def contains_phrase(haystack: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``haystack`` with no word character just before or after it."""
    return re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", haystack) is not None


def words(text: str) -> list[str]:
    """The query's words (letters, digits, ``'`` and ``-``), lower case, stop words left out."""
    return [word for word in _WORD_RE.findall(text.lower()) if word not in STOP_WORDS]


@dataclass(frozen=True)
class ClassTexts:
    """One class's matched texts, normalised."""

    preferred: tuple[str]
    alternatives: tuple[str, ...]
    definition: tuple[str]
    joined: tuple[str]  # every field, space-separated: what the query's words are looked for in

    @classmethod
    def of(cls, ontology_class: OntologyClass) -> ClassTexts:
        preferred = normal(ontology_class.preferred_term)
        alternatives = tuple(normal(term) for term in ontology_class.alt_terms)
        definition = normal(ontology_class.definition)
        return cls(
            preferred=(preferred,),
            alternatives=alternatives,
            definition=(definition,),
            joined=(" ".join([preferred, *alternatives, definition]),),
        )


Field = Callable[[ClassTexts], tuple[str, ...]]
_PREFERRED: Field = attrgetter("preferred")
_ALTERNATIVES: Field = attrgetter("alternatives")
_DEFINITION: Field = attrgetter("definition")
_JOINED: Field = attrgetter("joined")


def _runs_index(texts: dict[str, ClassTexts], field: Field) -> dict[str, frozenset[str]]:
    index: dict[str, set[str]] = {}
    for iri, class_texts in texts.items():
        for text in field(class_texts):
            for run in _RUN_RE.findall(text):
                index.setdefault(run, set()).add(iri)
    return {run: frozenset(iris) for run, iris in index.items()}


class LexicalIndex:
    """Word-character runs → classes, per field, and the exact terms, of one ontology version."""

    def __init__(self, classes: Iterable[OntologyClass]) -> None:
        classes = list(classes)
        self.texts: dict[str, ClassTexts] = {cls.iri: ClassTexts.of(cls) for cls in classes}
        exact: dict[str, set[str]] = {}
        for iri, texts in self.texts.items():
            for term in (*texts.preferred, *texts.alternatives):
                exact.setdefault(term, set()).add(iri)
        self.exact = {term: frozenset(iris) for term, iris in exact.items()}
        self.preferred = _runs_index(self.texts, _PREFERRED)
        self.alternatives = _runs_index(self.texts, _ALTERNATIVES)
        self.definition = _runs_index(self.texts, _DEFINITION)
        self.joined = _runs_index(self.texts, _JOINED)
        #: The domains the classes belong to, sorted.
        self.domains: list[str] = sorted({cls.domain for cls in classes})

    def _phrase(self, runs_index: dict[str, frozenset[str]], field: Field, phrase: str) -> frozenset[str]:
        """The classes whose ``field`` holds ``phrase`` (``contains_phrase``)."""
        runs = list(dict.fromkeys(_RUN_RE.findall(phrase)))
        if not runs:  # no word character: nothing to look up (see the module's docstring)
            return frozenset(
                iri
                for iri, texts in self.texts.items()
                if any(contains_phrase(t, phrase) for t in field(texts))
            )
        postings = sorted((runs_index.get(run, _NONE) for run in runs), key=len)
        if len(runs) == 1 and runs[0] == phrase:
            return postings[0]  # a single run: holding it as a whole run is the match
        found = postings[0].intersection(*postings[1:])
        return frozenset(
            iri for iri in found if any(contains_phrase(text, phrase) for text in field(self.texts[iri]))
        )

    def scores(self, query: str) -> dict[str, float]:
        """Each class with a lexical score above 0 for the normalised ``query``, with that score:
        1.0 the query is its preferred or an alternative term; 0.9 a phrase of the preferred term,
        0.8 of an alternative term, 0.6 of the definition; otherwise 0.5 × the share of the query's
        words (stop words aside, each as often as the query has it) found in any of them."""
        query_words = words(query)
        found: dict[str, float] = {}
        if query_words:
            hits: dict[str, int] = {}
            matched: dict[str, frozenset[str]] = {}
            for word in query_words:
                if word not in matched:
                    matched[word] = self._phrase(self.joined, _JOINED, word)
                for iri in matched[word]:
                    hits[iri] = hits.get(iri, 0) + 1
            found = {iri: WORDS * count / len(query_words) for iri, count in hits.items()}
        for score, iris in (
            (IN_DEFINITION, self._phrase(self.definition, _DEFINITION, query)),
            (IN_ALT, self._phrase(self.alternatives, _ALTERNATIVES, query)),
            (IN_PREFERRED, self._phrase(self.preferred, _PREFERRED, query)),
            (EXACT, self.exact.get(query, _NONE)),
        ):  # weakest first: a class takes the best that applies
            for iri in iris:
                found[iri] = score
        return found
