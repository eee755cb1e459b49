"""The model judges (apps/grounding/model_judges.py) against local servers replaying TEI and LLM answers.

The NLI replies are the files of tests/fixtures/nli/, the LLM's the ``grounding_*.json`` files of
tests/fixtures/llm/ (their READMEs say where the shapes come from); the servers record every
request, so the tests also check what was sent.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings

from apps.core import llm
from apps.core.retries import RetryPolicy
from apps.grounding import model_judges, services
from apps.grounding.model_judges import (
    JUDGES,
    LLM_SYSTEM_PROMPT,
    JudgeFailed,
    ModelVerdict,
    Premise,
    model_judge,
    predict_url,
)
from apps.grounding.services import Outcome
from tests.grounding.test_verify import pack  # noqa: F401  (the small pack fixture)
from tests.replay_server import ReplayServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAIM = "Passwords should be hashed with MD5."
PREMISES = [
    Premise("SEC-022", "MD5 and SHA-1 must not be used for password storage."),
    Premise("SEC-021", "Passwords must be hashed with bcrypt, scrypt or Argon2."),
]
NLI_KEY = "tei-secret-123"
LLM_KEY = "sk-wrong"
PERF_001 = "Binary search on a sorted array takes O(log n) comparisons in the worst case."


@pytest.fixture
def tei() -> Iterator[ReplayServer]:
    server = ReplayServer(FIXTURES / "nli", default="predict_entailment.json")
    server.start()
    with override_settings(GROUNDING_NLI_URL=server.root_url, GROUNDING_NLI_API_KEY=""):
        yield server
    server.stop()


@pytest.fixture
def chat() -> Iterator[ReplayServer]:
    server = ReplayServer(FIXTURES / "llm", default="grounding_supported.json")
    server.start()
    with override_settings(LLM_URL=server.root_url + "/v1", LLM_MODEL="", LLM_API_KEY=""):
        yield server
    server.stop()


@pytest.fixture
def quick_retries(monkeypatch) -> None:
    """The production retry counts with millisecond backoffs."""
    monkeypatch.setattr(model_judges, "NLI_RETRY_POLICY", RetryPolicy(max_retries=1, backoff_base=0.001))
    monkeypatch.setattr(llm, "RETRY_POLICY", RetryPolicy(max_retries=2, backoff_base=0.001, max_wait=10.0))


def _judge(name: str, premises: list[Premise] = PREMISES, deadline: float = 5.0) -> ModelVerdict:
    return model_judge(name, claim=CLAIM, premises=premises, deadline_seconds=deadline)


def _failed(name: str, premises: list[Premise] = PREMISES, deadline: float = 5.0) -> JudgeFailed:
    with pytest.raises(JudgeFailed) as caught:
        _judge(name, premises, deadline)
    return caught.value


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- the interface -------------------------------------------------------------------------------


def test_the_judges_and_the_callers_mistakes() -> None:
    assert JUDGES == ("local", "nli", "llm")
    for name in ("local", "gpt", ""):
        with pytest.raises(ValueError, match="judges with nli or llm"):
            _judge(name)
    for name in ("nli", "llm"):
        with pytest.raises(ValueError, match="at least one premise"):
            _judge(name, premises=[])
    with pytest.raises(ValueError, match="unknown JudgeFailed reason"):
        JudgeFailed("slow", "x")


@pytest.mark.parametrize("name", ["nli", "llm"])
def test_no_model_is_configured_by_default(name: str) -> None:
    error = _failed(name)
    assert error.reason == "not_configured"
    assert ("GROUNDING_NLI_URL" if name == "nli" else "LLM_URL") in error.message


@pytest.mark.parametrize(("name", "setting"), [("nli", "GROUNDING_NLI_URL"), ("llm", "LLM_URL")])
def test_a_url_that_is_not_http_is_not_configured(name: str, setting: str) -> None:
    with override_settings(**{setting: "ftp://models.example/v1"}):
        error = _failed(name)
    assert error.reason == "not_configured"
    assert setting in error.message


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("http://tei:8080", "http://tei:8080/predict"),
        ("http://tei:8080/", "http://tei:8080/predict"),
        ("http://tei:8080/predict", "http://tei:8080/predict"),
        ("https://gw.example/nli/predict/", "https://gw.example/nli/predict"),
    ],
)
def test_the_predict_url_is_joined_to_a_base_or_kept(setting: str, expected: str) -> None:
    assert predict_url(setting) == expected


# --- nli: the request ----------------------------------------------------------------------------


def test_nli_sends_every_pair_premise_first_in_one_batch(tei: ReplayServer) -> None:
    _judge("nli")
    (received,) = tei.received
    assert received.path == "/predict"
    assert received.body == {
        "inputs": [[PREMISES[0].sentence, CLAIM], [PREMISES[1].sentence, CLAIM]],
        "raw_scores": False,
    }
    assert "Authorization" not in received.headers
    with override_settings(GROUNDING_NLI_API_KEY=NLI_KEY, GROUNDING_NLI_URL=tei.root_url + "/predict"):
        _judge("nli")
    assert tei.received[1].path == "/predict"
    assert tei.received[1].headers["Authorization"] == f"Bearer {NLI_KEY}"


# --- nli: the decision ---------------------------------------------------------------------------


def test_nli_clear_entailment_is_supported_on_that_sentence(tei: ReplayServer) -> None:
    verdict = _judge("nli")
    assert (verdict.judge, verdict.verdict, verdict.premise_index, verdict.score) == (
        "nli",
        "supported",
        1,
        0.9712,
    )
    assert verdict.reason.startswith("The NLI model finds that sentence 2 (SEC-021) entails the claim")
    assert verdict.details == {
        "min_score": 0.5,
        "premises": [
            {
                "entry_id": "SEC-022",
                "scores": {"neutral": 0.8841, "entailment": 0.0923, "contradiction": 0.0236},
            },
            {
                "entry_id": "SEC-021",
                "scores": {"entailment": 0.9712, "neutral": 0.0241, "contradiction": 0.0047},
            },
        ],
    }
    json.dumps(verdict.details)
    assert 0 < verdict.latency_ms < 5000


def test_nli_clear_contradiction_with_upper_case_labels(tei: ReplayServer) -> None:
    tei.script.append("predict_contradiction.json")
    verdict = _judge("nli")
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("contradicted", 0, 0.9634)
    assert "sentence 1 (SEC-022) contradicts the claim" in verdict.reason
    assert verdict.details["premises"][0]["scores"]["contradiction"] == 0.9634


def test_nli_all_neutral_is_unverified_with_the_neutral_probability(tei: ReplayServer) -> None:
    tei.script.append("predict_neutral.json")  # sentence 2: entailment on top, but only 0.448
    verdict = _judge("nli")
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("unverified", None, 0.912)
    assert verdict.reason == (
        "The NLI model finds no evidence sentence that entails or contradicts the claim "
        "with probability ≥ 0.5 (best entailment 0.45 on sentence 2, best contradiction 0.14 on sentence 2)."
    )
    with override_settings(GROUNDING_NLI_MIN_SCORE=0.4):
        tei.script.append("predict_neutral.json")
        verdict = _judge("nli")
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("supported", 1, 0.448)


def test_nli_below_the_min_score_is_unverified(tei: ReplayServer) -> None:
    with override_settings(GROUNDING_NLI_MIN_SCORE=0.98):
        verdict = _judge("nli")  # entailment 0.9712 < 0.98
    assert (verdict.verdict, verdict.premise_index) == ("unverified", None)
    assert verdict.details["min_score"] == 0.98
    assert "probability ≥ 0.98" in verdict.reason


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("predict_mixed.json", ("contradicted", 0, 0.921)),  # contradiction 0.92 > entailment 0.81
        ("predict_mixed_entailment_higher.json", ("supported", 1, 0.954)),  # entailment 0.95 > 0.83
    ],
)
def test_nli_entailment_beats_contradiction_only_when_higher(
    tei: ReplayServer, fixture: str, expected: tuple[str, int, float]
) -> None:
    tei.script.append(fixture)
    verdict = _judge("nli")
    assert (verdict.verdict, verdict.premise_index, verdict.score) == expected
    assert "the strongest opposite is" in verdict.reason


def test_nli_label_ids_are_read_through_the_label_order_setting(tei: ReplayServer) -> None:
    tei.script.append("predict_label_ids.json")
    verdict = _judge("nli")  # default order contradiction, entailment, neutral: LABEL_1 = entailment
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("supported", 0, 0.9475)
    assert verdict.details["premises"][1]["scores"] == {
        "neutral": 0.8803,
        "contradiction": 0.0652,
        "entailment": 0.0545,
    }

    tei.script.append("predict_label_ids.json")
    with override_settings(GROUNDING_NLI_LABELS=["Entailment", " neutral", "CONTRADICTION "]):
        verdict = _judge("nli")  # now LABEL_1 = neutral and LABEL_2 = contradiction
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("contradicted", 1, 0.8803)

    tei.script.append("predict_label_ids.json")
    with override_settings(GROUNDING_NLI_LABELS=["contradiction", "entailment"]):
        error = _failed("nli")
    assert error.reason == "bad_response"
    assert error.message == "The NLI model answered LABEL_2, but GROUNDING_NLI_LABELS names only 2 labels."


def test_nli_labels_without_entailment_are_a_bad_response(tei: ReplayServer) -> None:
    tei.script.append("predict_label_ids.json")
    with override_settings(GROUNDING_NLI_LABELS=["a", "b", "c"]):
        error = _failed("nli")
    assert error.reason == "bad_response"
    assert "include no entailment" in error.message


def test_nli_a_single_pair_answered_as_a_flat_list(tei: ReplayServer) -> None:
    tei.script.append("predict_single_flat.json")
    verdict = _judge("nli", premises=PREMISES[1:])
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("supported", 0, 0.9388)
    assert tei.received[0].body["inputs"] == [[PREMISES[1].sentence, CLAIM]]


def test_nli_an_answer_for_the_wrong_number_of_pairs_is_a_bad_response(tei: ReplayServer) -> None:
    error = _failed("nli", premises=[*PREMISES, Premise("SEC-030", "Keys rotate yearly.")])
    assert error.reason == "bad_response"
    assert error.message == "The NLI model answered 2 results for 3 sentence pairs."


@pytest.mark.parametrize(
    ("labels", "min_score"), [([], 0.5), (["entailment", ""], 0.5), (None, 0.0), (None, 1.5)]
)
def test_nli_unusable_settings_are_not_configured(
    tei: ReplayServer, labels: list[str] | None, min_score: float
) -> None:
    overrides = {"GROUNDING_NLI_MIN_SCORE": min_score}
    if labels is not None:
        overrides["GROUNDING_NLI_LABELS"] = labels
    with override_settings(**overrides):
        error = _failed("nli")
    assert error.reason == "not_configured"
    assert tei.received == []


# --- nli: failures -------------------------------------------------------------------------------


def test_nli_a_413_is_a_bad_response_and_not_retried(tei: ReplayServer, quick_retries) -> None:
    tei.script.append("error_413_batch_too_large.json")
    error = _failed("nli")
    assert error.reason == "bad_response"
    assert error.message == (
        "The NLI model refused the request (HTTP 413: batch size 40 > maximum allowed batch size 32)."
    )
    assert len(tei.received) == 1


def test_nli_a_500_is_retried_once_then_unavailable(tei: ReplayServer, quick_retries) -> None:
    tei.script.extend(["error_500_backend.json", "error_500_backend.json"])
    error = _failed("nli")
    assert error.reason == "unavailable"
    assert error.message == "The NLI model is busy or failing (HTTP 500: Backend error: CUDA out of memory)."
    assert len(tei.received) == 2


def test_nli_a_429_is_retried_and_the_second_answer_used(tei: ReplayServer, quick_retries) -> None:
    tei.script.append("error_429_overloaded.json")
    assert _judge("nli").verdict == "supported"
    assert len(tei.received) == 2


def test_nli_a_body_that_is_not_json_is_a_bad_response(tei: ReplayServer, quick_retries) -> None:
    tei.script.append("not_json_200.json")
    error = _failed("nli")
    assert (error.reason, error.message) == (
        "bad_response",
        "The NLI model answered HTTP 200 with a body that is not JSON.",
    )
    assert len(tei.received) == 1


def test_nli_an_unreachable_endpoint_is_unavailable(quick_retries) -> None:
    with override_settings(GROUNDING_NLI_URL=f"http://127.0.0.1:{_free_port()}"):
        error = _failed("nli")
    assert error.reason == "unavailable"
    assert error.message.startswith("Could not reach the NLI model (ConnectError")


def test_nli_the_outbound_rule_applies(tei: ReplayServer, settings) -> None:
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = []
    error = _failed("nli")
    assert error.reason == "unavailable"
    assert error.message.startswith(
        "The NLI model cannot be reached: Outbound request to '127.0.0.1' refused"
    )
    assert tei.received == []


def test_nli_a_slow_model_times_out_within_the_deadline(tei: ReplayServer) -> None:
    tei.delay = 2.0
    started = time.monotonic()
    error = _failed("nli", deadline=0.5)
    elapsed = time.monotonic() - started
    assert error.reason == "timeout"
    assert 0.45 <= elapsed < 0.5 + 0.25
    assert "in time" in error.message or "within the deadline" in error.message


def test_nli_no_key_in_failure_messages(tei: ReplayServer) -> None:
    tei.script.append("error_401_unauthorized.json")  # the body echoes the bearer token
    with override_settings(GROUNDING_NLI_API_KEY=NLI_KEY):
        error = _failed("nli")
    assert error.reason == "bad_response"
    assert (
        error.message
        == "The NLI model refused the request (HTTP 401: Unauthorized: bad bearer token [redacted])."
    )
    assert NLI_KEY not in str(error)
    assert tei.received[0].headers["Authorization"] == f"Bearer {NLI_KEY}"


# --- llm: the request ----------------------------------------------------------------------------


def test_llm_sends_the_fixed_prompt_with_the_claim_and_numbered_sentences(chat: ReplayServer) -> None:
    _judge("llm")
    (received,) = chat.received
    assert received.path == "/v1/chat/completions"
    system, user = received.body["messages"]
    assert system == {"role": "system", "content": LLM_SYSTEM_PROMPT}
    assert user == {
        "role": "user",
        "content": (
            "Claim: Passwords should be hashed with MD5.\n\n"
            "Evidence sentences:\n"
            "1. [SEC-022] MD5 and SHA-1 must not be used for password storage.\n"
            "2. [SEC-021] Passwords must be hashed with bcrypt, scrypt or Argon2."
        ),
    }
    assert received.body["response_format"] == {"type": "json_object"}
    assert received.body["temperature"] == 0.0
    for words in (
        '"verdict"',
        '"evidence"',
        '"confidence"',
        '"reason"',
        "polarity and modality",
        "numbers and names",
    ):
        assert words in LLM_SYSTEM_PROMPT


# --- llm: the answer -----------------------------------------------------------------------------


def test_llm_valid_supported(chat: ReplayServer) -> None:
    verdict = _judge("llm")
    assert (verdict.judge, verdict.verdict, verdict.premise_index, verdict.score) == (
        "llm",
        "supported",
        1,
        0.92,
    )
    assert verdict.reason == (
        "The LLM found that sentence 2 (SEC-021) supports the claim: "
        "Sentence 2 states that passwords must be hashed with bcrypt, scrypt or Argon2."
    )
    assert verdict.details == {
        "model": "qwen2.5-7b-instruct",
        "answer": {
            "verdict": "supported",
            "evidence": 2,
            "confidence": 0.92,
            "reason": "Sentence 2 states that passwords must be hashed with bcrypt, scrypt or Argon2.",
        },
    }
    assert 0 < verdict.latency_ms < 5000


def test_llm_valid_contradicted_whatever_the_case_and_spaces(chat: ReplayServer) -> None:
    chat.script.append("grounding_contradicted.json")
    verdict = _judge("llm")
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("contradicted", 0, 0.97)
    assert verdict.reason.startswith("The LLM found that sentence 1 (SEC-022) contradicts the claim: ")
    assert verdict.details["model"] == "gpt-4.1-2025-04-14"


def test_llm_unverified_keeps_its_confidence_and_rests_on_no_sentence(chat: ReplayServer) -> None:
    chat.script.append("grounding_unverified.json")
    verdict = _judge("llm")
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("unverified", None, 0.7)
    assert verdict.reason == (
        "The LLM found that the evidence does not settle the claim: "
        "Neither sentence mentions session timeouts."
    )


@pytest.mark.parametrize(
    ("fixture", "reason"),
    [
        (
            "grounding_unknown_label.json",
            'The LLM answered an unknown verdict "partially supported", so the claim is left unverified.',
        ),
        (
            "grounding_supported_no_evidence.json",
            "The LLM answered supported without naming the evidence sentence, so it is not trusted.",
        ),
        (
            "grounding_evidence_out_of_range.json",
            "The LLM answered contradicted on sentence 3, but there are only 2, so it is not trusted.",
        ),
        (
            "grounding_evidence_not_a_number.json",
            'The LLM answered supported with evidence "sentence 2", '
            "not a sentence number, so it is not trusted.",
        ),
    ],
)
def test_llm_answers_that_do_not_hold_up_become_unverified(
    chat: ReplayServer, fixture: str, reason: str
) -> None:
    chat.script.append(fixture)
    verdict = _judge("llm")
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("unverified", None, None)
    assert verdict.reason == reason
    assert verdict.details["answer"]["verdict"] in {"partially supported", "supported", "contradicted"}


def test_llm_fenced_json_is_read_and_a_confidence_that_is_not_a_number_dropped(chat: ReplayServer) -> None:
    chat.script.append("grounding_fenced.json")
    verdict = _judge("llm")
    assert (verdict.verdict, verdict.premise_index, verdict.score) == ("supported", 0, None)
    assert verdict.details["answer"]["confidence"] == "high"


@pytest.mark.parametrize("confidence", [1.3, -0.1, True, None, float("nan")])
def test_llm_confidence_outside_0_1_is_no_score(confidence: object) -> None:
    answer = {"verdict": "supported", "evidence": 1, "confidence": confidence}
    verdict = model_judges._llm_verdict(answer, model="m", premises=PREMISES)
    assert (verdict.verdict, verdict.score) == ("supported", None)
    json.dumps(verdict.details, allow_nan=False)


def test_llm_long_answers_are_truncated_in_the_details() -> None:
    answer = {"verdict": "unverified", "reason": "x" * 5000, "extra": list(range(100))}
    verdict = model_judges._llm_verdict(answer, model="m", premises=PREMISES)
    assert len(verdict.details["answer"]["reason"]) == model_judges.DETAIL_STRING_CHARS
    assert len(verdict.details["answer"]["extra"]) == model_judges.DETAIL_ITEMS
    assert len(verdict.reason) < 300


# --- llm: failures -------------------------------------------------------------------------------


def test_llm_a_slow_model_times_out_within_the_deadline(chat: ReplayServer) -> None:
    chat.delay = 2.0
    started = time.monotonic()
    error = _failed("llm", deadline=0.5)
    elapsed = time.monotonic() - started
    assert error.reason == "timeout"
    assert elapsed < 0.5 + 0.25


def test_llm_server_errors_are_unavailable(chat: ReplayServer, quick_retries) -> None:
    chat.script.extend(["error_500_server_error.json"] * 3)
    error = _failed("llm")
    assert error.reason == "unavailable"
    assert error.message == "The LLM is busy or failing (HTTP 500); retry later."


def test_llm_a_body_that_is_not_json_is_a_bad_response(chat: ReplayServer) -> None:
    chat.script.append("not_json_200.json")
    error = _failed("llm")
    assert (error.reason, error.message) == (
        "bad_response",
        "The LLM answered HTTP 200 with a body that is not JSON.",
    )


def test_llm_a_reply_without_json_is_a_bad_response(chat: ReplayServer) -> None:
    chat.script.append("chat_completion_no_json.json")
    assert _failed("llm").reason == "bad_response"


def test_llm_an_unreachable_endpoint_is_unavailable(quick_retries) -> None:
    with override_settings(LLM_URL=f"http://127.0.0.1:{_free_port()}/v1"):
        error = _failed("llm")
    assert error.reason == "unavailable"


def test_llm_no_key_in_failure_messages(chat: ReplayServer) -> None:
    chat.script.append("error_401_invalid_api_key.json")  # OpenAI's message echoes the key it refused
    with override_settings(LLM_API_KEY=LLM_KEY):
        error = _failed("llm")
    assert error.reason == "bad_response"
    assert LLM_KEY not in str(error)
    assert error.message.startswith(
        "The LLM refused the request (HTTP 401: Incorrect API key provided: [redacted]."
    )
    assert chat.received[0].headers["Authorization"] == f"Bearer {LLM_KEY}"


# --- nli in veto mode (GROUNDING_NLI_MODE=veto): it may only withhold a decisive local verdict ---------


def _veto(local: str, premises: list[Premise] = PREMISES) -> ModelVerdict:
    return model_judge("nli", claim=CLAIM, premises=premises, deadline_seconds=5.0, veto_of=local)


def test_veto_a_contradiction_only_classifier_withholds_supported_and_confirms_contradicted(
    tei: ReplayServer,
) -> None:
    tei.script.append("predict_contradiction_only.json")
    vetoed = _veto("supported")
    assert (vetoed.verdict, vetoed.premise_index, vetoed.score) == ("unverified", 0, 0.9318)
    assert vetoed.reason == (
        "The NLI model finds that sentence 1 (SEC-022) contradicts the claim with probability 0.93, "
        "so the local judge's supported verdict is withheld."
    )
    assert vetoed.details == {
        "min_score": 0.5,
        "premises": [
            {"entry_id": "SEC-022", "scores": {"contradiction": 0.9318, "not_contradiction": 0.0682}},
            {"entry_id": "SEC-021", "scores": {"not_contradiction": 0.9705, "contradiction": 0.0295}},
        ],
        "mode": "veto",
        "vetoOf": "supported",
    }
    tei.script.append("predict_contradiction_only.json")
    stands = _veto("contradicted")
    assert (stands.verdict, stands.premise_index, stands.score) == ("contradicted", 0, 0.9318)
    assert stands.reason == (
        "The NLI model finds that sentence 1 (SEC-022) contradicts the claim with probability 0.93, "
        "so it stands."
    )


def test_veto_a_contradiction_only_classifier_that_finds_none(tei: ReplayServer) -> None:
    tei.script.append("predict_contradiction_only_none.json")
    vetoed = _veto("contradicted")
    assert (vetoed.verdict, vetoed.premise_index, vetoed.score) == ("unverified", None, 0.8877)
    assert vetoed.reason == (
        "The NLI model finds that no evidence sentence contradicts the claim with probability ≥ 0.5 "
        "(best contradiction 0.11 on sentence 1), so the local judge's contradicted verdict is withheld."
    )
    # Its silence on entailment is no veto: it has no entailment label.
    tei.script.append("predict_contradiction_only_none.json")
    stands = _veto("supported")
    assert (stands.verdict, stands.premise_index, stands.score) == ("supported", None, 0.8877)
    assert stands.reason.endswith("(best contradiction 0.11 on sentence 1), so it stands.")


def test_veto_never_flips_a_verdict_with_a_three_way_model(tei: ReplayServer) -> None:
    # Sentence 2 entails the claim (0.97) and none contradicts it: a contradicted verdict is withheld,
    # never made supported; a supported one stands.
    vetoed = _veto("contradicted")
    assert (vetoed.verdict, vetoed.premise_index, vetoed.score) == ("unverified", None, 0.9764)
    assert vetoed.reason == (
        "The NLI model finds that no evidence sentence contradicts the claim with probability ≥ 0.5 "
        "(best contradiction 0.02 on sentence 1), so the local judge's contradicted verdict is withheld."
    )
    stands = _veto("supported")
    assert (stands.verdict, stands.premise_index, stands.score) == ("supported", 1, 0.9712)
    assert stands.reason == (
        "The NLI model finds that sentence 2 (SEC-021) entails the claim with probability 0.97 and no "
        "evidence sentence contradicts the claim with probability ≥ 0.5 (best contradiction 0.02 on "
        "sentence 1), so it stands."
    )
    # Sentence 1 contradicts (0.83) and sentence 2 entails (0.95): neither verdict stands.
    tei.script.extend(["predict_mixed_entailment_higher.json"] * 2)
    withheld = _veto("contradicted")
    assert (withheld.verdict, withheld.premise_index, withheld.score) == ("unverified", 1, 0.954)
    assert withheld.reason == (
        "The NLI model finds that sentence 2 (SEC-021) entails the claim with probability 0.95, "
        "so the local judge's contradicted verdict is withheld."
    )
    withheld = _veto("supported")
    assert (withheld.verdict, withheld.premise_index, withheld.score) == ("unverified", 0, 0.832)
    # Sentence 1 contradicts it (0.96): a supported verdict is withheld, never made contradicted.
    tei.script.append("predict_contradiction.json")
    assert _veto("supported").verdict == "unverified"
    # A model with an entailment label that finds no entailment withholds supported.
    tei.script.append("predict_neutral.json")
    unsure = _veto("supported")
    assert (unsure.verdict, unsure.premise_index, unsure.score) == ("unverified", None, 0.552)
    assert unsure.reason.startswith("The NLI model finds that no evidence sentence entails the claim")


def test_veto_needs_a_contradiction_label_and_only_the_nli_judge_vetoes(tei: ReplayServer) -> None:
    tei.script.append("predict_label_ids.json")
    labels = override_settings(GROUNDING_NLI_LABELS=["entailment", "neutral", "other"])
    with labels, pytest.raises(JudgeFailed) as caught:
        _veto("supported")
    assert caught.value.reason == "bad_response"
    assert caught.value.message == (
        "The NLI model's labels (entailment, neutral, other) include no contradiction: "
        "is GROUNDING_NLI_LABELS the model's label order?"
    )
    for name, local in (("llm", "supported"), ("nli", "unverified"), ("nli", "maybe")):
        with pytest.raises(ValueError, match="only the nli judge vetoes, and only supported or contradicted"):
            model_judge(name, claim=CLAIM, premises=PREMISES, deadline_seconds=5.0, veto_of=local)


@pytest.mark.parametrize(("mode", "ids"), [("decide", []), ("veto", []), ("vote", ["cortex.E054"])])
def test_a_bad_nli_mode_is_a_system_check_error(settings, mode: str, ids: list[str]) -> None:
    from apps.core.checks import _grounding_judge_messages

    settings.GROUNDING_NLI_MODE = mode
    messages = _grounding_judge_messages()
    assert [message.id for message in messages] == ids
    if ids:
        assert (messages[0].msg, messages[0].hint) == (
            "GROUNDING_NLI_MODE is 'vote'.",
            "Use one of decide, veto.",
        )


# --- veto mode on a verification (the small pack of test_verify) --------------------------------------

WRONG_BOUND = "Binary search on a sorted array takes O(n) comparisons in the worst case."


@pytest.fixture
def veto_tei(pack: None) -> Iterator[ReplayServer]:  # noqa: F811
    server = ReplayServer(FIXTURES / "nli", default="predict_contradiction_only_one_pair_none.json").start()
    with override_settings(
        GROUNDING_JUDGE="nli",
        GROUNDING_NLI_MODE="veto",
        GROUNDING_NLI_URL=server.root_url,
        GROUNDING_NLI_API_KEY="",
    ):
        yield server
    server.stop()


def _local(claim: str) -> Outcome:
    with override_settings(GROUNDING_JUDGE="local"):
        return services.claim_judge(claim=claim, domain=None, agents=services._agents())


@pytest.mark.django_db
def test_a_vetoed_verification_is_unverified_and_says_who_withheld_what(veto_tei: ReplayServer) -> None:
    local = _local(WRONG_BOUND)
    assert local.verdict == "contradicted"  # a wrong complexity class: the local judge decides

    verification = services.claim_verify(claim=WRONG_BOUND)

    assert (verification.verdict, verification.judge, verification.basis) == ("unverified", "nli", "nli:veto")
    assert verification.confidence == 0.9061  # the model's probability that there is no contradiction
    assert verification.correction == "" and verification.rests_on == local.rests_on
    assert verification.leaning == "contradicted"  # what it leans to, for a person to settle
    assert verification.judge_note == (
        f"The local judge said contradicted ({local.basis}); the nli judge withheld it "
        "(GROUNDING_NLI_MODE=veto)."
    )
    assert verification.confidence_note == (
        "The nli model's own probability that the contradicted verdict does not hold, not calibrated here: "
        "The NLI model finds that no evidence sentence contradicts the claim with probability ≥ 0.5 "
        "(best contradiction 0.09 on sentence 1), so the local judge's contradicted verdict is withheld."
    )
    assert verification.judge_details["vetoOf"] == "contradicted"
    assert veto_tei.received[0].body == {"inputs": [[PERF_001, WRONG_BOUND]], "raw_scores": False}


@pytest.mark.django_db
def test_a_verdict_the_model_does_not_veto_stands_as_the_local_judge_s(veto_tei: ReplayServer) -> None:
    veto_tei.default = "predict_contradiction_only_one_pair.json"
    local = _local(WRONG_BOUND)

    verification = services.claim_verify(claim=WRONG_BOUND)

    assert (verification.verdict, verification.judge, verification.basis) == (
        "contradicted",
        "local",
        local.basis,
    )
    assert verification.confidence == local.confidence and verification.correction == local.correction
    assert verification.judge_note == (
        "The nli judge (GROUNDING_NLI_MODE=veto) let the verdict stand: The NLI model finds that sentence 1 "
        "(PERF-001) contradicts the claim with probability 0.88, so it stands."
    )
    assert verification.judge_latency_ms is not None and verification.judge_latency_ms > 0


@pytest.mark.django_db
def test_veto_mode_never_turns_a_local_verdict_into_the_other_one(veto_tei: ReplayServer) -> None:
    veto_tei.default = "predict_single_flat.json"  # a three-way model: entailment 0.94
    assert services.claim_verify(claim=WRONG_BOUND).verdict == "unverified"  # not supported
    # A supported local verdict that the model finds contradicted becomes unverified, not contradicted.
    veto_tei.default = "predict_contradiction_one_pair.json"  # contradiction 0.96
    local = _local(WRONG_BOUND.replace("O(n)", "O(log n)"))
    local.verdict = "supported"  # as a decisive local verdict on this evidence would be
    vetoed = services._model_judged("nli", local)
    assert (vetoed.verdict, vetoed.judge, vetoed.basis, vetoed.confidence) == (
        "unverified",
        "nli",
        "nli:veto",
        0.9634,
    )
    assert (vetoed.leaning, vetoed.leaning_on) == ("supported", f"PERF-001: {PERF_001}")


@pytest.mark.django_db
def test_veto_mode_does_not_ask_the_model_about_an_abstention(veto_tei: ReplayServer) -> None:
    verification = services.claim_verify(
        claim="The ferry to the island leaves the harbour every day at noon."
    )
    assert (verification.verdict, verification.judge) == ("unverified", "local")
    assert verification.judge_note == (
        "The nli judge only reviews decisive verdicts (GROUNDING_NLI_MODE=veto); the local judge abstained."
    )
    assert veto_tei.received == []
