"""Entity search, one implementation for the fact workflow and the native ``wikidata.vector_search_*``
tools: the Wikidata vector database, else Wikidata's own keyword search (``wbsearchentities``).

The vector database is an experimental service; when it fails (retries exhausted, deadline
reached) — or, if the caller asks, when it finds nothing — keyword search stands in. Keyword search
is a label/alias prefix search, not a question answerer, so a caller may give it several phrases
(``keyword_phrases``), tried in order until one finds something.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from apps.core.errors import RateLimited, UpstreamError
from apps.core.logging import get_logger
from apps.wikidata import action_api, clients
from apps.wikidata.vectordb import Kind, VectorHit

logger = get_logger(__name__)

Via = Literal["vector", "keyword"]

_PLURAL: dict[Kind, str] = {"item": "items", "property": "properties"}
_STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had",
        "has", "have", "how", "in", "is", "it", "its", "of", "on", "or", "the", "to", "was", "were",
        "what", "when", "where", "which", "who", "whom", "whose", "why", "with",
    }
)  # fmt: skip


@dataclass(frozen=True)
class EntitySearch:
    """What an entity search found, and how.

    ``via="vector"``: ``vector_hits`` in the service's order. ``via="keyword"``: ``keyword_hits``
    (``wbsearchentities`` hits, ``{id, label, description, match, aliases}``, in its order) for
    ``phrase``; ``vector_error`` is why the vector database was not used (``None``: it found
    nothing); ``error`` is set when keyword search failed for every phrase (nothing was found).
    """

    via: Via
    vector_hits: list[VectorHit] = field(default_factory=list)
    keyword_hits: list[dict[str, Any]] = field(default_factory=list)
    phrase: str = ""
    vector_error: UpstreamError | RateLimited | None = None
    error: UpstreamError | RateLimited | None = None

    @property
    def fallback_reason(self) -> str | None:
        """Why keyword search stood in, for a reader; ``None`` when the vector database answered."""
        if self.via == "vector":
            return None
        if isinstance(self.vector_error, RateLimited):  # never sent
            return f"the vector database was not asked: {self.vector_error.message}"
        if self.vector_error is not None:
            return f"the vector database failed: {self.vector_error.message}"
        return "the vector database found nothing"


def entities_search(
    query: str,
    *,
    kind: Kind,
    language: str,
    k: int,
    deadline: float,
    phrases: Sequence[str] = (),
    fallback_when_empty: bool = False,
    instanceof: Sequence[str] = (),
    rerank: bool = False,
    exclude_external_ids: bool = False,
    vector_wait: bool = True,
    **log_context: str,
) -> EntitySearch:
    """Items or properties for ``query``: the vector database (``language`` may be ``all`` there;
    ``instanceof``, ``rerank`` and, for properties, ``exclude_external_ids`` passed on), else keyword
    search for each of ``phrases`` (default: the query) in turn, in ``language`` (English for
    ``all``). Falls back when the vector search fails, and when it finds nothing if
    ``fallback_when_empty``, and without waiting for a vector slot when ``vector_wait`` is false
    (none free now: keyword search at once). Never raises an upstream error: a failed keyword search
    is the result's ``error``. ``log_context`` names the caller in the log."""
    client = clients.vector_db_client(deadline=deadline, wait_for_slot=vector_wait)

    def vector_search() -> list[VectorHit]:
        filter_ids = list(instanceof) or None
        if kind == "property":
            return client.search_properties(
                query,
                lang=language,
                k=k,
                instanceof=filter_ids,
                rerank=rerank,
                exclude_external_ids=exclude_external_ids,
            )
        return client.search_items(query, lang=language, k=k, instanceof=filter_ids, rerank=rerank)

    vector_error: UpstreamError | RateLimited | None = None
    try:
        hits = clients.with_retries(vector_search, what=f"vector search ({_PLURAL[kind]})", deadline=deadline)
    except (UpstreamError, RateLimited) as error:
        logger.warning("wikidata.vector_search_failed", kind=kind, error=error.message, **log_context)
        vector_error = error
    else:
        if hits or not fallback_when_empty:
            return EntitySearch(via="vector", vector_hits=hits)
    return _keyword_search(
        phrases or [query], kind=kind, language=language, k=k, deadline=deadline, vector_error=vector_error
    )


def _keyword_search(
    phrases: Sequence[str],
    *,
    kind: Kind,
    language: str,
    k: int,
    deadline: float,
    vector_error: UpstreamError | RateLimited | None = None,
) -> EntitySearch:
    """``wbsearchentities`` for each phrase until one finds something; the last error if none did
    and one failed."""
    api = clients.action_api_client(deadline=deadline)
    keyword_language = "en" if language == "all" else language  # "all" is the vector database's only
    error: UpstreamError | RateLimited | None = None
    texts = (" ".join(phrase.split())[: action_api.MAX_SEARCH_LENGTH].rstrip() for phrase in phrases)
    for text in [t for t in dict.fromkeys(texts) if t]:
        try:
            found = clients.with_retries(
                functools.partial(
                    api.search_entities,
                    text,
                    language=keyword_language,
                    type=kind,
                    limit=min(k, action_api.MAX_SEARCH_LIMIT),
                ),
                what="keyword search",
                deadline=deadline,
            )
        except (UpstreamError, RateLimited) as failure:
            error = failure
            continue
        if found:
            return EntitySearch(via="keyword", keyword_hits=found, phrase=text, vector_error=vector_error)
    return EntitySearch(via="keyword", vector_error=vector_error, error=error)


def name_phrases(question: str) -> list[str]:
    """The runs of capitalised words of a question ("Douglas Adams"), a sentence's first word only when
    it is not a stopword ("When", "The")."""
    words = re.findall(r"[\w'’-]+", question)
    phrases: list[str] = []
    run_words: list[str] = []
    for index, word in enumerate([*words, ""]):
        capitalised = bool(word) and word[0].isupper() and (index > 0 or word.lower() not in _STOPWORDS)
        if capitalised:
            run_words.append(word)
        elif run_words:
            phrases.append(" ".join(run_words))
            run_words = []
    return list(dict.fromkeys(phrases))


def keyword_phrases(question: str) -> list[str]:
    """What to give ``wbsearchentities`` for a question: runs of capitalised words first
    ("Douglas Adams"), then the words that are not stopwords, then the question itself, without
    duplicates."""
    words = re.findall(r"[\w'’-]+", question)
    phrases = name_phrases(question)
    content = [w for w in words if w.lower() not in _STOPWORDS and len(w) > 2]
    if content:
        phrases.append(" ".join(content))
    phrases.append(" ".join(words) or question)
    return [p for p in dict.fromkeys(p.strip() for p in phrases) if p]
