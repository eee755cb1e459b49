"""Embedding entry points for the rest of the project.

Callers use :func:`embed_texts` / :func:`embed_text` and never pick a backend
themselves: ``EMBEDDINGS_URL`` set means the OpenAI-compatible HTTP backend,
unset means the in-process ONNX model (loaded once per process).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from django.conf import settings
from redis.exceptions import RedisError

from apps.core.redis import get_redis
from apps.embeddings.backends import (
    EMBEDDING_DIMENSION,
    EmbeddingBackend,
    HttpEmbeddingBackend,
    get_onnx_backend,
)


def get_backend() -> EmbeddingBackend:
    """The configured backend. The HTTP one is cheap to build; the ONNX one is a per-process singleton."""
    if settings.EMBEDDINGS_URL:
        return HttpEmbeddingBackend.from_settings()
    return get_onnx_backend()


def embed_texts(*, texts: Sequence[str]) -> np.ndarray:
    """``float32`` array ``(len(texts), 384)`` of unit vectors, in input order."""
    return get_backend().embed(list(texts))


def embed_text(*, text: str) -> np.ndarray:
    """One unit vector of 384 floats."""
    return embed_texts(texts=[text])[0]


# Texts that recur across requests (statement texts, labels) are embedded once for every process.
EMBEDDING_CACHE_SECONDS = 30 * 24 * 3600


def _cache_key(model_name: str, text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    return f"cortex:embedding:{model_name}:{digest}"


def embed_texts_cached(*, texts: Sequence[str]) -> np.ndarray:
    """``embed_texts`` through a Redis cache keyed by model and text: one MGET, the misses embedded
    in one batch and stored (30 days). Same vectors, same order; a Redis failure only costs speed."""
    texts = list(texts)
    if not texts:
        return np.zeros((0, EMBEDDING_DIMENSION), dtype=np.float32)
    backend = get_backend()
    keys = [_cache_key(backend.model_name, text) for text in texts]
    try:
        cached = get_redis().mget(keys)
    except RedisError:
        cached = [None] * len(texts)
    vectors = np.zeros((len(texts), EMBEDDING_DIMENSION), dtype=np.float32)
    missing: dict[str, list[int]] = {}
    for index, raw in enumerate(cached):
        if isinstance(raw, bytes) and len(raw) == EMBEDDING_DIMENSION * 4:
            vectors[index] = np.frombuffer(raw, dtype=np.float32)
        else:
            missing.setdefault(texts[index], []).append(index)
    if missing:
        fresh = backend.embed(list(missing))
        try:
            pipe = get_redis().pipeline(transaction=False)
            for (text, indexes), vector in zip(missing.items(), fresh, strict=True):
                vectors[indexes] = vector
                pipe.set(
                    _cache_key(backend.model_name, text),
                    vector.astype(np.float32).tobytes(),
                    ex=EMBEDDING_CACHE_SECONDS,
                )
            pipe.execute()
        except RedisError:
            for (_text, indexes), vector in zip(missing.items(), fresh, strict=True):
                vectors[indexes] = vector
    return vectors
