"""The model judges of a grounding verification: an NLI cross-encoder (``nli``) or an LLM (``llm``).

Both see the claim and the few evidence sentences retrieval already picked (:class:`Premise`)
and answer one :class:`ModelVerdict`: ``supported`` or ``contradicted`` resting on one of those
sentences, or ``unverified``. The caller (the verification service) chooses the judge with
``GROUNDING_JUDGE`` and falls back to the local judge when :func:`model_judge` raises
:class:`JudgeFailed`.

``nli``
    POSTs every (premise, claim) pair in one batch to ``<GROUNDING_NLI_URL>/predict``, the
    sentence-pair classification route of Hugging Face text-embeddings-inference (TEI):
    request ``{"inputs": [[premise, claim], …], "raw_scores": false}``, answer one list of
    ``{"label", "score"}`` (softmax probabilities) per pair. Labels named ``LABEL_<n>`` are read
    through ``GROUNDING_NLI_LABELS``; named ones (``entailment``, ``CONTRADICTION`` …) as they
    are; labels other than entailment and contradiction (``neutral``, ``not_entailment``) are the
    "neither" mass. A premise counts when entailment (contradiction) is its top label with at
    least ``GROUNDING_NLI_MIN_SCORE``; the best entailing premise makes the claim supported, the
    best contradicting one contradicted, and when both exist, entailment wins only if higher.

    With ``GROUNDING_NLI_MODE=veto`` the caller passes the local judge's decisive verdict as
    ``veto_of`` and the model may only withhold it (answer ``unverified``) or let it stand (answer
    that same verdict): it never makes a verdict decisive and never turns supported into
    contradicted or back. ``supported`` is withheld when a sentence contradicts the claim, or when
    the model has an entailment label and no sentence entails it; ``contradicted`` is withheld when
    no sentence contradicts the claim, or when one entails it. The model then needs a
    contradiction label and not an entailment one, so a contradiction-only classifier fits.

``llm``
    Asks the one LLM client (:func:`apps.core.llm.chat_json`) with :data:`LLM_SYSTEM_PROMPT`
    and the claim with its numbered sentences. The answer is validated, never trusted: an
    unknown verdict, or a decisive one without a valid sentence number, becomes ``unverified``
    with the reason; a confidence that is not a number in [0, 1] is dropped.

Both respect ``deadline_seconds`` for the whole call, retries included (each request's timeouts
are cut to the time left; a retry that would end after the deadline is not made), and turn every
failure into :class:`JudgeFailed` with a reason (``not_configured``, ``timeout``, ``unavailable``,
``bad_response``) and a message for operators that never contains a configured key.
"""

from __future__ import annotations

import functools
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings

from apps.core.errors import UpstreamError
from apps.core.http import build_client, parse_retry_after, timeout_until
from apps.core.llm import LlmBadResponse, LlmUnavailable, chat_json, llm_configured
from apps.core.logging import get_logger
from apps.core.retries import RetryPolicy, call_with_retries
from apps.grounding.models import Verdict

logger = get_logger(__name__)

JUDGES = ("local", "nli", "llm")
MODEL_JUDGES = ("nli", "llm")
# GROUNDING_NLI_MODE: the NLI judge decides the verdict, or may only withhold the local one.
NLI_MODES = ("decide", "veto")
FAILURE_REASONS = ("not_configured", "timeout", "unavailable", "bad_response")

PREDICT_PATH = "/predict"
ENTAILMENT = "entailment"
CONTRADICTION = "contradiction"

# A judge has a short deadline: one quick retry of a transient failure, when it fits.
NLI_RETRY_POLICY = RetryPolicy(max_retries=1, backoff_base=0.1, backoff_cap=0.5, max_wait=1.0)

# The LLM's answer: a short JSON object.
LLM_MAX_TOKENS = 256
# Strings of the LLM's answer kept in the verdict's details.
DETAIL_STRING_CHARS = 300
DETAIL_ITEMS = 20

LLM_SYSTEM_PROMPT = """\
You check a claim against evidence sentences taken from a curated knowledge base.
Decide whether the numbered evidence sentences support the claim, contradict it, or do not settle it.

- "supported": only if the evidence states every part of the claim: its subject, what is asserted \
of it, its polarity and modality (must, should, may, must not, never), and its numbers and names. \
Related or partial evidence is not support.
- "contradicted": only if an evidence sentence explicitly conflicts with the claim: a different \
number or identifier for the same thing, a prohibition of what the claim asserts or allows, a \
swapped party or item.
- "unverified": in every other case, including when you are unsure.

Use only the evidence sentences, not your own knowledge.
Answer with only this JSON object and nothing else:
{"verdict": "supported" | "contradicted" | "unverified", "evidence": <the number of the sentence \
the verdict rests on, or null>, "confidence": <a number from 0 to 1>, "reason": "<one sentence>"}
"""


@dataclass(frozen=True)
class Premise:
    """One evidence sentence retrieval picked, and the knowledge entry it comes from."""

    entry_id: str
    sentence: str


@dataclass
class ModelVerdict:
    """A model judge's answer.

    ``premise_index`` indexes the premises given (``None`` when unverified); ``score`` is the
    model's own probability for the verdict it gives, ``None`` when it gave none; ``details``
    is JSON-serialisable (the NLI label scores per premise, or the LLM's parsed answer and model).
    """

    judge: str
    verdict: str
    premise_index: int | None
    score: float | None
    reason: str
    details: dict[str, Any]
    latency_ms: float


class JudgeFailed(Exception):
    """The judge could not answer; the caller falls back to the local judge and says why.

    ``reason`` is one of :data:`FAILURE_REASONS`; ``message`` says what happened, for operators.
    """

    def __init__(self, reason: str, message: str) -> None:
        if reason not in FAILURE_REASONS:
            raise ValueError(f"unknown JudgeFailed reason {reason!r}")
        super().__init__(message)
        self.reason = reason
        self.message = message


def nli_configured() -> bool:
    """Whether an NLI endpoint is configured (``GROUNDING_NLI_URL``)."""
    return bool(str(settings.GROUNDING_NLI_URL).strip())


def model_judge(
    name: str,
    *,
    claim: str,
    premises: Sequence[Premise],
    deadline_seconds: float,
    veto_of: str | None = None,
) -> ModelVerdict:
    """The verdict of the model judge ``name`` (``"nli"`` or ``"llm"``) on ``claim`` given ``premises``;
    with ``veto_of`` (the local judge's decisive verdict; ``nli`` only), ``veto_of`` when the model
    lets it stand and ``unverified`` when it withholds it (the module docstring says when).

    Returns within ``deadline_seconds`` or raises :class:`JudgeFailed` (``timeout``); any other
    failure is a :class:`JudgeFailed` too. ``ValueError`` for a caller's mistake: an unknown
    judge, ``"local"`` (not a model judge), no premises, or a veto of something else.
    """
    if name not in MODEL_JUDGES:
        raise ValueError(f"model_judge() judges with {' or '.join(MODEL_JUDGES)}, not {name!r}")
    if not premises:
        raise ValueError("model_judge() needs at least one premise")
    if veto_of is not None and (name != "nli" or veto_of not in (Verdict.SUPPORTED, Verdict.CONTRADICTED)):
        raise ValueError(f"only the nli judge vetoes, and only supported or contradicted, not {veto_of!r}")
    started = time.monotonic()
    deadline = started + deadline_seconds
    if deadline_seconds <= 0:
        raise JudgeFailed("timeout", f"The {name} judge was given no time (deadline {deadline_seconds} s).")
    try:
        if name == "nli":
            verdict = _nli_judge(claim, premises, deadline=deadline, veto_of=veto_of)
        else:
            verdict = _llm_judge(claim, premises, deadline=deadline, started=started)
    except JudgeFailed as failure:
        failure.message = _redact(failure.message)
        failure.args = (failure.message,)
        logger.warning("grounding.judge_failed", judge=name, reason=failure.reason, error=failure.message)
        raise
    verdict.latency_ms = round((time.monotonic() - started) * 1000, 1)
    return verdict


# --- nli -----------------------------------------------------------------------------------------


def predict_url(url: str) -> str:
    """TEI's predict URL for ``GROUNDING_NLI_URL``: a base URL gets ``/predict`` appended."""
    url = url.strip().rstrip("/")
    return url if url.endswith(PREDICT_PATH) else url + PREDICT_PATH


def _nli_judge(
    claim: str, premises: Sequence[Premise], *, deadline: float, veto_of: str | None = None
) -> ModelVerdict:
    if not nli_configured():
        raise JudgeFailed(
            "not_configured",
            "No NLI model is configured: set GROUNDING_NLI_URL to a text-embeddings-inference endpoint.",
        )
    label_order = [str(label).strip().lower() for label in settings.GROUNDING_NLI_LABELS]
    min_score = float(settings.GROUNDING_NLI_MIN_SCORE)
    if not label_order or "" in label_order:
        raise JudgeFailed("not_configured", "GROUNDING_NLI_LABELS must name each label, comma-separated.")
    if not 0.0 < min_score <= 1.0:
        raise JudgeFailed("not_configured", f"GROUNDING_NLI_MIN_SCORE must be in (0, 1], not {min_score}.")

    url = predict_url(settings.GROUNDING_NLI_URL)
    body = {"inputs": [[premise.sentence, claim] for premise in premises], "raw_scores": False}
    key = str(settings.GROUNDING_NLI_API_KEY)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with build_client() as client:
        try:
            payload = call_with_retries(
                functools.partial(_nli_request, client, url, body, headers, deadline),
                policy=NLI_RETRY_POLICY,
                what="grounding nli predict",
                deadline=deadline,
                past_deadline=_nli_past_deadline,
            )
        except UpstreamError as error:
            raise JudgeFailed(str(error.details.get("judgeReason", "unavailable")), error.message) from error
    if veto_of is None:
        scores = _nli_scores(payload, expected=len(premises), label_order=label_order, needed=ENTAILMENT)
        return _nli_decide(premises, scores, min_score=min_score)
    scores = _nli_scores(payload, expected=len(premises), label_order=label_order, needed=CONTRADICTION)
    return _nli_veto(premises, scores, min_score=min_score, local=veto_of)


def _nli_request(
    client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str], deadline: float
) -> Any:
    """One POST to TEI's /predict; the decoded body of a 2xx, otherwise a classified UpstreamError
    (``details["judgeReason"]``: the JudgeFailed reason it becomes)."""
    timeout = timeout_until(deadline, read=math.inf)
    if timeout is None:
        raise _nli_error("timeout", "The NLI model call ran out of time before it could be sent.")
    started = time.perf_counter()
    status: int | None = None
    try:
        try:
            response = client.post(url, json=body, headers=headers, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise _nli_error(
                "timeout", f"The NLI model did not answer in time ({type(exc).__name__}).", retryable=True
            ) from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise _nli_error("not_configured", "GROUNDING_NLI_URL is not an http(s) URL.") from exc
        except httpx.TransportError as exc:
            raise _nli_error(
                "unavailable",
                f"Could not reach the NLI model ({type(exc).__name__}: {exc}).",
                retryable=True,
            ) from exc
        except UpstreamError as exc:  # the outbound rule refused the address
            raise _nli_error("unavailable", f"The NLI model cannot be reached: {exc.message}") from exc
        status = response.status_code
        return _nli_payload(response)
    finally:
        logger.info(
            "grounding.nli_request",
            status=status,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            pairs=len(body["inputs"]),
        )


def _nli_payload(response: httpx.Response) -> Any:
    status = response.status_code
    if status == 429 or status >= 500:
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        raise _nli_error(
            "unavailable",
            f"The NLI model is busy or failing (HTTP {status}: {_tei_error(response)}).",
            retryable=True,
            retry_after=retry_after,
        )
    if status >= 300:
        raise _nli_error(
            "bad_response", f"The NLI model refused the request (HTTP {status}: {_tei_error(response)})."
        )
    try:
        return response.json()
    except ValueError as exc:
        raise _nli_error(
            "bad_response", f"The NLI model answered HTTP {status} with a body that is not JSON."
        ) from exc


def _tei_error(response: httpx.Response) -> str:
    """TEI's own explanation (``{"error": …, "error_type": …}``), else the start of the body."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    error = payload.get("error") if isinstance(payload, dict) else None
    text = error if isinstance(error, str) and error else response.text
    return " ".join(text.split())[:200] or "no explanation"


def _nli_error(
    reason: str, message: str, *, retryable: bool = False, retry_after: float | None = None
) -> UpstreamError:
    return UpstreamError(
        message,
        details={"upstream": "grounding_nli", "judgeReason": reason},
        retryable=retryable,
        retry_after=retry_after,
    )


def _nli_past_deadline(error: UpstreamError, delay: float) -> UpstreamError:
    return _nli_error(
        "timeout",
        "The NLI model could not answer within the deadline "
        f"(a retry would wait {delay:.1f} s): {error.message}",
    )


def _nli_scores(
    payload: Any, *, expected: int, label_order: list[str], needed: str
) -> list[dict[str, float]]:
    """Per premise, its label probabilities by lower-case label name; JudgeFailed if malformed or
    without the ``needed`` label (entailment to decide, contradiction to veto)."""
    if (
        expected == 1
        and isinstance(payload, list)
        and payload
        and all(isinstance(item, dict) for item in payload)
    ):
        payload = [payload]  # one pair answered as a flat list
    if not isinstance(payload, list) or len(payload) != expected:
        got = f"{len(payload)} results" if isinstance(payload, list) else type(payload).__name__
        raise JudgeFailed("bad_response", f"The NLI model answered {got} for {expected} sentence pairs.")
    scores: list[dict[str, float]] = []
    for predictions in payload:
        if not isinstance(predictions, list) or not predictions:
            raise JudgeFailed(
                "bad_response", "The NLI model's answer for a pair is not a list of label scores."
            )
        pair: dict[str, float] = {}
        for prediction in predictions:
            label = prediction.get("label") if isinstance(prediction, dict) else None
            score = prediction.get("score") if isinstance(prediction, dict) else None
            if (
                not isinstance(label, str)
                or not isinstance(score, int | float)
                or isinstance(score, bool)
                or not 0.0 <= score <= 1.0
            ):
                raise JudgeFailed(
                    "bad_response",
                    "The NLI model's answer has an entry that is not {label, score in [0, 1]}: "
                    f"{json.dumps(prediction)[:100]}",
                )
            name = _label_name(label, label_order)
            if name in pair:
                raise JudgeFailed(
                    "bad_response", f"The NLI model's answer gives label {name!r} twice for a pair."
                )
            pair[name] = float(score)
        if needed not in pair:
            raise JudgeFailed(
                "bad_response",
                f"The NLI model's labels ({', '.join(sorted(pair))}) include no {needed}: "
                "is GROUNDING_NLI_LABELS the model's label order?",
            )
        scores.append(pair)
    return scores


def _label_name(label: str, label_order: list[str]) -> str:
    match = re.fullmatch(r"LABEL_(\d+)", label.strip(), flags=re.IGNORECASE)
    if match is None:
        return label.strip().lower()
    index = int(match.group(1))
    if index >= len(label_order):
        raise JudgeFailed(
            "bad_response",
            f"The NLI model answered {label}, but GROUNDING_NLI_LABELS names only {len(label_order)} labels.",
        )
    return label_order[index]


def _nli_best(scores: list[dict[str, float]], label: str, min_score: float) -> tuple[int, float] | None:
    """The premise whose top label is ``label`` with the highest probability ≥ min_score."""
    found = [
        (index, pair[label])
        for index, pair in enumerate(scores)
        if label in pair and pair[label] >= min_score and max(pair, key=pair.__getitem__) == label
    ]
    return max(found, key=lambda item: item[1]) if found else None


def _nli_details(
    premises: Sequence[Premise], scores: list[dict[str, float]], min_score: float
) -> dict[str, Any]:
    return {
        "min_score": min_score,
        "premises": [
            {
                "entry_id": premise.entry_id,
                "scores": {label: round(score, 6) for label, score in pair.items()},
            }
            for premise, pair in zip(premises, scores, strict=True)
        ],
    }


def _nli_decide(
    premises: Sequence[Premise], scores: list[dict[str, float]], *, min_score: float
) -> ModelVerdict:
    details = _nli_details(premises, scores, min_score)
    entailed, contradicted = (
        _nli_best(scores, ENTAILMENT, min_score),
        _nli_best(scores, CONTRADICTION, min_score),
    )
    if entailed is not None and (contradicted is None or entailed[1] > contradicted[1]):
        index, score = entailed
        verb = "entails"
        verdict = Verdict.SUPPORTED
    elif contradicted is not None:
        index, score = contradicted
        verb = "contradicts"
        verdict = Verdict.CONTRADICTED
    else:
        neither = max(
            sum(score for label, score in pair.items() if label not in (ENTAILMENT, CONTRADICTION))
            for pair in scores
        )
        return ModelVerdict(
            judge="nli",
            verdict=Verdict.UNVERIFIED.value,
            premise_index=None,
            score=round(neither, 6),
            reason=(
                f"The NLI model finds no evidence sentence that entails or contradicts the claim with "
                f"probability ≥ {min_score:g} (best entailment {_best_of(scores, ENTAILMENT)}, "
                f"best contradiction {_best_of(scores, CONTRADICTION)})."
            ),
            details=details,
            latency_ms=0.0,
        )
    other = contradicted if verdict == Verdict.SUPPORTED else entailed
    against = f"; the strongest opposite is {other[1]:.2f} on sentence {other[0] + 1}" if other else ""
    return ModelVerdict(
        judge="nli",
        verdict=verdict.value,
        premise_index=index,
        score=round(score, 6),
        reason=(
            f"The NLI model finds that sentence {index + 1} ({premises[index].entry_id}) {verb} the claim "
            f"with probability {score:.2f}{against}."
        ),
        details=details,
        latency_ms=0.0,
    )


def _best_of(scores: list[dict[str, float]], label: str) -> str:
    index, value = max(enumerate(pair.get(label, 0.0) for pair in scores), key=lambda item: item[1])
    return f"{value:.2f} on sentence {index + 1}"


def _nli_veto(
    premises: Sequence[Premise], scores: list[dict[str, float]], *, min_score: float, local: str
) -> ModelVerdict:
    """``local`` when the model lets the local judge's verdict stand, ``unverified`` when it withholds
    it (the module docstring says when); ``score`` is the model's probability for what it answers."""
    review = _veto_of_supported if local == Verdict.SUPPORTED else _veto_of_contradicted
    verdict, index, score, found = review(_NliFindings(premises, scores, min_score))
    outcome = "so it stands" if verdict == local else f"so the local judge's {local} verdict is withheld"
    return ModelVerdict(
        judge="nli",
        verdict=verdict.value,
        premise_index=index,
        score=round(score, 6),
        reason=f"The NLI model finds that {found}, {outcome}.",
        details={**_nli_details(premises, scores, min_score), "mode": "veto", "vetoOf": str(local)},
        latency_ms=0.0,
    )


# What a veto review answers: the verdict, the premise it rests on, the model's probability for it,
# and what the model found, in words.
_VetoAnswer = tuple[Verdict, int | None, float, str]


@dataclass(frozen=True)
class _NliFindings:
    premises: Sequence[Premise]
    scores: list[dict[str, float]]
    min_score: float

    def best(self, label: str) -> tuple[int, float] | None:
        return _nli_best(self.scores, label, self.min_score)

    def highest(self, label: str) -> float:
        return max(pair.get(label, 0.0) for pair in self.scores)

    def knows(self, label: str) -> bool:
        return all(label in pair for pair in self.scores)

    def sentence(self, found: tuple[int, float], verb: str) -> str:
        index, score = found
        entry = self.premises[index].entry_id
        return f"sentence {index + 1} ({entry}) {verb} the claim with probability {score:.2f}"

    def none(self, label: str, verb: str) -> str:
        return (
            f"no evidence sentence {verb} the claim with probability ≥ {self.min_score:g} "
            f"(best {label} {_best_of(self.scores, label)})"
        )


def _veto_of_supported(nli: _NliFindings) -> _VetoAnswer:
    """Withheld when a sentence contradicts the claim, or when the model has an entailment label and
    no sentence entails it (a contradiction-only classifier's silence on entailment is no veto)."""
    contradicted, entailed = nli.best(CONTRADICTION), nli.best(ENTAILMENT)
    if contradicted is not None:
        return Verdict.UNVERIFIED, contradicted[0], contradicted[1], nli.sentence(contradicted, "contradicts")
    if nli.knows(ENTAILMENT) and entailed is None:
        return Verdict.UNVERIFIED, None, 1.0 - nli.highest(ENTAILMENT), nli.none(ENTAILMENT, "entails")
    no_conflict = nli.none(CONTRADICTION, "contradicts")
    if entailed is not None:
        return (
            Verdict.SUPPORTED,
            entailed[0],
            entailed[1],
            f"{nli.sentence(entailed, 'entails')} and {no_conflict}",
        )
    return Verdict.SUPPORTED, None, 1.0 - nli.highest(CONTRADICTION), no_conflict


def _veto_of_contradicted(nli: _NliFindings) -> _VetoAnswer:
    """Withheld when no sentence contradicts the claim, or when one entails it."""
    contradicted, entailed = nli.best(CONTRADICTION), nli.best(ENTAILMENT)
    if contradicted is None:
        return (
            Verdict.UNVERIFIED,
            None,
            1.0 - nli.highest(CONTRADICTION),
            nli.none(CONTRADICTION, "contradicts"),
        )
    if entailed is not None:
        return Verdict.UNVERIFIED, entailed[0], entailed[1], nli.sentence(entailed, "entails")
    return Verdict.CONTRADICTED, contradicted[0], contradicted[1], nli.sentence(contradicted, "contradicts")


# --- llm -----------------------------------------------------------------------------------------


def llm_messages(claim: str, premises: Sequence[Premise]) -> list[dict[str, str]]:
    """The fixed prompt: the system message and the claim with its numbered evidence sentences."""
    sentences = "\n".join(
        f"{number}. [{premise.entry_id}] {' '.join(premise.sentence.split())}"
        for number, premise in enumerate(premises, start=1)
    )
    user = f"Claim: {' '.join(claim.split())}\n\nEvidence sentences:\n{sentences}"
    return [{"role": "system", "content": LLM_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _llm_judge(claim: str, premises: Sequence[Premise], *, deadline: float, started: float) -> ModelVerdict:
    if not llm_configured():
        raise JudgeFailed(
            "not_configured", "No LLM is configured: set LLM_URL to an OpenAI-compatible endpoint."
        )
    try:
        answer, reply = chat_json(
            messages=llm_messages(claim, premises),
            max_tokens=LLM_MAX_TOKENS,
            deadline_seconds=max(deadline - time.monotonic(), 0.001),
        )
    except LlmBadResponse as error:
        raise JudgeFailed("bad_response", error.message) from error
    except LlmUnavailable as error:
        detail = error.details.get("reason")
        if detail in ("not_configured", "configuration"):  # no LLM_URL, or not an http(s) URL
            reason = "not_configured"
        elif detail in ("timeout", "deadline") or time.monotonic() >= deadline:
            reason = "timeout"
        else:
            reason = "unavailable"
        raise JudgeFailed(reason, error.message) from error
    return _llm_verdict(answer, model=reply.model, premises=premises)


def _llm_verdict(answer: dict[str, Any], *, model: str, premises: Sequence[Premise]) -> ModelVerdict:
    details: dict[str, Any] = {"model": model, "answer": _truncated(answer)}
    raw_verdict = answer.get("verdict")
    label = raw_verdict.strip().lower() if isinstance(raw_verdict, str) else None
    confidence = answer.get("confidence")
    score = (
        float(confidence)
        if isinstance(confidence, int | float)
        and not isinstance(confidence, bool)
        and math.isfinite(confidence)
        and 0.0 <= confidence <= 1.0
        else None
    )
    own_reason = answer.get("reason")
    because = (
        f": {_clip(' '.join(own_reason.split()).rstrip('.'), 200)}"
        if isinstance(own_reason, str) and own_reason.strip(" .")
        else ""
    )

    def unverified(reason: str) -> ModelVerdict:
        return ModelVerdict("llm", Verdict.UNVERIFIED.value, None, None, reason, details, 0.0)

    if label is None or label not in Verdict.values:
        shown = _clip(json.dumps(raw_verdict), 60)
        return unverified(f"The LLM answered an unknown verdict {shown}, so the claim is left unverified.")
    if label == Verdict.UNVERIFIED:
        return ModelVerdict(
            "llm",
            label,
            None,
            score,
            f"The LLM found that the evidence does not settle the claim{because}.",
            details,
            0.0,
        )
    evidence = answer.get("evidence")
    if evidence is None:
        return unverified(
            f"The LLM answered {label} without naming the evidence sentence, so it is not trusted."
        )
    if not isinstance(evidence, int) or isinstance(evidence, bool):
        return unverified(
            f"The LLM answered {label} with evidence {_clip(json.dumps(evidence), 40)}, "
            "not a sentence number, so it is not trusted."
        )
    if not 1 <= evidence <= len(premises):
        return unverified(
            f"The LLM answered {label} on sentence {evidence}, but there are only {len(premises)}, "
            "so it is not trusted."
        )
    index = evidence - 1
    verb = "supports" if label == Verdict.SUPPORTED else "contradicts"
    return ModelVerdict(
        "llm",
        label,
        index,
        score,
        f"The LLM found that sentence {evidence} ({premises[index].entry_id}) {verb} the claim{because}.",
        details,
        0.0,
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _truncated(value: Any, depth: int = 0) -> Any:
    """``value`` (parsed JSON) with strings clipped and containers bounded, for the details."""
    if isinstance(value, str):
        return _clip(value, DETAIL_STRING_CHARS)
    if depth >= 4:
        return _clip(json.dumps(value), DETAIL_STRING_CHARS)
    if isinstance(value, dict):
        return {
            _clip(str(key), 60): _truncated(item, depth + 1)
            for key, item in list(value.items())[:DETAIL_ITEMS]
        }
    if isinstance(value, list):
        return [_truncated(item, depth + 1) for item in value[:DETAIL_ITEMS]]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _redact(message: str) -> str:
    """``message`` without the configured keys (an endpoint may echo the key it refused)."""
    for secret in (str(settings.GROUNDING_NLI_API_KEY), str(settings.LLM_API_KEY)):
        if secret:
            message = message.replace(secret, "[redacted]")
    return message
