"""Grounding verification (seed 001): claims → domain → evidence → verdict, logged for review.

The local judge uses no language model, in the manner of RefChecker/FActScore/SAFE's
split-retrieve-label pipeline with a similarity-based labeller (docs/grounding.md):

1. **claims** — a message is split into sentences; a sentence is a claim when it matches a
   configured claim pattern or names a grounding agent's keyword, and is at least
   ``min_claim_length`` characters long;
2. **routing** — the grounding agent whose verification keywords the claim mentions most;
   with none, the domain of the most similar entry of all;
3. **evidence** — hybrid search of that domain; each of the best entries is split into
   sentences, and the sentence most similar to the claim is what the claim is compared with;
4. **verdict** — *contradicted* when a similar enough sentence disagrees explicitly (a number or
   duration, an identifier, a complexity class, a negation, a must/may flip, a stance, an opposite
   term: ``contradictions.py``, ``stance.py``), with that entry as the correction; *supported* when
   one evidence sentence states every part of the claim (``stance.claim_parts``: numbers and names,
   what it asserts, polarity, modality) and nothing disagrees; *unverified* otherwise, with a
   *leaning* when the evidence points one way without deciding;
5. **confidence** — the share of calibration claims judged on the same basis that had that verdict
   (``calibration.py``); a decisive verdict its basis did not earn becomes unverified. Verdicts
   below ``confidence_threshold`` wait in the operators' review queue;
6. **model judge** — with ``GROUNDING_JUDGE`` = ``nli`` or ``llm``, a model decides on the same
   evidence sentences, and the local verdict is the fallback when it fails or is too slow; with
   ``GROUNDING_NLI_MODE=veto`` the nli model may only withhold a decisive local verdict.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.core.errors import ValidationFailed
from apps.core.logging import get_logger
from apps.core.text import sentences
from apps.embeddings.services import embed_text, embed_texts_cached
from apps.grounding import review_memory
from apps.grounding.calibration import CalibrationFitted, basis_of, calibrated, calibration_fit
from apps.grounding.contradictions import clauses, contradiction_signals, unstated_details
from apps.grounding.judge_words import sentence_openers
from apps.grounding.model_judges import MODEL_JUDGES, JudgeFailed, ModelVerdict, Premise, model_judge
from apps.grounding.models import (
    GroundingAgent,
    GroundingMessage,
    GroundingSettings,
    InjectionMode,
    ReviewStatus,
    Verdict,
    Verification,
)
from apps.grounding.stance import asserted_share, claim_parts, first_word
from apps.grounding.verification_log import verification_log_append
from apps.knowledge import selectors as knowledge_selectors
from apps.knowledge.models import KnowledgeDomain, KnowledgeEntry, KnowledgeSource
from apps.knowledge.selectors import SearchHit

logger = get_logger(__name__)

MAX_CLAIM_CHARS = 2000
MAX_MESSAGE_CHARS = 20_000
EVIDENCE_ENTRIES = 4
# Cosine similarity of the claim and the best evidence sentence (all-MiniLM-L6-v2, unit vectors).
SUPPORT_SIMILARITY = 0.66  # at or above: the evidence says the same thing
CONTRADICTION_SIMILARITY = 0.66  # at or above: same subject, so an explicit disagreement counts
RELATED_SIMILARITY = 0.45  # below: the knowledge base does not talk about this
CONTRADICTION_MARGIN = 0.05  # disagreeing evidence must be this close to the best evidence
WIKIDATA_CONTRADICTION_SIMILARITY = 0.7  # a Wikidata statement this close to the claim says what is true
EXCERPT_CHARS = 300
# The local judge's verdicts get their confidence from the calibration table (``_calibrated``).
UNCALIBRATED = 0.0


# --- Claims and routing ------------------------------------------------------------------------


def _compiled(patterns: Sequence[str]) -> list[re.Pattern[str]]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern, re.I))
        except re.error:
            compiled.append(re.compile(re.escape(pattern), re.I))
    return compiled


def claims_extract(*, message: str, config: GroundingSettings, agents: Sequence[GroundingAgent]) -> list[str]:
    """The sentences of ``message`` to verify (see the module docstring)."""
    patterns = _compiled([*config.claim_patterns, *(re.escape(t) for t in config.trigger_patterns)])
    keywords = [keyword for agent in agents for keyword in agent.verification_keywords]
    found = []
    for sentence in sentences(message):
        if len(sentence) < config.min_claim_length:
            continue
        if any(p.search(sentence) for p in patterns) or any(_keyword_in(k, sentence) for k in keywords):
            found.append(sentence)
    return found


def _keyword_in(keyword: str, text: str) -> bool:
    if not keyword:
        return False
    if re.match(r"^\w", keyword) and re.search(r"\w$", keyword):
        return re.search(rf"\b{re.escape(keyword)}\w*", text, re.I) is not None
    return keyword.lower() in text.lower()


def domain_route(*, claim: str, agents: Sequence[GroundingAgent]) -> str | None:
    """The domain whose agent's keywords the claim mentions most (ties: the agent's name), or None."""
    scored = [
        (sum(_keyword_in(k, claim) for k in agent.verification_keywords), agent.name, agent.domain.name)
        for agent in agents
    ]
    best = max(scored, default=(0, "", None), key=lambda item: (item[0], [-ord(c) for c in item[1]]))
    return best[2] if best[0] > 0 else None


# --- Verifying one claim -------------------------------------------------------------------------


@dataclass
class Evidence:
    hit: SearchHit
    sentence: str
    similarity: float
    #: The contradiction signals of the whole entry that count at this similarity (``_counting``).
    signals: list[dict[str, str]] = field(default_factory=list)

    def as_source(self) -> dict[str, Any]:
        entry = self.hit.entry
        return {
            "entry_id": entry.entry_id,
            "content_excerpt": _excerpt(
                self.sentence if len(entry.content) > EXCERPT_CHARS else entry.content
            ),
            "relevance": round(max(self.similarity, 0.0), 4),
            "source": entry.source,
            "url": entry.url,
        }


@dataclass
class WikidataCheck:
    """What asking Wikidata about a claim came to, whichever judge decided: the verification's
    ``sources_note``, and ``degraded`` with the reason when Wikidata could not be reached."""

    note: str
    degraded: bool = False
    reason: str = ""
    run_id: Any = None  # the fact run made on the verification's behalf

    def as_fields(self) -> dict[str, Any]:
        return {
            "sources_note": self.note,
            "degraded": self.degraded,
            "degraded_reason": self.reason,
            "fact_run_id": self.run_id,
        }


@dataclass
class Outcome:
    claim: str
    domain: str | None
    verdict: str
    confidence: float
    evidence: list[Evidence]
    correction: str = ""
    signals: list[dict[str, str]] = field(default_factory=list)
    wikidata: list[dict[str, Any]] = field(default_factory=list)
    # Who decided and on what (the verification records it; docs/grounding.md):
    basis: str = ""  # what the local verdict rests on, as the calibration table counts it
    judge: str = "local"
    rests_on: str = ""  # the evidence sentence or signal the verdict rests on
    confidence_note: str = ""  # why the confidence is not higher
    judge_note: str = ""  # a model judge that failed, and that the local judge decided instead
    judge_latency_ms: float | None = None
    judge_details: dict[str, Any] = field(default_factory=dict)
    # An abstention that points somewhere (docs/grounding.md "Leaning"): supported/contradicted/none,
    # and the evidence sentence it leans on. A decisive verdict leans on nothing: it is decided.
    leaning: str = "none"
    leaning_on: str = ""
    wikidata_check: WikidataCheck | None = None  # set when Wikidata was asked about the claim

    @property
    def related_entries(self) -> list[str]:
        ids: dict[str, None] = {}
        for item in self.evidence:
            ids.setdefault(item.hit.entry.entry_id, None)
            for related in item.hit.entry.related:
                ids.setdefault(related, None)
        return list(ids)


def _excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _clamp(value: float) -> float:
    return round(min(0.99, max(0.01, value)), 4)


def claim_judge(*, claim: str, domain: str | None, agents: Sequence[GroundingAgent]) -> Outcome:
    """The verdict for one claim (nothing stored): the local judge's, with its calibrated confidence,
    then the configured model judge's when there is one (``GROUNDING_JUDGE``). A claim an operator
    has reviewed (the same claim: ``review_memory``) gets the reviewed verdict instead, from judge
    ``review``, before any judge runs."""
    remembered = review_memory.recalled(claim=claim, domain=domain)
    if remembered is not None:
        return _review_outcome(claim, remembered)
    outcome = _calibrated(claim_judge_local(claim=claim, domain=domain, agents=agents))
    judge = settings.GROUNDING_JUDGE
    if judge in MODEL_JUDGES:
        outcome = _model_judged(judge, outcome)
    return outcome


# A reviewed verdict is a person's: it is right as far as the review was, so its confidence is the
# review's, not a calibrated share. A paraphrase match is one step less sure (the match may be wrong).
REVIEW_CONFIDENCE = {"exact": 0.99, "paraphrase": 0.95}


def _review_outcome(claim: str, remembered: review_memory.Recalled) -> Outcome:
    """The reviewed verdict for ``claim``, citing the review, its reviewer and date."""
    memory = remembered.memory
    reviewer = memory.reviewer_name or "an operator"
    how = (
        "the same claim"
        if remembered.match == "exact"
        else f"a paraphrase ({remembered.similarity:.2f} similar)"
    )
    return Outcome(
        claim, memory.domain or None, memory.verdict, REVIEW_CONFIDENCE[remembered.match], [],
        correction=memory.correction, basis=f"review:{remembered.match}", judge="review",
        rests_on=f"Review of verification #{memory.verification_id} ({memory.decision}) by {reviewer} on "
        f"{memory.reviewed_at:%Y-%m-%d}: {memory.verdict}, for {how}: “{memory.claim}”"
        + (f" Note: {memory.note}" if memory.note else ""),
        confidence_note=f"A reviewed verdict, reused for {how}; not calibrated.",
        judge_details={
            "review": {
                "verificationId": memory.verification_id, "memoryId": memory.pk, "decision": memory.decision,
                "reviewer": memory.reviewer_name, "reviewedAt": memory.reviewed_at.isoformat(),
                "match": remembered.match, "similarity": remembered.similarity,
            }
        },
    )  # fmt: skip


def _calibrated(outcome: Outcome) -> Outcome:
    """The confidence the local verdict's basis earned on the calibration claims; a decisive verdict
    its basis did not earn becomes unverified (``calibration.py``)."""
    if outcome.basis.startswith("wikidata:"):
        # The calibration claims are about the knowledge packs; a Wikidata verdict keeps its similarity score.
        outcome.confidence_note = (
            "Wikidata verdicts are not calibrated: the confidence grows with how close the statement is."
        )
        return outcome
    result = calibrated(basis=outcome.basis, verdict=outcome.verdict)
    if result.demoted_from:
        # Not decided, but not nothing either: the abstention leans to what the evidence pointed to.
        outcome.verdict = result.verdict
        outcome.correction = ""
        outcome.leaning = result.demoted_from
    elif outcome.verdict != Verdict.UNVERIFIED:
        outcome.leaning, outcome.leaning_on = "none", ""
    outcome.confidence = _clamp(result.probability)
    outcome.confidence_note = result.note(outcome.basis)
    return outcome


def _model_judged(judge: str, local: Outcome) -> Outcome:
    """The model judge's verdict on the evidence sentences the local judge compared the claim with; the
    local outcome, saying why, when there is nothing related to show it or the model fails. With
    ``GROUNDING_NLI_MODE=veto`` the nli judge only reviews a decisive local verdict (``_vetoed``)."""
    veto = judge == "nli" and settings.GROUNDING_NLI_MODE == "veto"
    if veto and local.verdict == Verdict.UNVERIFIED:
        local.judge_note = (
            "The nli judge only reviews decisive verdicts (GROUNDING_NLI_MODE=veto); "
            "the local judge abstained."
        )
        return local
    related = [e for e in local.evidence if e.similarity >= RELATED_SIMILARITY]
    if not related:
        local.judge_note = f"Nothing in the knowledge base is close enough to put to the {judge} judge."
        return local
    premises = [Premise(entry_id=e.hit.entry.entry_id, sentence=e.sentence) for e in related]
    try:
        answer = model_judge(
            judge, claim=local.claim, premises=premises,
            deadline_seconds=settings.GROUNDING_JUDGE_DEADLINE_SECONDS,
            veto_of=local.verdict if veto else None,
        )  # fmt: skip
    except JudgeFailed as failure:
        local.judge_note = f"The {judge} judge failed ({failure.reason}: {failure}); the local judge decided."
        return local
    if veto:
        return _vetoed(local, answer, related)
    chosen = related[answer.premise_index] if answer.premise_index is not None else None
    evidence = [chosen, *[e for e in local.evidence if e is not chosen]] if chosen else local.evidence
    score = answer.score
    outcome = Outcome(
        local.claim, local.domain, answer.verdict, _clamp(score if score is not None else 0.5), evidence[:3],
        correction=chosen.hit.entry.content if chosen and answer.verdict == Verdict.CONTRADICTED else "",
        basis=f"{judge}:{answer.verdict}", judge=judge, rests_on=chosen.sentence if chosen else "",
        judge_latency_ms=answer.latency_ms, judge_details=answer.details,
        confidence_note=(
            f"The {judge} model's own probability, not calibrated here: {answer.reason}"
            if score is not None
            else f"The {judge} model gave no probability, so the confidence is even odds: {answer.reason}"
        ),
        wikidata_check=local.wikidata_check,
    )  # fmt: skip
    return outcome


def _vetoed(local: Outcome, answer: ModelVerdict, related: list[Evidence]) -> Outcome:
    """The local decisive verdict as the nli judge in veto mode left it: standing (the local judge's,
    with its calibrated confidence), or withheld — unverified, resting on the model's reason. The
    model never makes the verdict decisive nor turns it into the other one (``model_judges``)."""
    if answer.verdict == local.verdict:
        local.judge_note = f"The nli judge (GROUNDING_NLI_MODE=veto) let the verdict stand: {answer.reason}"
        local.judge_latency_ms, local.judge_details = answer.latency_ms, answer.details
        return local
    chosen = related[answer.premise_index] if answer.premise_index is not None else None
    evidence = [chosen, *[e for e in local.evidence if e is not chosen]] if chosen else local.evidence
    score = answer.score if answer.score is not None else 0.5
    # An abstention that leans to the withheld verdict, on what the local judge rested it on: a person
    # can settle it (the queue), and the model's reason is in the notes.
    return Outcome(
        local.claim, local.domain, Verdict.UNVERIFIED, _clamp(score), evidence[:3], signals=local.signals,
        wikidata=local.wikidata, basis="nli:veto", judge="nli", rests_on=local.rests_on,
        leaning=local.verdict, leaning_on=_leans_on(local.evidence[0]) if local.evidence else "",
        judge_note=f"The local judge said {local.verdict} ({local.basis}); the nli judge withheld it "
        "(GROUNDING_NLI_MODE=veto).",
        confidence_note=f"The nli model's own probability that the {local.verdict} verdict does not hold, "
        f"not calibrated here: {answer.reason}",
        judge_latency_ms=answer.latency_ms, judge_details=answer.details,
        wikidata_check=local.wikidata_check,
    )  # fmt: skip


def claim_judge_local(*, claim: str, domain: str | None, agents: Sequence[GroundingAgent]) -> Outcome:
    """The local judge's verdict and its basis, before calibration (what the calibration counts)."""
    claim_vector = embed_text(text=claim)
    if domain is not None:
        hits = knowledge_selectors.knowledge_search(
            query=claim, domain=domain, limit=EVIDENCE_ENTRIES, query_vector=claim_vector
        )
        return _verdict(claim, domain, _evidence_sentences(claim, claim_vector, hits))
    # One search of every domain: the routed domain's entries first, the rest when they settle nothing
    # (keywords can mislead: "HTTP" in a security claim).
    routed = domain_route(claim=claim, agents=agents)
    everywhere = knowledge_selectors.knowledge_search(
        query=claim, domain=None, limit=EVIDENCE_ENTRIES * 2, query_vector=claim_vector
    )
    in_routed = [hit for hit in everywhere if hit.entry.domain.name == routed][:EVIDENCE_ENTRIES]
    known = {e.hit.entry.pk: e for e in _evidence_sentences(claim, claim_vector, in_routed)}
    outcome = _verdict(claim, routed, _evidence_order(known.values()))
    if outcome.verdict == Verdict.UNVERIFIED:
        top = everywhere[:EVIDENCE_ENTRIES]
        # Only the entries not judged already are compared with the claim.
        fresh = [hit for hit in top if hit.entry.pk not in known]
        known.update((e.hit.entry.pk, e) for e in _evidence_sentences(claim, claim_vector, fresh))
        wider = _verdict(
            claim,
            top[0].entry.domain.name if top else routed,
            _evidence_order(known[hit.entry.pk] for hit in top),
        )
        # Both abstain: the one read on the closer evidence says more (its leaning, what it rests on).
        if wider.verdict != Verdict.UNVERIFIED or routed is None or _top(wider) > _top(outcome):
            outcome = wider
    if outcome.verdict == Verdict.UNVERIFIED and names_entity(claim):
        if _packs_speak_to(outcome):
            outcome.wikidata_check = WikidataCheck(note=PACKS_SPEAK_NOTE)
            return outcome
        # Not the curated knowledge's subject: a claim about a named entity is checked on Wikidata.
        return _wikidata_judged(claim, claim_vector, local=outcome)
    return outcome


def _top(outcome: Outcome) -> float:
    return outcome.evidence[0].similarity if outcome.evidence else 0.0


PACKS_SPEAK_NOTE = (
    "Wikidata was not asked: the knowledge base holds close evidence on this claim, for a person to decide."
)


def _packs_speak_to(outcome: Outcome) -> bool:
    """Whether the knowledge packs hold close evidence on the claim (a sentence as similar as one that
    could state it, or a leaning): then it is their subject, and their abstention with what it leans
    on is the answer, for a person to decide. Asking Wikidata too would spend its scarce budget (one
    vector query per 2 s) and seconds of the caller's time on a claim Wikidata does not describe
    ("Core Web Vitals treat an LCP of up to 2.5 seconds as good", "Member States may lower the GDPR
    age …": capitalised names, 13 of the 30 such claims of the two development sets)."""
    close = any(item.similarity >= SUPPORT_SIMILARITY for item in outcome.evidence)
    return close or outcome.leaning != "none"


_NAME_RE = re.compile(r"\b[A-Z][a-z][\w'’.-]*(?:\s+(?:de |von |van |of )?[A-Z][a-z][\w'’.-]*)+")


def names_entity(claim: str) -> bool:
    """Whether the claim names someone or something (two or more capitalised words in a row). The first
    word is capitalised anyway: one that opens a sentence without naming anything ("Under SemVer 2.0.0
    …", "Since Django 3.1 …", "Use Django's …", "Applying Little's law …") is not part of a name, so a
    claim about one product is not put to Wikidata as if it named two."""
    opening = first_word(claim)
    if opening and (opening.group(1).lower() in sentence_openers() or opening.group(1).endswith("ing")):
        claim = claim[opening.end() :]
    return _NAME_RE.search(claim) is not None


def _wikidata_judged(claim: str, claim_vector: np.ndarray, *, local: Outcome) -> Outcome:
    """The claim against Wikidata facts found by the fact workflow (run here, once, bounded by its
    deadline — not also queued for a worker, and marked as made on a verification's behalf):
    supported when the most similar statement's value is what the claim says, contradicted when a
    close statement says otherwise, else the ``local`` outcome. Either way the outcome says what
    asking Wikidata came to (``wikidata_check``): an agent must not read "unverified" as "Wikidata
    has nothing on this" when Wikidata could not be reached."""
    from apps.wikidata import services as fact_services
    from apps.wikidata.models import FactRunPurpose

    try:
        run = fact_services.fact_query_submit(
            query=claim[:512], top_k=5, include_sparql=False, enqueue=False,
            purpose=FactRunPurpose.VERIFICATION,
        )  # fmt: skip
    except ValidationFailed as refused:  # no fact tools in the registry: a deployment without Wikidata
        local.wikidata_check = WikidataCheck(note=f"Wikidata was not asked: {refused.message}")
        return local
    run = fact_services.fact_run_execute(run_id=str(run.pk))
    facts = list(run.facts.order_by("position"))
    outcome = (_wikidata_verdict(claim, claim_vector, facts) if facts else None) or local
    outcome.wikidata_check = _wikidata_check(run, len(facts))
    return outcome


def _wikidata_check(run: Any, found: int) -> WikidataCheck:
    """What the fact run made for a verification came to, in words for the verification."""
    if run.degraded:
        reason = run.degraded_reason
        if found:
            note = (
                f"Wikidata could not be reached ({reason}); the claim was compared with {found} "
                "Wikidata facts stored by earlier runs instead."
            )
        else:
            note = (
                f"Wikidata could not be reached ({reason}), so the claim was judged on the knowledge base "
                "alone."
            )
        return WikidataCheck(note=note, degraded=True, reason=reason, run_id=run.pk)
    from apps.wikidata.models import FactRunStatus

    if run.status != FactRunStatus.SUCCEEDED:  # failed other than by an upstream (a bug)
        reason = f"The Wikidata fact run {run.status}: {run.error or 'no error recorded'}"
        note = f"{reason}, so the claim was judged on the knowledge base alone."
        return WikidataCheck(note=note, degraded=True, reason=reason, run_id=run.pk)
    if found:
        return WikidataCheck(note=f"Wikidata was asked: {found} facts found.", run_id=run.pk)
    return WikidataCheck(note="Wikidata was asked and has no statement about this claim.", run_id=run.pk)


def _wikidata_verdict(claim: str, claim_vector: np.ndarray, facts: list[Any]) -> Outcome | None:
    """Supported when the most similar fact's value is what the claim says, contradicted when a close
    fact says otherwise; ``None`` when the facts settle nothing."""
    vectors = embed_texts_cached(texts=[fact.text for fact in facts])
    scored = sorted(zip(vectors @ claim_vector, facts, strict=True), key=lambda pair: -float(pair[0]))
    similarity, best = float(scored[0][0]), scored[0][1]
    value = (best.value_label or best.value_text).strip()
    cited = [_fact_source(fact, float(sim)) for sim, fact in scored[:3]]
    if value and value.lower() in claim.lower() and similarity >= RELATED_SIMILARITY:
        verdict, correction, confidence = Verdict.SUPPORTED, "", 0.7 + (similarity - RELATED_SIMILARITY)
    elif similarity >= WIKIDATA_CONTRADICTION_SIMILARITY:
        verdict, confidence = Verdict.CONTRADICTED, 0.55 + (similarity - WIKIDATA_CONTRADICTION_SIMILARITY)
        correction = f"According to Wikidata, {best.text} (statement {best.claim_guid})."
    else:
        return None
    outcome = Outcome(
        claim, "wikidata", verdict, _clamp(confidence), [], correction=correction,
        basis=basis_of(verdict=verdict, source="wikidata"),
        rests_on=f"Wikidata statement {best.claim_guid} ({similarity:.2f} similar): {best.text}",
    )  # fmt: skip
    outcome.wikidata = cited
    return outcome


def _fact_source(fact: Any, similarity: float) -> dict[str, Any]:
    return {
        "entry_id": f"wikidata:{fact.claim_guid}",
        "content_excerpt": fact.text,
        "relevance": round(max(similarity, 0.0), 4),
        "qid": fact.qid,
        "claimGuid": fact.claim_guid,
        "propertyId": fact.pid,
        "factId": fact.pk,
        "degraded": fact.run.degraded,
    }


def _evidence_sentences(claim: str, claim_vector: np.ndarray, hits: Sequence[SearchHit]) -> list[Evidence]:
    """For each hit, its sentence most similar to the claim (sentence embeddings cached in Redis)."""
    # A long sentence that joins several rules is read clause by clause too: the clause that says the
    # claim is as close as the claim is to what the entry says ("… should not impose composition
    # rules …, and should not require passwords to be changed periodically …").
    pieces = [
        (hit, sentence, text)
        for hit in hits
        for sentence in sentences(hit.entry.content) or [hit.entry.content]
        for text in (sentence, *_long_clauses(sentence))
    ]
    if not pieces:
        return []
    vectors = embed_texts_cached(texts=[text for _, _, text in pieces])
    similarities = vectors @ claim_vector
    best: dict[int, tuple[float, str]] = {}
    for (hit, sentence, _), similarity in zip(pieces, similarities, strict=True):
        current = best.get(hit.entry.pk)
        if current is None or float(similarity) > current[0]:
            best[hit.entry.pk] = (float(similarity), sentence)
    by_pk = {hit.entry.pk: hit for hit in hits}
    # Relatedness: the better of the best sentence and the whole entry (topic and content).
    evidence = [
        Evidence(by_pk[pk], sentence, max(sim, by_pk[pk].similarity)) for pk, (sim, sentence) in best.items()
    ]
    for item in evidence:
        # The whole entry, not only its closest sentence: the number that disagrees may sit in the next one.
        item.signals = _counting(claim, item, contradiction_signals(claim, item.hit.entry.content))
    return _evidence_order(evidence)


#: The fewest words a clause needs to be compared with a claim on its own.
MIN_CLAUSE_WORDS = 6


def _long_clauses(sentence: str) -> list[str]:
    """The clauses of a sentence that has several, each long enough to say something on its own."""
    pieces = clauses(sentence)
    return [piece for piece in pieces if len(piece.split()) >= MIN_CLAUSE_WORDS] if len(pieces) > 1 else []


def _evidence_order(evidence: Iterable[Evidence]) -> list[Evidence]:
    """Most similar first (ties by entry id, so verdicts are deterministic)."""
    return sorted(evidence, key=lambda e: (-e.similarity, e.hit.entry.entry_id))


def _verdict(claim: str, domain: str | None, evidence: list[Evidence]) -> Outcome:
    if not evidence or evidence[0].similarity < RELATED_SIMILARITY:
        top = evidence[0].similarity if evidence else 0.0
        return Outcome(
            claim, domain, Verdict.UNVERIFIED, UNCALIBRATED, evidence[:3],
            basis=basis_of(verdict=Verdict.UNVERIFIED, signal_type="unrelated"),
            rests_on="Nothing in the knowledge base is about this"
            + (f" (the closest sentence is {top:.2f} similar)." if evidence else "."),
        )  # fmt: skip
    best = evidence[0]
    if best.similarity >= SUPPORT_SIMILARITY and not best.signals:
        # The closest evidence says the same thing: disagreement elsewhere is about something else.
        contradicting = []
    else:
        # Only evidence about as close as the best counts against the claim.
        floor = max(CONTRADICTION_SIMILARITY, best.similarity - CONTRADICTION_MARGIN)
        contradicting = [e for e in evidence if e.signals and e.similarity >= floor]
    if contradicting:
        # Prefer the most similar disagreeing entry; among equals, the higher-priority source.
        chosen = min(contradicting, key=lambda e: (-round(e.similarity, 2), _priority(e.hit.entry)))
        ordered = [chosen, *[e for e in evidence if e is not chosen]][:3]
        first = chosen.signals[0]
        return Outcome(
            claim, domain, Verdict.CONTRADICTED, UNCALIBRATED, ordered,
            correction=chosen.hit.entry.content, signals=chosen.signals,
            basis=basis_of(verdict=Verdict.CONTRADICTED, signal_type=first["type"]),
            rests_on=f"{first['type']}: the claim says “{first['claim']}”, {chosen.hit.entry.entry_id} says "
            f"“{first['evidence']}” ({chosen.sentence})",
            leaning_on=_leans_on(chosen),
        )  # fmt: skip
    # Similarity only says which sentences to read: one that states every part of the claim supports it,
    # however it is worded ("Use bcrypt, scrypt or Argon2 …" against "recommends storing passwords with …").
    stating = next((e for e in evidence[:3] if not _parts_missing(claim, e)), None)
    if stating is not None and not stating.signals:
        ordered = [stating, *[e for e in evidence if e is not stating]][:3]
        return Outcome(
            claim, domain, Verdict.SUPPORTED, UNCALIBRATED, ordered,
            basis=basis_of(verdict=Verdict.SUPPORTED),
            rests_on=f"{stating.hit.entry.entry_id} states every part of the claim (its numbers and names, "
            f"what it asserts, its polarity and modality): {stating.sentence}",
        )  # fmt: skip
    if best.similarity >= SUPPORT_SIMILARITY:
        # What the close evidence states (a claim may join two entries' facts).
        close = [e for e in evidence[:3] if e.similarity >= SUPPORT_SIMILARITY]
        unstated = unstated_details(claim, " ".join(_stated_text(e.hit.entry) for e in close))
        if unstated:
            # Close to what the knowledge says, but it adds numbers or names that the knowledge does not.
            return Outcome(
                claim, domain, Verdict.UNVERIFIED, UNCALIBRATED, evidence[:3],
                signals=[{"type": "unstated", "claim": ", ".join(unstated), "evidence": "(not stated)"}],
                basis=basis_of(verdict=Verdict.UNVERIFIED, signal_type="unstated"),
                rests_on=f"The closest evidence ({best.hit.entry.entry_id}) does not state "
                f"{', '.join(unstated)}: {best.sentence}",
            )  # fmt: skip
        # Close is not the same: no sentence states every part, so the claim only leans to supported.
        missing = _parts_missing(claim, best)
        return Outcome(
            claim, domain, Verdict.UNVERIFIED, UNCALIBRATED, evidence[:3],
            basis=basis_of(verdict=Verdict.UNVERIFIED, signal_type="leaning"),
            rests_on=f"The closest evidence ({best.hit.entry.entry_id}, {best.similarity:.2f} similar) is "
            f"about the same thing but does not state {'; '.join(missing)}: {best.sentence}",
            leaning=Verdict.SUPPORTED, leaning_on=_leans_on(best),
        )  # fmt: skip
    # Related knowledge exists but neither says the same nor disagrees explicitly. When its entries say
    # most of what the claim asserts, the knowledge base likely covers the claim in words the judge
    # cannot read: a basis of its own, which the calibration finds far less sure to be undecidable.
    covered = _asserted_coverage(claim, evidence[:3]) >= MIN_COVERED_SHARE
    return Outcome(
        claim, domain, Verdict.UNVERIFIED, UNCALIBRATED, evidence[:3],
        basis=basis_of(verdict=Verdict.UNVERIFIED, signal_type="covered" if covered else "undecided"),
        rests_on=f"The closest evidence ({best.hit.entry.entry_id}, {best.similarity:.2f} similar) neither "
        f"says the same nor disagrees explicitly"
        + (", though its entries say most of what the claim asserts" if covered else "")
        + f": {best.sentence}",
    )  # fmt: skip


#: The share of a claim's asserted words that related entries must say for an undecided claim to count as
#: covered by the knowledge base (``unverified:covered``): written against the four development sets'
#: undecided claims (7 of 16 undecidable at ≥ 0.5, 53 of 72 below it; docs/grounding.md "Rules").
MIN_COVERED_SHARE = 0.5


def _asserted_coverage(claim: str, evidence: Sequence[Evidence]) -> float:
    """The share of what the claim asserts that the evidence's entries say, taken together."""
    return asserted_share(claim, " ".join(_stated_text(item.hit.entry) for item in evidence))


#: The share of what a claim asserts (its content words less the cue words) that a sentence must say for
#: it to state the claim; written against the first two claim sets (docs/grounding.md "Rules").
MIN_ASSERTED_COVERAGE = 0.66


def _parts_missing(claim: str, evidence: Evidence) -> list[str]:
    """The parts of the claim the evidence sentence does not state (``stance.claim_parts``)."""
    entry = evidence.hit.entry
    parts = claim_parts(claim, evidence.sentence, f"{entry.topic}. ({entry.source})")
    return parts.missing(MIN_ASSERTED_COVERAGE)


def _leans_on(evidence: Evidence) -> str:
    return f"{evidence.hit.entry.entry_id}: {evidence.sentence}"


def _stated_text(entry: KnowledgeEntry) -> str:
    return f"{entry.topic}. {entry.content} ({entry.source})"


#: An identifier the claim gives its subject in the predicate ("Argon2 is standardised in RFC 8018",
#: "… since Python 3.8") is what it says of that subject: a different one in a close entry that says half
#: of what the claim asserts is a wrong identifier. One the claim opens with ("GDPR Article 30 requires
#: …") is its subject, so an entry on another must say what the claim asserts (MIN_ASSERTED_COVERAGE).
MIN_PREDICATE_ID_COVERAGE = 0.5
#: The words before an identifier that put it past the claim's subject.
SUBJECT_WORDS = 4


def _opens_with(claim: str, identifier: str) -> bool:
    """Whether ``identifier`` (a signal's "rfc 8018", "python 3.8, 3.9") stands among the claim's first
    words, its subject."""
    values = identifier.split(" ", 1)[-1].split(", ")
    found = [
        match.start()
        for value in values
        if (match := re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", claim))
    ]
    return not found or len(claim[: min(found)].split()) < SUBJECT_WORDS


def _counting(claim: str, evidence: Evidence, signals: list[dict[str, str]]) -> list[dict[str, str]]:
    """The contradiction signals that count at this evidence's similarity: a different identifier
    (Article 22 vs Article 37) only means disagreement when the evidence is otherwise about the same
    thing — close, and its entry says what the claim asserts of the identifier ("Article 30 requires
    records of processing" is about another article than an entry on Article 28's processor contracts,
    not a wrong number)."""
    counting = [
        signal
        for signal in signals
        if signal["type"] != "identifier"
        or (
            evidence.similarity >= SUPPORT_SIMILARITY
            and _asserted_coverage(claim, [evidence])
            >= (MIN_ASSERTED_COVERAGE if _opens_with(claim, signal["claim"]) else MIN_PREDICATE_ID_COVERAGE)
        )
    ]
    if any(signal["type"] == "negation" for signal in counting):
        # A negation clashes where the claim is said: the sentence closest to the claim must carry it
        # too, or the "not" is about something else of the entry ("Insecure Deserialization from 2017 is
        # now part of it" after "… does not …" in another sentence). A disagreeing number may sit in
        # the next sentence; a negation may not.
        in_sentence = {signal["type"] for signal in contradiction_signals(claim, evidence.sentence)}
        if "negation" not in in_sentence:
            counting = [signal for signal in counting if signal["type"] != "negation"]
    return counting


def _priority(entry: KnowledgeEntry) -> int:
    source = entry.knowledge_source
    return source.priority if source is not None else 100


def _agents() -> list[GroundingAgent]:
    return GroundingAgent.enabled_with_domains()


def _claim_clean(claim: str) -> str:
    text = " ".join((claim or "").split())
    if not text:
        raise ValidationFailed("The claim is empty: send the sentence to verify.", details={"field": "claim"})
    if len(text) > MAX_CLAIM_CHARS:
        raise ValidationFailed(
            f"The claim is {len(text)} characters; verify at most {MAX_CLAIM_CHARS} at once "
            "(use /v1/grounding/ground for whole messages).",
            details={"field": "claim"},
        )
    return text


def claim_verify(
    *, claim: str, domain: str | None = None, message: GroundingMessage | None = None
) -> Verification:
    """Verify one claim and store the verification (the verification log)."""
    started = time.perf_counter()
    text = _claim_clean(claim)
    domain = knowledge_selectors.domain_check(domain)
    config = GroundingSettings.current()
    outcome = claim_judge(claim=text, domain=domain, agents=_agents())
    return _store(outcome, config, started, message)


def _store(
    outcome: Outcome, config: GroundingSettings, started: float, message: GroundingMessage | None
) -> Verification:
    status, reason = _queued(outcome, config.confidence_threshold)
    verification = Verification.objects.create(
        claim=outcome.claim,
        domain=_domain_of(outcome),
        verdict=outcome.verdict,
        confidence=outcome.confidence,
        sources=[item.as_source() for item in outcome.evidence] + outcome.wikidata,
        correction=outcome.correction,
        related_entries=outcome.related_entries,
        signals=outcome.signals,
        wikidata=outcome.wikidata,
        latency_ms=round((time.perf_counter() - started) * 1000, 2),
        judge=outcome.judge,
        basis=outcome.basis,
        rests_on=outcome.rests_on,
        confidence_note=outcome.confidence_note,
        judge_note=outcome.judge_note,
        judge_latency_ms=outcome.judge_latency_ms,
        judge_details=outcome.judge_details,
        **(outcome.wikidata_check.as_fields() if outcome.wikidata_check else {}),
        message=message,
        review_status=status,
        leaning=_leaning(outcome),
        queue_reason=reason,
    )
    # The log file gets the line once the row is committed: never a line for a rolled-back one.
    transaction.on_commit(lambda: verification_log_append(verification_log_line(verification)))
    return verification


def _leaning(outcome: Outcome) -> str:
    # ``Outcome.leaning`` (supported, contradicted or none) comes with the local judge's abstentions;
    # read defensively so an outcome without it (a model judge's, an older one) is stored as "".
    return str(getattr(outcome, "leaning", "") or "")


def _queued(outcome: Outcome, threshold: float) -> tuple[str, str]:
    """Whether a verdict waits for a person, and why (docs/grounding.md "The review queue"): a
    decisive verdict below the threshold, an abstention that leans one way, or an abstention that is
    not sure the knowledge base cannot decide. A reviewed verdict never waits again."""
    if outcome.judge == "review":
        return ReviewStatus.NOT_NEEDED, ""
    confidence = f"{outcome.confidence:.2f}"
    below = outcome.confidence < threshold
    if outcome.verdict != Verdict.UNVERIFIED:
        if below:
            return ReviewStatus.PENDING, (
                f"{outcome.verdict.capitalize()} at confidence {confidence}, below the review threshold "
                f"{threshold:.2f}: confirm or change it."
            )
        return ReviewStatus.NOT_NEEDED, ""
    leaning = _leaning(outcome)
    if leaning in (Verdict.SUPPORTED, Verdict.CONTRADICTED):
        leans_on = str(getattr(outcome, "leaning_on", "") or "")
        return ReviewStatus.PENDING, (
            f"Abstained, leaning {leaning}: the evidence points one way but does not decide it"
            + (f": {leans_on}" if leans_on else ".")
        )
    if below:
        return ReviewStatus.PENDING, (
            f"Abstained at confidence {confidence}, below the review threshold {threshold:.2f}: "
            "the knowledge base may cover this claim."
        )
    return ReviewStatus.NOT_NEEDED, ""


def _domain_of(outcome: Outcome) -> KnowledgeDomain | None:
    """The outcome's domain row: from its evidence when it is there (no query), else looked up."""
    if not outcome.domain:
        return None
    for item in outcome.evidence:
        if item.hit.entry.domain.name == outcome.domain:
            return item.hit.entry.domain
    return KnowledgeDomain.objects.filter(name=outcome.domain).first()


def verification_result(*, verification: Verification) -> dict[str, Any]:
    """The seed's ``verification_result`` plus ``verdict``, ``domain`` and the log id."""
    result: dict[str, Any] = {
        "claim": verification.claim,
        "verified": verification.verified,
        "confidence": verification.confidence,
        "sources": [
            {k: source[k] for k in ("entry_id", "content_excerpt", "relevance")}
            for source in verification.sources
        ],
        "related_entries": list(verification.related_entries),
        "verdict": verification.verdict,
        "domain": verification.domain.name
        if verification.domain
        else ("wikidata" if verification.wikidata else None),
        "verificationId": verification.pk,
    }
    result["judge"] = {
        "name": verification.judge,
        "basis": verification.basis,
        "restsOn": verification.rests_on,
        "confidenceNote": verification.confidence_note,
        "note": verification.judge_note or None,
        "latencyMs": verification.judge_latency_ms,
    }
    # An abstention that points somewhere says where, and on which sentence (the one it rests on).
    result["leaning"] = verification.leaning or "none"
    if result["leaning"] != "none":
        result["leaningOn"] = verification.rests_on
    if verification.correction:
        result["correction"] = verification.correction
    if verification.signals:
        result["signals"] = verification.signals
    if verification.wikidata:
        result["wikidata"] = verification.wikidata
    # Whether every source asked answered (docs/grounding.md "When a source is down").
    result["degraded"] = verification.degraded
    if verification.degraded:
        result["degradedReason"] = verification.degraded_reason
    if verification.sources_note:
        result["sourcesNote"] = verification.sources_note
    if verification.fact_run_id:
        result["factRunId"] = str(verification.fact_run_id)
    return result


def calibration_refit(*, claims_paths: list[Path]) -> CalibrationFitted:
    """Fit the calibration table (``GROUNDING_CALIBRATION``) on the labelled claims of ``claims_paths``
    taken together, judged by the local judge inside a transaction that is rolled back (a claim about
    a named entity runs the fact workflow, which stores a run)."""
    claims = [
        json.loads(line)
        for path in claims_paths
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    agents = _agents()

    def basis_for(claim: str) -> str:
        return claim_judge_local(claim=_claim_clean(claim), domain=None, agents=agents).basis

    with transaction.atomic():
        fitted = calibration_fit(
            claims=claims, basis_for=basis_for, path=Path(settings.GROUNDING_CALIBRATION),
            fitted_on=" + ".join(path.name for path in claims_paths),
        )  # fmt: skip
        transaction.set_rollback(True)
    return fitted


# --- Grounding a message ----------------------------------------------------------------------------


def message_ground(*, message: str, message_id: str = "", mode: str | None = None) -> GroundingMessage:
    """Ground a message (seed ``ground_message``): verify its claims, inject the knowledge they need."""
    started = time.perf_counter()
    text = (message or "").strip()
    if not text:
        raise ValidationFailed("The message is empty.", details={"field": "message"})
    if len(text) > MAX_MESSAGE_CHARS:
        raise ValidationFailed(
            f"The message is {len(text)} characters; ground at most {MAX_MESSAGE_CHARS} at once.",
            details={"field": "message"},
        )
    config = GroundingSettings.current()
    mode = mode or config.injection_mode
    if mode not in InjectionMode.values:
        raise ValidationFailed(
            f"mode must be one of {', '.join(InjectionMode.values)}.", details={"field": "mode"}
        )
    agents = _agents()
    claims: list[str] = []
    if config.enabled and (mode != InjectionMode.ON_DETECTION or _triggered(text, config)):
        claims = claims_extract(message=text, config=config, agents=agents)
    outcomes = [claim_judge(claim=claim, domain=None, agents=agents) for claim in claims]
    with transaction.atomic():
        grounding = GroundingMessage.objects.create(
            original_message_id=message_id, message=text, mode=mode,
            injected_knowledge=_injected(outcomes), summary=_summary(outcomes),
        )  # fmt: skip
        for outcome in outcomes:
            _store(outcome, config, started, grounding)
        grounding.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        grounding.save(update_fields=["latency_ms"])
    return grounding


def _triggered(text: str, config: GroundingSettings) -> bool:
    return any(p.search(text) for p in _compiled([re.escape(t) for t in config.trigger_patterns]))


def _injected(outcomes: Sequence[Outcome]) -> list[dict[str, str]]:
    """The knowledge a reader of the message needs: the correcting entry of each contradicted claim,
    and the supporting entry of each supported one (each entry once)."""
    seen: dict[str, dict[str, str]] = {}
    for outcome in outcomes:
        if outcome.verdict == Verdict.UNVERIFIED or not outcome.evidence:
            continue
        entry = outcome.evidence[0].hit.entry
        seen.setdefault(
            entry.entry_id, {"topic": entry.topic, "content": entry.content, "source": entry.source}
        )
    return list(seen.values())


def _summary(outcomes: Sequence[Outcome]) -> str:
    if not outcomes:
        return "No verifiable claims found."
    counts = {verdict: sum(o.verdict == verdict for o in outcomes) for verdict in Verdict.values}
    parts = [f"{counts[v]} {v}" for v in Verdict.values if counts[v]]
    text = f"{len(outcomes)} claim(s) checked: {', '.join(parts)}."
    wrong = [o for o in outcomes if o.verdict == Verdict.CONTRADICTED]
    if wrong:
        text += " Corrections: " + " ".join(f"“{o.claim}” → {o.correction}" for o in wrong)
    return text


def grounding_message_result(*, grounding: GroundingMessage) -> dict[str, Any]:
    """The seed's ``grounding_message``."""
    verifications = grounding.verifications.select_related("domain").order_by("id")
    return {
        "type": "grounding",
        "id": str(grounding.pk),
        "original_message_id": grounding.original_message_id or None,
        "mode": grounding.mode,
        "verifications": [verification_result(verification=v) for v in verifications],
        "injected_knowledge": grounding.injected_knowledge,
        "summary": grounding.summary,
        "latencyMs": grounding.latency_ms,
    }


# --- Review ------------------------------------------------------------------------------------------


REVIEW_OUTCOMES = {
    "approve": ReviewStatus.APPROVED,
    "reject": ReviewStatus.REJECTED,
    "correct": ReviewStatus.CORRECTED,
}


def verification_review(
    *,
    verification: Verification,
    reviewer: Any,
    action: str,
    verdict: str = "",
    reviewer_name: str = "",
    note: str = "",
    correction: str = "",
    entry_id: str = "",
) -> Verification:
    """Approve, reject or correct a verification, with the reviewer's verdict (required unless approving:
    approving keeps the judge's); a correction may update or create an entry. The reviewed verdict is
    remembered (``review_memory``) and replaces an earlier review of the same verification."""
    from apps.knowledge.services import entry_correct

    if action not in REVIEW_OUTCOMES:
        raise ValidationFailed(
            f"decision must be approve, reject or correct, not {action!r}.", details={"field": "decision"}
        )
    verdict = (verdict or "").strip()
    if verdict and verdict not in Verdict.values:
        raise ValidationFailed(
            f"verdict must be one of {', '.join(Verdict.values)}, not {verdict!r}.",
            details={"field": "verdict"},
        )
    if action != "approve" and not verdict:
        raise ValidationFailed(
            f"To {action}, give the verdict you judge right (verdict: {', '.join(Verdict.values)}).",
            details={"field": "verdict"},
        )
    with transaction.atomic():
        verification = Verification.objects.select_for_update().get(pk=verification.pk)
        if action == "approve" and verdict and verdict != verification.verdict:
            raise ValidationFailed(
                f"Approving keeps the verdict {verification.verdict!r}; to make it {verdict!r}, reject or "
                "correct it.",
                details={"field": "verdict"},
            )
        if action == "reject" and verdict == verification.verdict:
            raise ValidationFailed(
                f"Rejecting says {verification.verdict!r} is wrong: give the verdict that is right "
                "(or approve it).",
                details={"field": "verdict"},
            )
        if action == "correct":
            correction = " ".join((correction or "").split())
            if not correction:
                raise ValidationFailed(
                    "A correction needs the corrected text.", details={"field": "correction"}
                )
            verification.correction = correction
            if entry_id:
                domain = verification.domain.name if verification.domain else ""
                if not domain:
                    raise ValidationFailed(
                        "This verification has no domain; the entry cannot be placed.",
                        details={"field": "entry_id"},
                    )
                entry = entry_correct(
                    entry_id=entry_id.strip().upper(), content=correction, domain_name=domain
                )
                verification.corrected_entry = entry.entry_id
        verification.review_status = REVIEW_OUTCOMES[action]
        verification.reviewed_verdict = verification.verdict if action == "approve" else verdict
        verification.reviewer = reviewer
        verification.reviewed_at = timezone.now()
        verification.review_note = note.strip()
        verification.queue_reason = ""
        verification.save()
        review_memory.remember(verification=verification, reviewer_name=reviewer_name)
    logger.info(
        "grounding.reviewed", verification_id=verification.pk, action=action,
        verdict=verification.reviewed_verdict, reviewer=str(reviewer),
    )  # fmt: skip
    return verification


# --- The verification log ------------------------------------------------------------------------


def verification_log_lines(*, since: Any = None) -> Iterator[str]:
    """The verification log as JSON lines, oldest first (``manage.py grounding export-log``)."""
    queryset = Verification.objects.select_related("domain", "reviewer").order_by("created_at", "id")
    if since is not None:
        queryset = queryset.filter(created_at__gte=since)
    for verification in queryset.iterator(chunk_size=500):
        yield verification_log_line(verification)


def verification_log_line(verification: Verification) -> str:
    """One verification as its verification-log line (export-log and the log file write the same)."""
    record = verification_result(verification=verification)
    record.update(
        createdAt=verification.created_at.isoformat(),
        latencyMs=verification.latency_ms,
        reviewStatus=verification.review_status,
        reviewer=verification.reviewer.get_username() if verification.reviewer else None,
        reviewedAt=verification.reviewed_at.isoformat() if verification.reviewed_at else None,
        messageId=str(verification.message_id) if verification.message_id else None,
    )
    return json.dumps(record, ensure_ascii=False)


# --- The prebuilt agents (`make run`) ---------------------------------------------------------------


@dataclass
class AgentsLoaded:
    created: int

    def summary(self) -> str:
        return f"grounding agents: {self.created} created"


def grounding_agents_load_default_if_empty() -> AgentsLoaded | None:
    """First start: load the default agents when there are none (registered in ``apps.py``; it runs
    after the knowledge packs are loaded, since an agent whose domain is missing is skipped)."""
    if GroundingAgent.objects.exists():
        return None
    return AgentsLoaded(created=grounding_agents_load_default())


def grounding_agents_load_default() -> int:
    """The seed's four grounding agents, as data from ``CORTEX_GROUNDING_AGENTS``
    (``config/grounding/agents.json``), and the grounding settings; returns how many were created."""
    path = Path(settings.CORTEX_GROUNDING_AGENTS)
    definitions = json.loads(path.read_text(encoding="utf-8"))
    GroundingSettings.current()
    created = 0
    for definition in definitions:
        domain = KnowledgeDomain.objects.filter(name=definition["domain"]).first()
        if domain is None:
            continue
        agent, was_created = GroundingAgent.objects.update_or_create(
            name=definition["name"],
            defaults={
                "domain": domain,
                "description": definition.get("description", ""),
                "verification_keywords": definition.get("verification_keywords", []),
                "applies_to_agents": definition.get("applies_to_agents", []),
            },
        )
        agent.sources.set(KnowledgeSource.objects.filter(domain=domain))
        created += was_created
    return created
