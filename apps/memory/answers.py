"""``ask``'s answer, composed from the memories it found.

Without a model: **extractive** — the sentences of the top memories closest to the question, each
cited by its memory id. With ``LLM_URL`` configured: **generated** by the one LLM client
(``apps.core.llm``) from the top memories, told to cite the ids it used; ids it cites that were not
given are dropped, and a failing or unusable model falls back to the extractive answer and says why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from apps.core import llm
from apps.core.logging import get_logger
from apps.core.text import sentences
from apps.embeddings.services import embed_text, embed_texts_cached
from apps.memory.models import MemorySettings
from apps.memory.selectors import ScoredMemory, memory_recall, weights_check
from apps.memory.services import Scope, memories_reinforce

logger = get_logger(__name__)

ANSWER_MEMORIES = 3  # the top memories an answer is made from
NOTHING_RELEVANT = "nothing relevant remembered"
ANSWER_SENTENCES = 3
MIN_SENTENCE_SIMILARITY = 0.25  # below: the sentence does not speak to the question
SENTENCE_MARGIN = 0.15  # a sentence this much less similar than the best one is left out
_CITATION_RE = re.compile(r"\[([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\]")

LLM_INSTRUCTIONS = (
    "You answer a question using only the memories given. Each memory starts with its id in square "
    "brackets. Cite every memory you use by writing its id in square brackets, e.g. [id]. If the "
    "memories do not answer the question, say that you do not know. Answer in at most three sentences."
)


def answer_compose(
    *, question: str, hits: Sequence[ScoredMemory], question_vector: np.ndarray | None = None
) -> dict[str, Any]:
    """``{method, text, citations: [{memoryId, sentence?}], fallbackReason?}``; ``method`` is
    ``extractive``, ``llm`` or ``none`` (nothing relevant was remembered)."""
    top = list(hits[:ANSWER_MEMORIES])
    if not top:
        return {"method": "none", "text": "", "citations": [], "reason": NOTHING_RELEVANT}
    if llm.llm_configured():
        try:
            return _generated(question, top)
        except (llm.LlmUnavailable, llm.LlmBadResponse) as error:
            logger.warning("memory.answer_llm_failed", error=str(error))
            extractive = _extractive(question, top, question_vector)
            return {**extractive, "fallbackReason": f"The LLM failed: {error}"}
    return _extractive(question, top, question_vector)


def _extractive(
    question: str, top: Sequence[ScoredMemory], question_vector: np.ndarray | None
) -> dict[str, Any]:
    pieces = [(hit, sentence) for hit in top for sentence in sentences(hit.memory.content)[:200]]
    if not pieces:
        return {"method": "none", "text": "", "citations": []}
    if question_vector is None:
        question_vector = embed_text(text=question)
    vectors = embed_texts_cached(texts=[sentence for _, sentence in pieces])
    similarities = vectors @ question_vector
    order = [int(i) for i in np.argsort(-similarities, kind="stable")]
    # Sentences that speak to the question about as well as the best one does; at least the best.
    floor = max(MIN_SENTENCE_SIMILARITY, float(similarities[order[0]]) - SENTENCE_MARGIN)
    chosen = [i for i in order if similarities[i] >= floor][:ANSWER_SENTENCES] or order[:1]
    # Read in the order the memories were ranked, then the order of the sentences within each.
    chosen.sort()
    return {
        "method": "extractive",
        "text": " ".join(pieces[i][1] for i in chosen),
        "citations": [
            {
                "memoryId": str(pieces[i][0].memory.id),
                "sentence": pieces[i][1],
                "similarity": round(float(similarities[i]), 4),
            }
            for i in chosen
        ],
    }


def _generated(question: str, top: Sequence[ScoredMemory]) -> dict[str, Any]:
    given = {str(hit.memory.id) for hit in top}
    memories = "\n\n".join(f"[{hit.memory.id}] {hit.memory.content[:4000]}" for hit in top)
    reply = llm.chat_complete(
        messages=[
            {"role": "system", "content": LLM_INSTRUCTIONS},
            {"role": "user", "content": f"Memories:\n{memories}\n\nQuestion: {question}"},
        ]
    )
    text = reply.text.strip()
    if not text:
        raise llm.LlmBadResponse("The LLM answered with no text.")
    cited = [memory_id for memory_id in dict.fromkeys(_CITATION_RE.findall(text)) if memory_id in given]
    return {
        "method": "llm",
        "text": text,
        "citations": [{"memoryId": memory_id} for memory_id in cited],
        "model": reply.model,
        "latencyMs": reply.latency_ms,
    }


def ask_result(
    *,
    scope: Scope,
    question: str,
    domain: str | None = None,
    memory_type: str | None = None,
    limit: int = 10,
    threshold: float | None = None,
    semantic_floor: float | None = None,
    include_superseded: bool = False,
    weights: dict[str, float] | None = None,
) -> dict[str, Any]:
    """What ``ask`` answers an agent (REST and MCP): the memories about the question, ranked with their
    component scores, and the answer made from them; the memories returned are reinforced (and their
    access recorded). When none is about the question (``selectors`` explains the semantic floor), the
    answer is empty with ``reason`` "nothing relevant remembered", and the nearest memories are listed
    apart (``nearest``), neither answered from nor reinforced.

    The settings are read and the question embedded once, for the ranking and the answer alike."""
    config = MemorySettings.current()
    question_vector = embed_text(text=question)
    recall = memory_recall(
        scope=scope,
        question=question,
        domain=domain,
        memory_type=memory_type,
        limit=limit,
        threshold=threshold,
        semantic_floor=semantic_floor,
        include_superseded=include_superseded,
        weights=weights,
        config=config,
        vector=question_vector,
    )
    hits = recall.relevant
    answer = answer_compose(question=question, hits=hits, question_vector=question_vector)
    memories_reinforce(hits=[(hit.memory.id, hit.relevance) for hit in hits], config=config)
    return {
        "question": question,
        "domain": domain,
        "weights": weights_check(weights, config),
        "threshold": config.relevance_threshold if threshold is None else threshold,
        "semanticFloor": config.semantic_floor if semantic_floor is None else semantic_floor,
        "memories": [hit.as_dict() for hit in hits],
        "answer": answer,
        "reason": None if hits else NOTHING_RELEVANT,
        "nearest": [hit.as_dict() for hit in recall.nearest],
    }
