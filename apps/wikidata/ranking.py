"""Ranking statements as answers to a question: each as "subject — property — value" text, embedded
and compared with the question (cosine); within one subject and property a preferred statement
before normal ones, a deprecated one (only present when asked for) after both."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from apps.embeddings.services import embed_text, embed_texts_cached
from apps.wikidata.sparql import SparqlResult
from apps.wikidata.statements import RANKS, EntityIdValue, QuantityValue, Snak, Statement, TimeValue, snak_ids


@dataclass
class Candidate:
    """A statement as a possible answer, with the text it is ranked by."""

    statement: Statement
    subject_label: str
    property_label: str
    value_text: str
    value_label: str
    text: str
    score: float = 0.0
    vector: np.ndarray | None = None
    sparql: SparqlResult | None = None
    details: dict[str, str] = field(default_factory=dict)


def candidate_label_ids(statements: Sequence[Statement]) -> set[str]:
    """The ids whose labels the candidates' texts show: subjects, properties, main values and units."""
    ids: set[str] = set()
    for statement in statements:
        ids.add(statement.entity_id)
        ids.update(snak_ids(statement.mainsnak))
    return ids


def _time_text(value: TimeValue) -> str:
    """``+1952-03-11T00:00:00Z`` at day precision → ``1952-03-11``; month → ``1952-03``; year → ``1952``;
    coarser (decade, century …) → the year as given."""
    match = re.match(r"^([+-])(\d+)-(\d\d)-(\d\d)", value.time)
    if not match:
        return value.time
    sign, year, month, day = match.groups()
    year_text = ("-" if sign == "-" else "") + year.lstrip("0").rjust(1, "0")
    if value.precision >= 11:
        return f"{year_text}-{month}-{day}"
    if value.precision == 10:
        return f"{year_text}-{month}"
    return year_text


def snak_text(snak: Snak, labels: dict[str, str]) -> str:
    """A snak's value as a reader wants it: entity labels instead of ids, dates at their precision,
    quantities with their unit's label."""
    value = snak.value
    if snak.snaktype != "value" or value is None:
        return snak.as_text()
    if isinstance(value, EntityIdValue):
        return labels.get(value.id, value.id)
    if isinstance(value, TimeValue):
        return _time_text(value)
    if isinstance(value, QuantityValue):
        unit = value.unit_id
        return (
            value.amount
            if unit is None and value.unit == "1"
            else f"{value.amount} {labels.get(unit or '', value.unit)}"
        )
    return value.as_text()


def candidates_rank(
    *, question: str, statements: Sequence[Statement], labels: dict[str, str], top_k: int
) -> list[Candidate]:
    """The ``top_k`` best statements for the question, best first."""
    if not statements:
        return []
    candidates = []
    for statement in statements:
        subject = labels.get(statement.entity_id, statement.entity_id)
        prop = labels.get(statement.property_id, statement.property_id)
        value_text = snak_text(statement.mainsnak, labels)
        value = statement.value
        value_label = labels.get(value.id, "") if isinstance(value, EntityIdValue) else ""
        candidates.append(
            Candidate(
                statement=statement,
                subject_label=subject,
                property_label=prop,
                value_text=value_text,
                value_label=value_label,
                text=f"{subject} — {prop} — {value_text}",
            )
        )
    question_vector = embed_text(text=question)
    vectors = embed_texts_cached(texts=[c.text for c in candidates])
    scores = vectors @ question_vector
    for candidate, vector, score in zip(candidates, vectors, scores, strict=True):
        candidate.vector, candidate.score = vector, float(score)
    prefer_preferred(candidates)
    candidates.sort(key=lambda c: (-c.score, RANKS.index(c.statement.rank), c.statement.guid))
    return candidates[:top_k]


def prefer_preferred(candidates: list[Candidate]) -> None:
    """Within one subject and property, a normal statement never outranks a preferred one (Wikibase's
    "best rank"), and a deprecated one (only present when asked for) never outranks either."""
    best: dict[tuple[str, str, str], float] = {}
    for candidate in candidates:
        key = (candidate.statement.entity_id, candidate.statement.property_id, candidate.statement.rank)
        best[key] = max(best.get(key, -2.0), candidate.score)
    for candidate in candidates:
        statement = candidate.statement
        better_ranks = RANKS[: RANKS.index(statement.rank)]
        ceilings = [
            best[(statement.entity_id, statement.property_id, r)]
            for r in better_ranks
            if (statement.entity_id, statement.property_id, r) in best
        ]
        if ceilings:
            candidate.score = min(candidate.score, min(ceilings) - 1e-4)
