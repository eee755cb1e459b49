"""The Wikidata vector database client (``wd-vectordb.wmcloud.org``): hybrid item and property search.

``GET {WIKIDATA_VECTOR_URL}/item/query/`` and ``/property/query/`` (external-apis.md §4) with
``query``, ``lang``, the **uppercase** ``K`` (1–:data:`MAX_K`; the server refuses larger values
with 422 ``K must be less than 50``), ``instanceof`` (comma-separated QIDs, a P31 filter),
``rerank`` (sent only when true) and, for properties, ``exclude_external_ids``. The answer is
a JSON array ordered by ``rrf_score`` (or ``reranker_score`` with ``rerank``); the order is
kept as the server gives it (``similarity_score`` is *not* monotonic, ties are common), and
each hit is normalised into a :class:`VectorHit` (``QID``/``PID`` → ``id``). The service sends
no labels or descriptions today; if a future answer carries ``label``/``description`` they
are kept.

User-Agent: the service refuses (HTTP 400 ``A more descriptive User-Agent is required``) a UA
that is empty, shorter than 10 characters or has no space. The project's factory sends
``CORTEX_USER_AGENT`` (default ``CortexWeb/0.1 (https://github.com/brainwav/cortexweb;
operators@brainwav.dev) httpx``: 80 characters, has spaces, names the tool and a contact), which
passes; :func:`user_agent_problem` checks the configured one before any request is sent, so a
bad ``CORTEX_USER_AGENT`` fails fast with a message instead of costing a request.

One HTTP request per call of :meth:`VectorDbClient.request` (the seam), made inside ``gate()``
so the shared limiter can wrap every single request. Failures become
:class:`~apps.core.errors.UpstreamError`:

* retryable — HTTP 429 (``retry_after`` from ``Retry-After``, seconds or HTTP date), 5xx
  (``{"detail": "Internal Server Error"}``), timeouts, connection errors;
* terminal — 422 with FastAPI's ``{"detail": "..."}`` or ``{"detail": [{"loc", "msg", ...}]}``
  (the detail becomes the message), 400 (User-Agent refused: a message naming
  ``CORTEX_USER_AGENT``), any other status, a body that is not JSON or not an array of hits.

Retrying (after ``retry_after``) belongs to the caller, as for the other clients.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

import httpx
from django.conf import settings

from apps.core.errors import UpstreamError, ValidationFailed
from apps.core.http import build_client, parse_retry_after, timeout_before
from apps.core.logging import get_logger
from apps.wikidata.statements import ITEM_ID_RE, entity_id_pattern

DEFAULT_VECTOR_URL = "https://wd-vectordb.wmcloud.org"
UPSTREAM = "wikidata-vectordb"
LIMITER_NAME = "wikidata_vectordb"
NAME = "the Wikidata vector database"  # in messages

# K: "default and max 50" — external-apis.md §4 (``K: int = Query(50, ge=1)`` and a 422 above it).
MAX_K = 50
DEFAULT_K = 10
MAX_QUERY_LENGTH = 1000
MAX_INSTANCEOF = 50
# Budget for the shared limiter: the service's README allows 30 requests/minute per User-Agent
# (external-apis.md §4; the code says 5/minute per worker), so one request every 2 s across all
# processes, with a small burst for the item + property searches of one question.
DEFAULT_INTERVAL_SECONDS = 2.0
DEFAULT_BURST = 3
# The service's rule (wikidatasearch/dependencies.py: require_descriptive_user_agent).
MIN_USER_AGENT_LENGTH = 10
USER_AGENT_REFUSED = "A more descriptive User-Agent is required"

_QID_RE = ITEM_ID_RE
_HIT_ID_RE = entity_id_pattern("QP", sub_entities=False)
_LANG_RE = re.compile(r"^(?:all|[a-z]{2,3}(?:-[a-z0-9]{1,8})*)$")

Kind = Literal["item", "property"]
Gate = Callable[[], AbstractContextManager[object]]

logger = get_logger(__name__)


# ---------------------------------------------------------------------------------------------- settings


def vector_url() -> str:
    """``WIKIDATA_VECTOR_URL``, the service root (no path); the one place that reads it."""
    return str(getattr(settings, "WIKIDATA_VECTOR_URL", DEFAULT_VECTOR_URL)).rstrip("/")


def vector_timeout() -> float | None:
    """``WIKIDATA_VECTOR_TIMEOUT_SECONDS`` (read timeout) or ``None`` for the project default."""
    value = getattr(settings, "WIKIDATA_VECTOR_TIMEOUT_SECONDS", None)
    return float(value) if value is not None else None


def vector_budget() -> tuple[float, int]:
    """``(interval seconds, burst)`` for ``RateLimiter(LIMITER_NAME, interval=..., burst=...)``, from
    ``WIKIDATA_VECTOR_INTERVAL_SECONDS`` and ``WIKIDATA_VECTOR_BURST``."""
    interval = float(getattr(settings, "WIKIDATA_VECTOR_INTERVAL_SECONDS", DEFAULT_INTERVAL_SECONDS))
    burst = int(getattr(settings, "WIKIDATA_VECTOR_BURST", DEFAULT_BURST))
    return interval, burst


def user_agent_problem(user_agent: str | None) -> str | None:
    """Why the vector database would refuse this User-Agent, or ``None`` if it passes its rule."""
    ua = (user_agent or "").strip()
    if not ua:
        return "it is empty"
    if len(ua) < MIN_USER_AGENT_LENGTH:
        return f"it is shorter than {MIN_USER_AGENT_LENGTH} characters"
    if " " not in ua:
        return "it contains no space (use 'Tool/1.0 (url; contact)')"
    return None


# ------------------------------------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One search hit, in the server's order (``rank`` is 1-based)."""

    id: str
    kind: Kind
    rank: int
    similarity_score: float
    rrf_score: float | None = None
    reranker_score: float | None = None
    source: str | None = None
    label: str | None = None
    description: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """``{id, kind, rank, similarity_score, rrf_score?, reranker_score?, source?, label?, description?}``
        — absent values are omitted, as the service omits its ``null`` fields."""
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "rank": self.rank,
            "similarity_score": self.similarity_score,
        }
        for name in ("rrf_score", "reranker_score", "source", "label", "description"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def _malformed(message: str, context: Mapping[str, Any], body: str = "") -> UpstreamError:
    return UpstreamError(
        f"the Wikidata vector database answered malformed data: {message}",
        details={**context, "reason": "malformed", **({"body": body[:500]} if body else {})},
    )


def _score(raw: Mapping[str, Any], name: str, *, required: bool, context: Mapping[str, Any]) -> float | None:
    value = raw.get(name)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _malformed(f"{name} is {value!r:.60}, not a number", context)
    return float(value)


def _text(raw: Mapping[str, Any], name: str) -> str | None:
    value = raw.get(name)
    return value if isinstance(value, str) and value else None


def parse_hits(body: Any, *, kind: Kind, context: Mapping[str, Any] | None = None) -> list[VectorHit]:
    """The hits of a decoded ``/item/query/`` or ``/property/query/`` body (a JSON array)."""
    context = dict(context or {"upstream": UPSTREAM})
    if not isinstance(body, list):
        raise _malformed(f"expected a JSON array of hits, got {type(body).__name__}", context)
    hits: list[VectorHit] = []
    for position, raw in enumerate(body, start=1):
        if not isinstance(raw, Mapping):
            raise _malformed(f"hit {position} is not an object", context)
        raw_id = raw.get("QID", raw.get("PID", raw.get("id")))
        entity_id = raw_id.strip().upper() if isinstance(raw_id, str) else ""
        if not _HIT_ID_RE.match(entity_id):
            raise _malformed(f"hit {position} has no QID/PID ({raw_id!r:.60})", context)
        hits.append(
            VectorHit(
                id=entity_id,
                kind=kind,
                rank=position,
                similarity_score=_score(raw, "similarity_score", required=True, context=context) or 0.0,
                rrf_score=_score(raw, "rrf_score", required=False, context=context),
                reranker_score=_score(raw, "reranker_score", required=False, context=context),
                source=_text(raw, "source"),
                label=_text(raw, "label"),
                description=_text(raw, "description"),
            )
        )
    return hits


def _detail_message(body: Any) -> str | None:
    """FastAPI's ``detail``: a string, or a list of ``{"loc", "msg"}`` validation errors."""
    if not isinstance(body, Mapping):
        return None
    detail = body.get("detail", body.get("error"))
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if isinstance(item, Mapping):
                location = ".".join(str(part) for part in item.get("loc", ()) or ())
                message = str(item.get("msg", "invalid value"))
                parts.append(f"{location}: {message}" if location else message)
            else:
                parts.append(str(item))
        return "; ".join(parts) or None
    return None


def hits_from_response(response: httpx.Response, *, kind: Kind) -> list[VectorHit]:
    """The parsed hits of a 200 answer; otherwise the classified :class:`UpstreamError`."""
    status = response.status_code
    context = {"upstream": UPSTREAM, "status": status, "url": str(response.request.url)}
    try:
        body: Any = json.loads(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        body = None
        decoded = False
    else:
        decoded = True
    detail = _detail_message(body)
    if status == 429 or status >= 500:
        wait = parse_retry_after(response.headers.get("Retry-After"))
        reason = f": {detail}" if detail else ""
        raise UpstreamError(
            f"the Wikidata vector database is busy or failing (HTTP {status}{reason}); retry later",
            details={**context, **({"retryAfter": wait} if wait is not None else {})},
            retryable=True,
            retry_after=wait,
        )
    if status == 200:
        if not decoded:
            raise _malformed("the body is not JSON", context, response.text)
        return parse_hits(body, kind=kind, context=context)
    if status == 400 and detail and "user-agent" in detail.lower():
        raise UpstreamError(
            f"the Wikidata vector database refused our User-Agent ({detail}); set CORTEX_USER_AGENT to "
            "'Tool/version (url; contact)' — at least 10 characters with a space",
            details={**context, "reason": "user_agent", "detail": detail},
        )
    if status == 422:
        raise UpstreamError(
            f"the Wikidata vector database refused the request: {detail or response.text[:200]}",
            details={**context, "reason": "validation", "detail": detail or response.text[:500]},
        )
    if 300 <= status < 400:
        location = response.headers.get("Location", "")
        raise UpstreamError(
            f"the Wikidata vector database redirected (HTTP {status}) to {location!r}; "
            "set WIKIDATA_VECTOR_URL to the final address",
            details={**context, "location": location},
        )
    raise UpstreamError(
        f"the Wikidata vector database answered HTTP {status}" + (f": {detail}" if detail else ""),
        details={**context, **({"detail": detail} if detail else {"body": response.text[:500]})},
    )


# ------------------------------------------------------------------------------------------------ client


def _query_text(query: str) -> str:
    text = query.strip() if isinstance(query, str) else ""
    if not text:
        raise ValidationFailed("the search query is empty", details={"field": "query"})
    if len(text) > MAX_QUERY_LENGTH:
        raise ValidationFailed(
            f"the search query is longer than {MAX_QUERY_LENGTH} characters", details={"field": "query"}
        )
    return text


def _k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValidationFailed(f"k must be an integer from 1 to {MAX_K}, not {k!r}", details={"field": "k"})
    return k


def _lang(lang: str) -> str:
    value = str(lang or "").strip().lower()
    if not _LANG_RE.match(value):
        raise ValidationFailed(
            f"{lang!r} is not a language code (e.g. en, de, ar) or 'all'", details={"field": "lang"}
        )
    return value


def _instanceof(instanceof: str | Iterable[str] | None) -> str | None:
    if instanceof is None:
        return None
    raw = instanceof.split(",") if isinstance(instanceof, str) else list(instanceof)
    qids: dict[str, None] = {}
    for item in raw:
        qid = str(item).strip().upper()
        if not _QID_RE.match(qid):
            raise ValidationFailed(
                f"instanceof takes item ids (Q5, Q634), not {item!r}",
                details={"field": "instanceof", "value": str(item)},
            )
        qids.setdefault(qid, None)
    if not qids:
        return None
    if len(qids) > MAX_INSTANCEOF:
        raise ValidationFailed(
            f"instanceof takes at most {MAX_INSTANCEOF} item ids", details={"field": "instanceof"}
        )
    return ",".join(qids)


def search_params(
    query: str,
    *,
    lang: str = "en",
    k: int = DEFAULT_K,
    instanceof: str | Iterable[str] | None = None,
    rerank: bool = False,
    exclude_external_ids: bool | None = None,
) -> list[tuple[str, str]]:
    """The validated query parameters, in the service's spelling (uppercase ``K``)."""
    params = [("query", _query_text(query)), ("lang", _lang(lang)), ("K", str(_k(k)))]
    filter_ids = _instanceof(instanceof)
    if filter_ids:
        params.append(("instanceof", filter_ids))
    if rerank:
        params.append(("rerank", "true"))
    if exclude_external_ids is not None:
        params.append(("exclude_external_ids", "true" if exclude_external_ids else "false"))
    return params


class VectorDbClient:
    """Synchronous client; cheap to create, holds no connection between requests."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        timeout: float | None = None,
        gate: Gate | None = None,
        deadline: float | None = None,
    ):
        self.base_url = (base_url or vector_url()).rstrip("/")
        self.timeout = timeout if timeout is not None else vector_timeout()
        self.gate: Gate = gate or contextlib.nullcontext
        self.deadline = deadline  # no request outlasts it (a run's deadline, time.monotonic())

    def search_items(
        self,
        query: str,
        *,
        lang: str = "en",
        k: int = DEFAULT_K,
        instanceof: str | Iterable[str] | None = None,
        rerank: bool = False,
    ) -> list[VectorHit]:
        """Items for a text (or a QID), best first as the service ranks them; at most ``k``."""
        params = search_params(query, lang=lang, k=k, instanceof=instanceof, rerank=rerank)
        return self.request("item", params)[:k]

    def search_properties(
        self,
        query: str,
        *,
        lang: str = "en",
        k: int = DEFAULT_K,
        instanceof: str | Iterable[str] | None = None,
        rerank: bool = False,
        exclude_external_ids: bool = False,
    ) -> list[VectorHit]:
        """Properties for a text (or a PID); ``exclude_external_ids`` drops datatype external-id."""
        params = search_params(
            query,
            lang=lang,
            k=k,
            instanceof=instanceof,
            rerank=rerank,
            exclude_external_ids=exclude_external_ids,
        )
        return self.request("property", params)[:k]

    def request(self, kind: Kind, params: list[tuple[str, str]]) -> list[VectorHit]:
        """Exactly one ``GET /{kind}/query/`` with these (validated, unencoded) parameters."""
        url = f"{self.base_url}/{kind}/query/"
        started = time.perf_counter()
        try:
            with self.gate(), build_client(timeout=self.timeout) as http:
                problem = user_agent_problem(http.headers.get("User-Agent"))
                if problem:
                    raise UpstreamError(
                        f"CORTEX_USER_AGENT would be refused by the Wikidata vector database: {problem}; "
                        "use 'Tool/version (url; contact)'",
                        details={"upstream": UPSTREAM, "reason": "user_agent", "url": url},
                    )
                timeout = timeout_before(self.deadline, read=self.timeout, upstream=UPSTREAM, name=NAME)
                # a tuple: covariant for the type checker
                response = http.get(url, params=tuple(params), timeout=timeout)
                # Judged inside the gate, so that it records an error answer (a 503, a 429) as the
                # failure it is, not as a request that went well (the health and alerts read those).
                logger.info(
                    "wikidata.vectordb.request",
                    kind=kind,
                    status=response.status_code,
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                    url=str(response.request.url),
                )
                return hits_from_response(response, kind=kind)
        except httpx.TimeoutException as exc:
            raise UpstreamError(
                f"the Wikidata vector database did not answer in time ({type(exc).__name__})",
                details={"upstream": UPSTREAM, "reason": "timeout", "url": url},
                retryable=True,
            ) from exc
        except httpx.UnsupportedProtocol as exc:
            raise UpstreamError(
                f"WIKIDATA_VECTOR_URL is not an http(s) URL: {self.base_url!r}",
                details={"upstream": UPSTREAM, "reason": "configuration", "url": url},
            ) from exc
        except httpx.TransportError as exc:
            raise UpstreamError(
                f"could not reach the Wikidata vector database ({type(exc).__name__}: {exc})",
                details={"upstream": UPSTREAM, "reason": "connection", "url": url},
                retryable=True,
            ) from exc
