"""The Wikidata Action API client (``wbgetentities``, ``wbgetclaims``, ``wbsearchentities``).

One HTTP request per call of :meth:`ActionApiClient.request` (the seam), made inside
``gate()`` so the shared limiter can wrap every single request; :meth:`get_entities`
splits its ids into batches of :data:`MAX_IDS_PER_REQUEST` and calls it once per batch.

Every request sends ``format=json``, ``formatversion=2`` (booleans as ``true``, errors
with ``docref``) and ``maxlag`` (:data:`DEFAULT_MAXLAG`). The parsers also read
formatversion 1 bodies (``"missing": ""``, ``"*"``), because recordings and older
mirrors use it.

Failures become :class:`~apps.core.errors.UpstreamError`:

* retryable — the API's ``maxlag`` error (``retry_after`` from ``Retry-After``, else
  the ``lag`` in the error, else :data:`DEFAULT_MAXLAG`), HTTP 429 and 5xx
  (``Retry-After`` in seconds or as an HTTP date), timeouts, connection errors;
* terminal — any other API error (:class:`ActionApiError` with the API's ``code`` and
  ``info``, e.g. ``no-such-entity``), other non-200 statuses, a body that is not
  JSON or not Wikibase-shaped.

Missing entities and failed sitelink lookups are not errors: they are listed in
:class:`EntitiesResult`. Retrying (after ``retry_after``) belongs to the caller, as
for the arXiv client.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings

from apps.core.errors import UpstreamError, ValidationFailed
from apps.core.http import build_client, parse_retry_after, timeout_before
from apps.core.logging import get_logger
from apps.wikidata.statements import (
    ENTITY_ID_RE,
    Entity,
    Statement,
    WikibaseFormatError,
    is_missing,
    language_fallback_chain,
    normalize_entity_id,
    parse_claims,
    parse_entity,
)

DEFAULT_API_URL = "https://www.wikidata.org/w/api.php"
UPSTREAM = "wikidata-action-api"
LIMITER_NAME = "wikidata_action_api"
NAME = "the Wikidata Action API"  # in messages

# wbgetentities takes at most 50 ids (or titles) per call for ordinary users (500 for high-limit
# users) — external-apis.md §2.
MAX_IDS_PER_REQUEST = 50
# "maxlag=5 for batch/bot traffic" — external-apis.md §2: the servers refuse with a maxlag error
# while replication lag exceeds 5 s, and we wait the advertised lag before retrying.
DEFAULT_MAXLAG = 5
# Budget for the shared limiter. external-apis.md §2/§3 give the Action API no numeric quota; its
# rules are a descriptive User-Agent (Wikimedia User-Agent policy, §3), maxlag=5 for batch traffic
# (§2) and, per MediaWiki's API etiquette, requests made in series rather than in parallel. So one
# request at a time, spaced 0.2 s (≤ 5/s across every process), with a burst of 5 for the label
# batches of one question.
DEFAULT_INTERVAL_SECONDS = 0.2
DEFAULT_BURST = 5
DEFAULT_SEARCH_LIMIT = 7
MAX_SEARCH_LIMIT = 50
MAX_SEARCH_LENGTH = 250
DEFAULT_PROPS: tuple[str, ...] = ("labels", "descriptions", "aliases", "claims")
KNOWN_PROPS = frozenset(
    {"aliases", "claims", "datatype", "descriptions", "info", "labels", "sitelinks", "sitelinks/urls"}
)
SEARCH_TYPES = frozenset({"item", "property", "lexeme", "form", "sense"})

_ID_RE = ENTITY_ID_RE
_LANGUAGE_RE = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{1,8})*$")

logger = get_logger(__name__)

Gate = Callable[[], AbstractContextManager[object]]


# ---------------------------------------------------------------------------------------------- settings


def action_api_url() -> str:
    """``WIKIDATA_API_URL``, the full endpoint (…/w/api.php); the one place that reads it."""
    return str(getattr(settings, "WIKIDATA_API_URL", DEFAULT_API_URL))


def action_api_timeout() -> float | None:
    """``WIKIDATA_API_TIMEOUT_SECONDS`` (read timeout) or ``None`` for the project default."""
    value = getattr(settings, "WIKIDATA_API_TIMEOUT_SECONDS", None)
    return float(value) if value is not None else None


def action_api_maxlag() -> int:
    """``WIKIDATA_API_MAXLAG`` (seconds), default :data:`DEFAULT_MAXLAG`."""
    return int(getattr(settings, "WIKIDATA_API_MAXLAG", DEFAULT_MAXLAG))


def action_api_budget() -> tuple[float, int]:
    """``(interval seconds, burst)`` for ``RateLimiter(LIMITER_NAME, interval=..., burst=...)``, from
    ``WIKIDATA_API_INTERVAL_SECONDS`` and ``WIKIDATA_API_BURST``."""
    interval = float(getattr(settings, "WIKIDATA_API_INTERVAL_SECONDS", DEFAULT_INTERVAL_SECONDS))
    burst = int(getattr(settings, "WIKIDATA_API_BURST", DEFAULT_BURST))
    return interval, burst


# ------------------------------------------------------------------------------------------------ errors


class ActionApiError(UpstreamError):
    """The API answered with its ``{"error": {"code", "info"}}`` envelope."""

    def __init__(
        self,
        message: str,
        *,
        api_code: str,
        info: str,
        details: dict[str, Any] | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(
            message,
            details={"upstream": UPSTREAM, "apiCode": api_code, "info": info, **(details or {})},
            retryable=retryable,
            retry_after=retry_after,
        )
        self.api_code = api_code
        self.info = info


def _api_error(body: Mapping[str, Any]) -> tuple[str, str, Mapping[str, Any]] | None:
    """``(code, info, error)`` of an error envelope: ``error`` (default errorformat) or ``errors[0]``."""
    error = body.get("error")
    if isinstance(error, Mapping):
        return str(error.get("code") or "unknown"), str(error.get("info") or error.get("*") or ""), error
    errors = body.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], Mapping):
        first = errors[0]
        info = first.get("text") or first.get("info") or first.get("html") or ""
        return str(first.get("code") or "unknown"), str(info), first
    return None


def _maxlag_seconds(error: Mapping[str, Any], info: str) -> float | None:
    lag = error.get("lag")
    if isinstance(lag, int | float) and math.isfinite(lag):
        return max(0.0, float(lag))
    match = re.search(r"([0-9]+(?:\.[0-9]+)?) seconds? lagged", info)
    return float(match.group(1)) if match else None


def body_from_response(response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a successful answer; otherwise the classified :class:`UpstreamError`."""
    status = response.status_code
    context = {"upstream": UPSTREAM, "status": status, "url": str(response.request.url)}
    header_wait = parse_retry_after(response.headers.get("Retry-After"))
    if status == 429 or status >= 500:
        raise UpstreamError(
            f"the Wikidata Action API is busy or failing (HTTP {status}); retry later",
            details={**context, **({"retryAfter": header_wait} if header_wait is not None else {})},
            retryable=True,
            retry_after=header_wait,
        )
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        body = None
    error = _api_error(body) if isinstance(body, dict) else None
    if error is not None:
        code, info, raw = error
        if code == "maxlag":
            wait = header_wait if header_wait is not None else _maxlag_seconds(raw, info)
            wait = wait if wait is not None else float(DEFAULT_MAXLAG)
            raise ActionApiError(
                f"Wikidata's database is lagged ({info or 'maxlag'}); retry in {wait:g} s",
                api_code=code,
                info=info,
                details={**context, "retryAfter": wait},
                retryable=True,
                retry_after=wait,
            )
        raise ActionApiError(
            f"the Wikidata Action API refused: {code}: {info}", api_code=code, info=info, details=context
        )
    if status != 200:
        raise UpstreamError(
            f"the Wikidata Action API answered HTTP {status}",
            details={**context, "body": response.text[:500]},
        )
    if not isinstance(body, dict):
        raise UpstreamError(
            "the Wikidata Action API answered with malformed JSON (not a JSON object)",
            details={**context, "reason": "malformed", "body": response.text[:500]},
        )
    if body.get("warnings"):
        logger.warning("wikidata.action_api.warnings", warnings=str(body["warnings"])[:500])
    return body


def _malformed(exc: Exception, what: str) -> UpstreamError:
    return UpstreamError(
        f"the Wikidata Action API answered {what} in an unexpected shape: {exc}",
        details={"upstream": UPSTREAM, "reason": "malformed"},
    )


# ------------------------------------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class Redirect:
    from_id: str
    to_id: str

    def as_dict(self) -> dict[str, str]:
        return {"from": self.from_id, "to": self.to_id}


@dataclass(slots=True)
class EntitiesResult:
    """What ``wbgetentities`` returned for some ids, merged over batches.

    ``entities`` is keyed by the resolved id (a redirect's target); ``redirects`` lists
    ``{from, to}``; ``missing`` the requested ids that do not exist (or were deleted);
    ``missing_titles`` the ``{site, title}`` of failed sitelink lookups.
    """

    entities: dict[str, Entity] = field(default_factory=dict)
    redirects: list[Redirect] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    missing_titles: list[dict[str, str]] = field(default_factory=list)
    requests: int = 0

    def resolve(self, entity_id: str) -> str:
        """The id an entity is filed under here: a redirect's target, else the id itself."""
        entity_id = normalize_entity_id(entity_id)
        for redirect in self.redirects:
            if redirect.from_id == entity_id:
                return redirect.to_id
        return entity_id

    def get(self, entity_id: str) -> Entity | None:
        return self.entities.get(self.resolve(entity_id))

    def label(self, entity_id: str, language: str) -> str | None:
        entity = self.get(entity_id)
        return entity.label(language) if entity else None

    def labels(self, language: str) -> dict[str, str]:
        """Id → label (with fallback) for every entity and every redirect source that has one."""
        found = {entity_id: label for entity_id, e in self.entities.items() if (label := e.label(language))}
        for redirect in self.redirects:
            if redirect.to_id in found:
                found[redirect.from_id] = found[redirect.to_id]
        return found

    def statements(self) -> list[Statement]:
        return [statement for entity in self.entities.values() for statement in entity.statements]

    def merge(self, other: EntitiesResult) -> None:
        self.entities.update(other.entities)
        self.redirects.extend(r for r in other.redirects if r not in self.redirects)
        self.missing.extend(i for i in other.missing if i not in self.missing)
        self.missing_titles.extend(t for t in other.missing_titles if t not in self.missing_titles)
        self.requests += other.requests

    def as_dict(self) -> dict[str, Any]:
        return {
            "entities": {entity_id: entity.as_dict() for entity_id, entity in self.entities.items()},
            "redirects": [redirect.as_dict() for redirect in self.redirects],
            "missing": list(self.missing),
            "missingTitles": [dict(item) for item in self.missing_titles],
            "requests": self.requests,
        }


def parse_entities_body(body: Mapping[str, Any]) -> EntitiesResult:
    """A ``wbgetentities`` (or ``Special:EntityData``) body, formatversion 1 or 2."""
    raw_entities = body.get("entities")
    if raw_entities == []:
        raw_entities = {}
    if not isinstance(raw_entities, Mapping):
        raise WikibaseFormatError("the answer has no 'entities' object")
    result = EntitiesResult()
    for key, raw in raw_entities.items():
        if not isinstance(raw, Mapping):
            raise WikibaseFormatError(f"entity {key!r} is not an object")
        if is_missing(raw):
            if raw.get("site") is not None or raw.get("title") is not None:
                result.missing_titles.append(
                    {"site": str(raw.get("site", "")), "title": str(raw.get("title", ""))}
                )
            else:
                missing_id = normalize_entity_id(str(raw.get("id") or key))
                if missing_id not in result.missing:
                    result.missing.append(missing_id)
            continue
        entity = parse_entity(raw)
        redirect = raw.get("redirects")
        if isinstance(redirect, Mapping) and redirect.get("from") and redirect.get("to"):
            record = Redirect(
                normalize_entity_id(str(redirect["from"])), normalize_entity_id(str(redirect["to"]))
            )
            if record not in result.redirects:
                result.redirects.append(record)
        result.entities[entity.id] = entity
    return result


def _search_hit(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
        raise WikibaseFormatError(f"search hit without an id: {raw!r:.120}")
    display: Mapping[str, Any] = raw["display"] if isinstance(raw.get("display"), Mapping) else {}

    def shown(name: str) -> str | None:
        term = display.get(name)
        if isinstance(term, Mapping) and isinstance(term.get("value"), str):
            return term["value"]
        value = raw.get(name)
        return value if isinstance(value, str) else None

    match = raw.get("match")
    aliases = raw.get("aliases")
    return {
        "id": normalize_entity_id(raw["id"]),
        "label": shown("label"),
        "description": shown("description"),
        "match": dict(match) if isinstance(match, Mapping) else None,
        "aliases": [a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else [],
    }


# ------------------------------------------------------------------------------------------------ client


def _normalize_ids(ids: Iterable[str]) -> list[str]:
    if isinstance(ids, str):
        ids = [ids]
    seen: dict[str, None] = {}
    for raw in ids:
        entity_id = normalize_entity_id(str(raw))
        if not _ID_RE.match(entity_id):
            raise ValidationFailed(
                f"{raw!r} is not a Wikidata entity id (Q…, P…, L…)",
                details={"field": "ids", "value": str(raw)},
            )
        seen.setdefault(entity_id, None)
    return list(seen)


def _normalize_language(language: str) -> str:
    value = str(language or "").strip().lower()
    if not _LANGUAGE_RE.match(value):
        raise ValidationFailed(
            f"{language!r} is not a language code (e.g. en, de, pt-br)", details={"field": "language"}
        )
    return value


def _chunks(items: Sequence[str], size: int) -> list[Sequence[str]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


class ActionApiClient:
    """Synchronous Wikidata Action API client; cheap to create, holds no connection between requests."""

    def __init__(
        self,
        *,
        api_url: str | None = None,
        timeout: float | None = None,
        gate: Gate | None = None,
        deadline: float | None = None,
    ):
        self.api_url = api_url or action_api_url()
        self.timeout = timeout if timeout is not None else action_api_timeout()
        self.gate: Gate = gate or contextlib.nullcontext
        # A time.monotonic() instant no request may outlast (a run's deadline): each request is
        # refused after it and its timeouts are cut to what is left before it.
        self.deadline = deadline
        self.maxlag = action_api_maxlag()

    # -- the seam: exactly one HTTP request

    def request(self, params: Mapping[str, str]) -> dict[str, Any]:
        """One GET with ``params`` plus ``format=json``, ``formatversion=2`` and ``maxlag``."""
        query = {**params, "format": "json", "formatversion": "2", "maxlag": str(self.maxlag)}
        action = query.get("action", "")
        started = time.perf_counter()
        try:
            with self.gate(), build_client(timeout=self.timeout) as http:
                timeout = timeout_before(self.deadline, read=self.timeout, upstream=UPSTREAM, name=NAME)
                response = http.get(self.api_url, params=query, timeout=timeout)
                # Judged inside the gate, so that it records an error answer (a 503, a 429) as the
                # failure it is, not as a request that went well (the health and alerts read those).
                logger.info(
                    "wikidata.action_api.request",
                    action=action,
                    status=response.status_code,
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                )
                return body_from_response(response)
        except httpx.TimeoutException as exc:
            raise UpstreamError(
                f"the Wikidata Action API did not answer in time ({type(exc).__name__})",
                details={"upstream": UPSTREAM, "reason": "timeout", "url": self.api_url, "action": action},
                retryable=True,
            ) from exc
        except httpx.UnsupportedProtocol as exc:
            raise UpstreamError(
                f"WIKIDATA_API_URL is not an http(s) URL: {self.api_url!r}",
                details={"upstream": UPSTREAM, "reason": "configuration", "url": self.api_url},
            ) from exc
        except httpx.TransportError as exc:
            raise UpstreamError(
                f"could not reach the Wikidata Action API ({type(exc).__name__}: {exc})",
                details={"upstream": UPSTREAM, "reason": "connection", "url": self.api_url, "action": action},
                retryable=True,
            ) from exc

    # -- wbgetentities

    def fetch_entities_batch(
        self,
        ids: Sequence[str] = (),
        *,
        props: Sequence[str] = DEFAULT_PROPS,
        languages: Sequence[str] | None = None,
        site: str | None = None,
        titles: Sequence[str] = (),
    ) -> EntitiesResult:
        """One ``wbgetentities`` request for ≤ 50 ids (or ≤ 50 sitelink titles of one ``site``)."""
        params = {"action": "wbgetentities", "redirects": "yes", "props": self._props(props)}
        if titles:
            if site is None or len(titles) > MAX_IDS_PER_REQUEST:
                raise ValidationFailed(
                    f"a sitelink lookup needs a site and at most {MAX_IDS_PER_REQUEST} titles"
                )
            params.update(sites=site, titles="|".join(titles), normalize="1")
        else:
            ids = _normalize_ids(ids)
            if not ids or len(ids) > MAX_IDS_PER_REQUEST:
                raise ValidationFailed(f"one wbgetentities request takes 1 to {MAX_IDS_PER_REQUEST} ids")
            params["ids"] = "|".join(ids)
        if languages:
            params["languages"] = "|".join(self._languages(languages))
            params["languagefallback"] = "1"
        body = self.request(params)
        try:
            result = parse_entities_body(body)
        except WikibaseFormatError as exc:
            raise _malformed(exc, "wbgetentities") from exc
        result.requests = 1
        return result

    def get_entities(
        self,
        ids: Iterable[str],
        *,
        props: Sequence[str] = DEFAULT_PROPS,
        languages: Sequence[str] | None = None,
    ) -> EntitiesResult:
        """Entities by id, in batches of ≤ 50 (one request each); redirects followed and recorded,
        missing ids listed. ``languages`` filters terms; each is sent with its fallback chain
        (``de`` → ``de|mul|en``) plus ``languagefallback``, so :meth:`Entity.label` can fall back.

        If a batch fails, the error carries what earlier batches returned as ``partial``.
        """
        normalized = _normalize_ids(ids)
        result = EntitiesResult()
        for batch in _chunks(normalized, MAX_IDS_PER_REQUEST):
            try:
                result.merge(self.fetch_entities_batch(batch, props=props, languages=languages))
            except UpstreamError as exc:
                exc.partial = result  # type: ignore[attr-defined]
                raise
        return result

    def get_entities_by_titles(
        self,
        site: str,
        titles: Sequence[str],
        *,
        props: Sequence[str] = DEFAULT_PROPS,
        languages: Sequence[str] | None = None,
    ) -> EntitiesResult:
        """Entities by sitelink (``site="enwiki"``, ``titles=["Berlin"]``); failed lookups land in
        ``missing_titles``."""
        result = EntitiesResult()
        for batch in _chunks(list(titles), MAX_IDS_PER_REQUEST):
            result.merge(self.fetch_entities_batch(props=props, languages=languages, site=site, titles=batch))
        return result

    # -- wbgetclaims

    def get_claims(self, entity_id: str, *, property_id: str | None = None) -> list[Statement]:
        """All statements of an entity (or of one property), every rank, deprecated ones marked."""
        (subject,) = _normalize_ids([entity_id])
        params = {"action": "wbgetclaims", "entity": subject}
        if property_id is not None:
            params["property"] = _normalize_ids([property_id])[0]
        body = self.request(params)
        if "claims" not in body:
            raise _malformed(WikibaseFormatError("no 'claims' key"), "wbgetclaims")
        try:
            return parse_claims(body["claims"], entity_id=subject)
        except WikibaseFormatError as exc:
            raise _malformed(exc, "wbgetclaims") from exc

    # -- wbsearchentities

    def search_entities(
        self, query: str, *, language: str, type: str = "item", limit: int = DEFAULT_SEARCH_LIMIT
    ) -> list[dict[str, Any]]:
        """Keyword search (the fallback when the vector database fails).

        Each hit is ``{id, label, description, match, aliases}``; ``label``/``description`` come from
        ``display`` when present (current Wikidata), else the plain fields (older answers).
        """
        text = " ".join(str(query or "").split())
        if not text or len(text) > MAX_SEARCH_LENGTH:
            raise ValidationFailed(
                f"search text must be 1 to {MAX_SEARCH_LENGTH} characters", details={"field": "query"}
            )
        if type not in SEARCH_TYPES:
            raise ValidationFailed(f"type must be one of {sorted(SEARCH_TYPES)}", details={"field": "type"})
        if not 1 <= int(limit) <= MAX_SEARCH_LIMIT:
            raise ValidationFailed(f"limit must be 1 to {MAX_SEARCH_LIMIT}", details={"field": "limit"})
        lang = _normalize_language(language)
        body = self.request(
            {
                "action": "wbsearchentities",
                "search": text,
                "language": lang,
                "uselang": lang,
                "type": type,
                "limit": str(int(limit)),
            }
        )
        hits = body.get("search")
        if not isinstance(hits, list):
            raise _malformed(WikibaseFormatError("no 'search' list"), "wbsearchentities")
        try:
            return [_search_hit(hit) for hit in hits]
        except WikibaseFormatError as exc:
            raise _malformed(exc, "wbsearchentities") from exc

    # -- helpers

    @staticmethod
    def _props(props: Sequence[str]) -> str:
        props = [props] if isinstance(props, str) else list(props)
        unknown = [p for p in props if p not in KNOWN_PROPS]
        if not props or unknown:
            raise ValidationFailed(f"props must be some of {sorted(KNOWN_PROPS)}", details={"field": "props"})
        return "|".join(props)

    @staticmethod
    def _languages(languages: Sequence[str]) -> list[str]:
        languages = [languages] if isinstance(languages, str) else list(languages)
        seen: dict[str, None] = {}
        for language in languages:
            for candidate in language_fallback_chain(_normalize_language(language)):
                seen.setdefault(candidate, None)
        return list(seen)
