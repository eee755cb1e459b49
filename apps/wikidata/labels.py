"""Entity labels for the fact workflow and the native tools, through one Redis cache shared by every
process: labels change rarely and the same properties recur in every question."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

from redis.exceptions import RedisError

from apps.core.errors import RateLimited, UpstreamError
from apps.core.redis import get_redis
from apps.wikidata import clients
from apps.wikidata.action_api import EntitiesResult

LABEL_CACHE_SECONDS = 24 * 3600


def label_cache_key(language: str, entity_id: str) -> str:
    return f"cortex:wikidata:label:{language}:{entity_id}"


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


@dataclass
class LabelLookup:
    labels: dict[str, str]  # id → label, for the ids that have one
    requested: int
    cached: int  # of those, how many the cache answered
    error: UpstreamError | RateLimited | None = None  # what stopped the fetch of the rest, if anything


def labels_cached(ids: Iterable[str], *, language: str, deadline: float) -> LabelLookup:
    """Labels for ``ids``: from the Redis cache, the rest fetched in batches and cached for every
    process. An entity without a label in the language chain is cached as "" so it is not asked for
    again. On an upstream failure: the labels got so far, and the error."""
    wanted = sorted(set(ids))
    if not wanted:
        return LabelLookup({}, 0, 0)
    redis = get_redis()
    try:
        cached = redis.mget([label_cache_key(language, i) for i in wanted])
    except RedisError:
        cached = [None] * len(wanted)
    labels = {i: _text(raw) for i, raw in zip(wanted, cached, strict=True) if raw is not None}
    lookup = LabelLookup({}, len(wanted), len(labels))
    missing = [i for i in wanted if i not in labels]
    if missing:
        try:
            found = clients.entities_fetch(missing, props=("labels",), language=language, deadline=deadline)
        except (UpstreamError, RateLimited) as error:
            lookup.error = error
            found = getattr(error, "partial", EntitiesResult())
            missing = [i for i in missing if found.get(i) is not None]  # cache only what was answered
        fetched = found.labels(language)
        with contextlib.suppress(RedisError):
            pipe = redis.pipeline(transaction=False)
            for entity_id in missing:
                pipe.set(
                    label_cache_key(language, entity_id), fetched.get(entity_id, ""), ex=LABEL_CACHE_SECONDS
                )
            pipe.execute()
        labels.update(fetched)
    lookup.labels = {i: label for i, label in labels.items() if label}
    return lookup
