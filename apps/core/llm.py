"""The one LLM client: chat completions from an OpenAI-compatible endpoint (``LLM_URL``).

Anything that needs a language model (memory answers, the grounding judge) calls
:func:`chat_complete` or :func:`chat_json` here rather than building its own client. No LLM is
configured by default (``LLM_URL`` empty): callers ask :func:`llm_configured` first and do
without one, and a call made anyway is refused with :class:`LlmUnavailable`.

``LLM_URL`` is either the API's base URL (``http://host:8000/v1``, to which
``/chat/completions`` is appended) or the full ``…/chat/completions`` URL. ``LLM_MODEL`` is
sent as ``model`` when set (servers that serve one model accept none); ``LLM_API_KEY``, when
set, as ``Authorization: Bearer …``.

Requests go through the project's client factory (:mod:`apps.core.http`: timeouts, User-Agent,
correlation id, and the outbound rule of :mod:`apps.core.outbound`, so an LLM on a private
address needs ``CORTEX_OUTBOUND_ALLOW_NETWORKS``) and the one retry loop
(:mod:`apps.core.retries`). Failures are classified:

* :class:`LlmUnavailable` (503): the LLM could not answer now — connection errors, timeouts,
  429 and 5xx, after a couple of retries that honour ``Retry-After`` and never wait past the
  caller's deadline; also an LLM that is not configured or that the outbound rule refuses
  (those are not retryable).
* :class:`LlmBadResponse` (502): the LLM answered, but not usefully — another 4xx (a wrong key,
  model or request), a body that is not JSON, no ``choices[0].message.content``, or (from
  :func:`chat_json`) a reply with no JSON object in it. Retrying would not help.

Each request is logged (``llm.request``: status and duration, never the messages) and counted
in ``cortex_llm_requests_total{outcome}`` and ``cortex_llm_request_duration_seconds``.
"""

from __future__ import annotations

import functools
import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings
from prometheus_client import Counter, Histogram

from apps.core.errors import UpstreamError
from apps.core.http import build_client, parse_retry_after, timeout_until
from apps.core.logging import get_logger
from apps.core.retries import RetryPolicy, call_with_retries

logger = get_logger(__name__)

UPSTREAM = "llm"
CHAT_COMPLETIONS_PATH = "/chat/completions"

# A chat completion is slow and costly: a couple of quick retries, no long waits (a longer
# Retry-After is passed on to the caller in LlmUnavailable instead of being waited for).
RETRY_POLICY = RetryPolicy(max_retries=2, backoff_base=0.5, backoff_cap=4.0, max_wait=10.0)

llm_requests_total = Counter(
    "cortex_llm_requests_total",
    "Requests to the LLM endpoint by outcome (ok, retryable, terminal).",
    ["outcome"],
)
llm_request_duration_seconds = Histogram(
    "cortex_llm_request_duration_seconds",
    "Time of one request to the LLM endpoint.",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 60),
)


class LlmUnavailable(UpstreamError):
    """The LLM could not answer now (unreachable, timed out, 429, 5xx), or none is configured."""

    status_code = 503

    def headers(self) -> dict[str, str]:
        if self.retry_after is None:
            return {}
        return {"Retry-After": str(max(1, math.ceil(self.retry_after)))}


class LlmBadResponse(UpstreamError):
    """The LLM answered with something unusable (another 4xx, not JSON, no content). Terminal."""

    status_code = 502


@dataclass(frozen=True)
class LlmReply:
    """One chat completion: the assistant's text and what it cost.

    ``latency_ms`` is the whole call, retries and their waits included; ``usage`` holds the
    endpoint's integer token counts (``prompt_tokens``, ``completion_tokens``, ``total_tokens``),
    empty when it reports none; ``finish_reason`` is ``"stop"``, ``"length"`` (cut at
    ``max_tokens``) … or ``None`` when not reported.
    """

    text: str
    model: str
    latency_ms: int
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None


def llm_configured() -> bool:
    """Whether an LLM endpoint is configured (``LLM_URL``)."""
    return bool(str(settings.LLM_URL).strip())


def chat_completions_url(url: str) -> str:
    """The chat-completions URL for ``LLM_URL``: a base URL gets ``/chat/completions`` appended."""
    url = url.strip().rstrip("/")
    return url if url.endswith(CHAT_COMPLETIONS_PATH) else url + CHAT_COMPLETIONS_PATH


def chat_complete(
    *,
    messages: list[dict[str, Any]],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    response_format_json: bool = False,
    deadline_seconds: float | None = None,
) -> LlmReply:
    """One chat completion of ``messages`` (``[{"role": "system"|"user"|"assistant", "content": …}]``).

    ``max_tokens`` defaults to ``LLM_MAX_TOKENS``; ``response_format_json`` asks for a JSON
    object (``response_format: {"type": "json_object"}``; the prompt should say so too).
    ``deadline_seconds`` bounds the whole call, retries included: each request's timeout is
    the smaller of ``LLM_TIMEOUT_SECONDS`` and the time left, and a retry that would start
    after the deadline is not made. Raises :class:`LlmUnavailable` or :class:`LlmBadResponse`.
    """
    if not messages:
        raise ValueError("chat_complete() needs at least one message")
    if not llm_configured():
        raise LlmUnavailable(
            "No LLM is configured: set LLM_URL to an OpenAI-compatible endpoint.",
            details={"upstream": UPSTREAM, "reason": "not_configured"},
        )
    url = chat_completions_url(settings.LLM_URL)
    model = str(settings.LLM_MODEL).strip()
    body: dict[str, Any] = {
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens if max_tokens is not None else settings.LLM_MAX_TOKENS,
    }
    if model:
        body["model"] = model
    if response_format_json:
        body["response_format"] = {"type": "json_object"}
    headers = {"Authorization": f"Bearer {settings.LLM_API_KEY}"} if settings.LLM_API_KEY else {}

    started = time.monotonic()
    deadline = started + deadline_seconds if deadline_seconds is not None else None
    with build_client(timeout=float(settings.LLM_TIMEOUT_SECONDS)) as client:
        attempt = functools.partial(_request, client, url, body, headers, deadline)
        payload = call_with_retries(
            attempt,
            policy=RETRY_POLICY,
            what="llm chat completion",
            deadline=deadline,
            past_deadline=functools.partial(_past_deadline, url),
        )
    latency_ms = round((time.monotonic() - started) * 1000)
    return _reply(payload, url=url, model=model, latency_ms=latency_ms)


def chat_json(
    *,
    messages: list[dict[str, Any]],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    deadline_seconds: float | None = None,
) -> tuple[dict[str, Any], LlmReply]:
    """:func:`chat_complete` asking for JSON; the first JSON object of the reply, and the reply.

    Models wrap JSON in a ```` ```json ```` fence or in prose despite being asked not to, so
    the first object found is taken. Raises :class:`LlmBadResponse` when there is none.
    """
    reply = chat_complete(
        messages=messages,
        temperature=temperature,
        max_tokens=max_tokens,
        response_format_json=True,
        deadline_seconds=deadline_seconds,
    )
    data = first_json_object(reply.text)
    if data is None:
        cut = " (cut at max_tokens)" if reply.finish_reason == "length" else ""
        raise LlmBadResponse(
            f"The LLM's reply contains no JSON object{cut}.",
            details={
                "upstream": UPSTREAM,
                "reason": "malformed",
                "model": reply.model,
                "finishReason": reply.finish_reason,
                "body": reply.text[:500],
            },
        )
    return data, reply


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n(.*?)```", re.DOTALL)


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text``, fenced blocks (```` ```json ````) first; ``None`` if none."""
    decoder = json.JSONDecoder()
    for candidate in [*(match.group(1) for match in _FENCE.finditer(text)), text]:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                pass
            else:
                if isinstance(value, dict):
                    return value
            start = candidate.find("{", start + 1)
    return None


# --- One request -------------------------------------------------------------------------------


def _request(
    client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str], deadline: float | None
) -> dict[str, Any]:
    """Exactly one POST; the decoded body of a 2xx, otherwise the classified error."""
    timeout = timeout_until(deadline, read=float(settings.LLM_TIMEOUT_SECONDS))
    if timeout is None:
        raise LlmUnavailable(
            "The LLM call ran out of time before it could be sent.",
            details={"upstream": UPSTREAM, "reason": "deadline", "url": url},
        )
    started = time.perf_counter()
    outcome = "ok"
    status: int | None = None
    try:
        response = _post(client, url, body, headers, timeout)
        status = response.status_code
        return _payload(response, url=url)
    except UpstreamError as error:
        outcome = "retryable" if error.retryable else "terminal"
        raise
    finally:
        duration = time.perf_counter() - started
        llm_requests_total.labels(outcome=outcome).inc()
        llm_request_duration_seconds.observe(duration)
        logger.info(
            "llm.request",
            status=status,
            outcome=outcome,
            duration_ms=round(duration * 1000, 1),
            model=body.get("model", ""),
        )


def _post(
    client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str], timeout: httpx.Timeout
) -> httpx.Response:
    context = {"upstream": UPSTREAM, "url": url}
    try:
        return client.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.TimeoutException as exc:
        raise LlmUnavailable(
            f"The LLM did not answer in time ({type(exc).__name__}).",
            details={**context, "reason": "timeout"},
            retryable=True,
        ) from exc
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise LlmUnavailable(
            f"LLM_URL is not an http(s) URL: {url!r}.",
            details={**context, "reason": "configuration"},
        ) from exc
    except httpx.TransportError as exc:
        raise LlmUnavailable(
            f"Could not reach the LLM ({type(exc).__name__}: {exc}).",
            details={**context, "reason": "connection"},
            retryable=True,
        ) from exc
    except UpstreamError as exc:  # the outbound rule refused the address (OutboundRefused)
        raise LlmUnavailable(
            f"The LLM cannot be reached: {exc.message}",
            details={**context, **exc.details, "upstream": UPSTREAM},
        ) from exc


def _payload(response: httpx.Response, *, url: str) -> dict[str, Any]:
    status = response.status_code
    context: dict[str, Any] = {"upstream": UPSTREAM, "url": url, "status": status}
    if status == 429 or status >= 500:
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        raise LlmUnavailable(
            f"The LLM is busy or failing (HTTP {status}); retry later.",
            details={
                **context,
                "reason": "rate_limited" if status == 429 else "server_error",
                **({"retryAfter": retry_after} if retry_after is not None else {}),
            },
            retryable=True,
            retry_after=retry_after,
        )
    if status >= 300:
        raise LlmBadResponse(
            f"The LLM refused the request (HTTP {status}: {_error_message(response)}).",
            details={**context, "reason": "refused", "body": response.text[:500]},
        )
    try:
        payload = response.json()
    except ValueError as exc:
        raise LlmBadResponse(
            f"The LLM answered HTTP {status} with a body that is not JSON.",
            details={**context, "reason": "malformed", "body": response.text[:500]},
        ) from exc
    if not isinstance(payload, dict):
        raise LlmBadResponse(
            "The LLM answered with JSON that is not an object.",
            details={**context, "reason": "malformed", "body": response.text[:500]},
        )
    return payload


def _error_message(response: httpx.Response) -> str:
    """The endpoint's own explanation (OpenAI's ``{"error": {"message": …}}``), else the body's start."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    message = error.get("message") if isinstance(error, dict) else error
    text = message if isinstance(message, str) and message else response.text
    return " ".join(text.split())[:200] or "no explanation"


def _reply(payload: dict[str, Any], *, url: str, model: str, latency_ms: int) -> LlmReply:
    choices = payload.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str) or choice is None:
        raise LlmBadResponse(
            "The LLM's answer has no choices[0].message.content.",
            details={
                "upstream": UPSTREAM,
                "reason": "malformed",
                "url": url,
                "body": json.dumps(payload)[:500],
            },
        )
    usage = payload.get("usage")
    finish_reason = choice.get("finish_reason")
    return LlmReply(
        text=content,
        model=str(payload.get("model") or model),
        latency_ms=latency_ms,
        usage={
            key: value
            for key, value in (usage.items() if isinstance(usage, dict) else ())
            if isinstance(value, int) and not isinstance(value, bool)
        },
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
    )


def _past_deadline(url: str, error: UpstreamError, delay: float) -> LlmUnavailable:
    return LlmUnavailable(
        f"The LLM could not answer within the deadline (a retry would wait {delay:.1f} s): {error.message}",
        details={**error.details, "upstream": UPSTREAM, "url": url, "retryAfter": round(delay, 3)},
        retryable=True,
        retry_after=delay,
    )
