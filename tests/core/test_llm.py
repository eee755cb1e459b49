"""The LLM client (apps/core/llm.py) against a local server replaying OpenAI chat-completions answers.

The replies are the files of tests/fixtures/llm/ (its README says where their shapes come from);
the server records every request it gets, so the tests check what was sent from the other side.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import override_settings

from apps.core import llm
from apps.core.errors import UpstreamError, error_response
from apps.core.llm import (
    LlmBadResponse,
    LlmReply,
    LlmUnavailable,
    chat_complete,
    chat_completions_url,
    chat_json,
    first_json_object,
    llm_configured,
)
from apps.core.metrics import render_metrics
from apps.core.retries import RetryPolicy
from tests.replay_server import ReplayServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llm"
MESSAGES = [
    {"role": "system", "content": "Answer in one sentence."},
    {"role": "user", "content": "Where was Marie Curie born?"},
]


class ReplayLlm(ReplayServer):
    """An OpenAI-compatible endpoint on 127.0.0.1: serves ``script``'s fixtures in order (then
    ``chat_completion_ok.json``), each after ``delay`` seconds, and records what it received."""

    def __init__(self) -> None:
        super().__init__(FIXTURES, default="chat_completion_ok.json")

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"


@pytest.fixture
def server() -> Iterator[ReplayLlm]:
    replay = ReplayLlm()
    replay.start()
    yield replay
    replay.stop()


@pytest.fixture
def configured(server: ReplayLlm) -> Iterator[ReplayLlm]:
    with override_settings(LLM_URL=server.base_url, LLM_MODEL="gpt-4.1", LLM_API_KEY=""):
        yield server


@pytest.fixture
def quick_retries(monkeypatch) -> None:
    """The production policy's retry count with millisecond backoffs (Retry-After still applies)."""
    monkeypatch.setattr(llm, "RETRY_POLICY", RetryPolicy(max_retries=2, backoff_base=0.001, max_wait=10.0))


def _sample(name: str, labels: dict[str, str]) -> float:
    """One sample's value in the /metrics text (0 when absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in render_metrics()[0].decode().splitlines():
        match = re.fullmatch(rf"{re.escape(name)}\{{(.*)\}} (\S+)", line)
        if match and ",".join(sorted(match.group(1).split(","))) == wanted:
            return float(match.group(2))
    return 0.0


def _raised(error_class: type[UpstreamError], **kwargs: Any) -> UpstreamError:
    with pytest.raises(error_class) as caught:
        chat_complete(messages=MESSAGES, **kwargs)
    return caught.value


# --- configuration ---------------------------------------------------------------------------


def test_no_llm_is_configured_by_default_and_a_call_says_what_to_set() -> None:
    assert django_settings.LLM_URL == ""
    assert django_settings.LLM_MODEL == ""
    assert django_settings.LLM_API_KEY == ""
    assert django_settings.LLM_TIMEOUT_SECONDS == 20.0
    assert django_settings.LLM_MAX_TOKENS == 512
    assert llm_configured() is False
    error = _raised(LlmUnavailable)
    assert error.message == "No LLM is configured: set LLM_URL to an OpenAI-compatible endpoint."
    assert error.details == {"upstream": "llm", "reason": "not_configured"}
    assert error.retryable is False
    with override_settings(LLM_URL="http://llm.example/v1"):
        assert llm_configured() is True


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("http://host:8000/v1", "http://host:8000/v1/chat/completions"),
        ("http://host:8000/v1/", "http://host:8000/v1/chat/completions"),
        ("http://host:8000/v1/chat/completions", "http://host:8000/v1/chat/completions"),
        ("https://api.example/openai/v1/chat/completions/", "https://api.example/openai/v1/chat/completions"),
        ("http://host:11434", "http://host:11434/chat/completions"),
    ],
)
def test_the_chat_completions_url_is_joined_to_a_base_or_kept(setting: str, expected: str) -> None:
    assert chat_completions_url(setting) == expected


@pytest.mark.parametrize("suffix", ["", "/", "/chat/completions", "/chat/completions/"])
def test_base_and_full_urls_reach_the_same_path(server: ReplayLlm, suffix: str) -> None:
    with override_settings(LLM_URL=server.base_url + suffix):
        chat_complete(messages=MESSAGES)
    assert [received.path for received in server.received] == ["/v1/chat/completions"]


# --- the request -----------------------------------------------------------------------------


def test_the_request_carries_model_messages_and_options_and_the_reply_is_parsed(configured) -> None:
    reply = chat_complete(messages=MESSAGES)
    assert reply == LlmReply(
        text="Marie Curie was born in Warsaw.",
        model="gpt-4.1-2025-04-14",
        latency_ms=reply.latency_ms,
        usage={"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29},
        finish_reason="stop",
    )
    assert 0 <= reply.latency_ms < 5000
    (received,) = configured.received
    assert received.body == {"model": "gpt-4.1", "messages": MESSAGES, "temperature": 0.0, "max_tokens": 512}
    assert received.headers["Content-Type"] == "application/json"
    assert received.headers["User-Agent"] == django_settings.CORTEX_USER_AGENT
    assert "Authorization" not in received.headers


def test_explicit_options_and_json_mode_are_sent(configured) -> None:
    chat_complete(messages=MESSAGES, temperature=0.7, max_tokens=64, response_format_json=True)
    (received,) = configured.received
    assert received.body == {
        "model": "gpt-4.1",
        "messages": MESSAGES,
        "temperature": 0.7,
        "max_tokens": 64,
        "response_format": {"type": "json_object"},
    }


def test_the_bearer_key_is_sent_only_when_set(configured) -> None:
    with override_settings(LLM_API_KEY="sk-test-123"):
        chat_complete(messages=MESSAGES)
    chat_complete(messages=MESSAGES)
    with_key, without_key = configured.received
    assert with_key.headers["Authorization"] == "Bearer sk-test-123"
    assert "Authorization" not in without_key.headers


def test_without_a_model_setting_no_model_is_sent_and_the_served_one_is_reported(configured) -> None:
    with override_settings(LLM_MODEL="", LLM_MAX_TOKENS=100):
        reply = chat_complete(messages=MESSAGES)
    (received,) = configured.received
    assert received.body == {"messages": MESSAGES, "temperature": 0.0, "max_tokens": 100}
    assert reply.model == "gpt-4.1-2025-04-14"


def test_an_empty_conversation_is_a_programming_error(configured) -> None:
    with pytest.raises(ValueError, match="at least one message"):
        chat_complete(messages=[])
    assert configured.received == []


# --- retries ---------------------------------------------------------------------------------


def test_a_server_error_is_retried_then_the_reply_is_returned(configured, quick_retries) -> None:
    configured.script.extend(["error_500_server_error.json"])
    ok_before = _sample("cortex_llm_requests_total", {"outcome": "ok"})
    retryable_before = _sample("cortex_llm_requests_total", {"outcome": "retryable"})
    reply = chat_complete(messages=MESSAGES)
    assert reply.text == "Marie Curie was born in Warsaw."
    assert len(configured.received) == 2
    assert configured.received[0].body == configured.received[1].body
    assert _sample("cortex_llm_requests_total", {"outcome": "retryable"}) == retryable_before + 1
    assert _sample("cortex_llm_requests_total", {"outcome": "ok"}) == ok_before + 1


def test_a_429_is_retried_no_sooner_than_its_retry_after_within_the_deadline(configured) -> None:
    configured.script.extend(["error_429_rate_limited.json"])  # Retry-After: 1
    reply = chat_complete(messages=MESSAGES, deadline_seconds=5)
    assert reply.text == "Marie Curie was born in Warsaw."
    first, second = configured.received
    assert second.at - first.at >= 1.0
    assert reply.latency_ms >= 1000


def test_a_429_whose_retry_after_passes_the_deadline_is_not_waited_for(configured) -> None:
    configured.script.extend(["error_429_rate_limited.json"])  # Retry-After: 1
    started = time.monotonic()
    error = _raised(LlmUnavailable, deadline_seconds=0.5)
    assert time.monotonic() - started < 0.5
    assert len(configured.received) == 1
    assert error.message == (
        "The LLM could not answer within the deadline (a retry would wait 1.0 s): "
        "The LLM is busy or failing (HTTP 429); retry later."
    )
    assert error.retryable is True
    assert error.retry_after == 1.0
    assert error.details == {
        "upstream": "llm",
        "url": configured.base_url + "/chat/completions",
        "status": 429,
        "reason": "rate_limited",
        "retryAfter": 1.0,
    }
    assert error.headers() == {"Retry-After": "1"}


def test_exhausted_retries_raise_llm_unavailable(configured, quick_retries) -> None:
    configured.script.extend(["error_500_server_error.json"] * 3)
    error = _raised(LlmUnavailable)
    assert len(configured.received) == 3  # the first try and two retries
    assert error.message == "The LLM is busy or failing (HTTP 500); retry later."
    assert error.retryable is True
    assert error.details == {
        "upstream": "llm",
        "url": configured.base_url + "/chat/completions",
        "status": 500,
        "reason": "server_error",
    }


def test_timeouts_are_retried_then_reported_unavailable(configured, quick_retries) -> None:
    configured.delay = 0.5
    with override_settings(LLM_TIMEOUT_SECONDS=0.1):
        error = _raised(LlmUnavailable)
    assert len(configured.received) == 3
    assert error.message == "The LLM did not answer in time (ReadTimeout)."
    assert error.details["reason"] == "timeout"
    assert error.retryable is True


def test_the_deadline_shortens_the_request_timeout(configured, quick_retries) -> None:
    configured.delay = 2.0
    started = time.monotonic()
    error = _raised(LlmUnavailable, deadline_seconds=0.3)  # LLM_TIMEOUT_SECONDS stays 20
    assert time.monotonic() - started < 1.0
    assert error.details["reason"] in {"timeout", "deadline"}


def test_connection_errors_are_retried_then_reported_unavailable(quick_retries) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with override_settings(LLM_URL=f"http://127.0.0.1:{port}/v1"):
        error = _raised(LlmUnavailable)
    assert error.message.startswith("Could not reach the LLM (ConnectError: ")
    assert error.details["reason"] == "connection"
    assert error.retryable is True


def test_the_outbound_rule_applies_to_the_llm_url(configured, settings) -> None:
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = []
    error = _raised(LlmUnavailable)
    assert configured.received == []
    assert error.retryable is False
    assert error.details["reason"] == "outbound_refused"
    assert error.details["address"] == "127.0.0.1"
    assert error.message.startswith("The LLM cannot be reached: Outbound request to '127.0.0.1' refused")


# --- terminal answers ------------------------------------------------------------------------


def test_a_401_is_terminal_and_not_retried(configured, quick_retries) -> None:
    configured.script.extend(["error_401_invalid_api_key.json"])
    terminal_before = _sample("cortex_llm_requests_total", {"outcome": "terminal"})
    error = _raised(LlmBadResponse)
    assert len(configured.received) == 1
    assert error.message == (
        "The LLM refused the request (HTTP 401: Incorrect API key provided: sk-wrong. "
        "You can find your API key at https://platform.openai.com/account/api-keys.)."
    )
    assert error.retryable is False
    assert error.details["status"] == 401
    assert error.details["reason"] == "refused"
    assert _sample("cortex_llm_requests_total", {"outcome": "terminal"}) == terminal_before + 1


@pytest.mark.parametrize(
    ("fixture", "message"),
    [
        ("not_json_200.json", "The LLM answered HTTP 200 with a body that is not JSON."),
        ("chat_completion_no_choices.json", "The LLM's answer has no choices[0].message.content."),
    ],
)
def test_unusable_answers_are_bad_responses(configured, quick_retries, fixture: str, message: str) -> None:
    configured.script.extend([fixture])
    error = _raised(LlmBadResponse)
    assert len(configured.received) == 1
    assert error.message == message
    assert error.details["reason"] == "malformed"
    assert error.retryable is False


def test_the_errors_map_to_502_and_503_in_the_one_error_shape(configured, quick_retries) -> None:
    configured.script.extend(["error_401_invalid_api_key.json", "error_429_rate_limited.json"])
    bad = _raised(LlmBadResponse)
    unavailable = _raised(LlmUnavailable, deadline_seconds=0.5)

    response = error_response(bad)
    assert response.status_code == 502
    assert json.loads(response.content)["error"]["code"] == "upstream_error"
    assert "url" not in json.loads(response.content)["error"]["details"]  # locations only for admins

    response = error_response(unavailable)
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert json.loads(response.content)["error"]["code"] == "upstream_error"


# --- chat_json -------------------------------------------------------------------------------


def test_chat_json_takes_the_object_out_of_a_fenced_reply(configured) -> None:
    configured.script.extend(["chat_completion_json_fenced.json"])
    data, reply = chat_json(messages=MESSAGES, max_tokens=128)
    assert data == {"verdict": "supported", "confidence": 0.9, "evidence": ["Q7186 P19 Q270"]}
    assert reply.model == "qwen2.5-7b-instruct"
    assert reply.usage == {"prompt_tokens": 64, "completion_tokens": 31, "total_tokens": 95}
    (received,) = configured.received
    assert received.body["response_format"] == {"type": "json_object"}
    assert received.body["max_tokens"] == 128


def test_chat_json_without_an_object_in_the_reply_is_a_bad_response(configured) -> None:
    configured.script.extend(["chat_completion_no_json.json"])
    with pytest.raises(LlmBadResponse) as caught:
        chat_json(messages=MESSAGES)
    assert caught.value.message == "The LLM's reply contains no JSON object."
    assert caught.value.details == {
        "upstream": "llm",
        "reason": "malformed",
        "model": "qwen2.5-7b-instruct",
        "finishReason": "stop",
        "body": "I cannot judge this claim {without more context}.",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  {"a": {"b": [1, 2]}} trailing', {"a": {"b": [1, 2]}}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Think {first}. ```json\n{"a": 2}\n```', {"a": 2}),
        ('Sure: {"a": "x}"} and {"b": 1}', {"a": "x}"}),
        ('[1, 2] then {"c": true}', {"c": True}),
        ("no object here", None),
        ('{"cut": "at max_tok', None),
        ("[1, 2]", None),
    ],
)
def test_first_json_object(text: str, expected: dict[str, Any] | None) -> None:
    assert first_json_object(text) == expected
