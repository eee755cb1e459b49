"""The one way models declare embedding columns, so every vector column has the
model's width and every similarity index uses cosine distance (vectors are unit length)."""

from __future__ import annotations

from pgvector.django import HnswIndex, VectorField

from apps.embeddings.backends import EMBEDDING_DIMENSION


class EmbeddingField(VectorField):
    """A ``vector(384)`` column holding an all-MiniLM-L6-v2 embedding."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("dimensions", EMBEDDING_DIMENSION)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        if kwargs.get("dimensions") == EMBEDDING_DIMENSION:
            kwargs.pop("dimensions")
        return name, path, args, kwargs


def hnsw_cosine_index(*, name: str, field: str) -> HnswIndex:
    """An HNSW index for ``ORDER BY field <=> query`` (pgvector's defaults m=16, ef_construction=64)."""
    return HnswIndex(name=name, fields=[field], m=16, ef_construction=64, opclasses=["vector_cosine_ops"])
