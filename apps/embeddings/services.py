"""Embedding entry points for the rest of the project.

Callers use :func:`embed_texts` / :func:`embed_text` and never pick a backend
themselves: ``EMBEDDINGS_URL`` set means the OpenAI-compatible HTTP backend,
unset means the in-process ONNX model (loaded once per process).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.conf import settings

from apps.embeddings.backends import EmbeddingBackend, HttpEmbeddingBackend, get_onnx_backend


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
