"""The one way models declare embedding columns, so every vector column has the
model's width and every similarity index uses cosine distance (vectors are unit length)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.conf import settings
from django.db import connection, transaction
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


@contextlib.contextmanager
def hnsw_filtered_scan(*, ef_search: int | None = None) -> Iterator[None]:
    """Nearest-neighbour queries inside (evaluated inside) return every row they ask for.

    An HNSW scan yields ``hnsw.ef_search`` candidates and only then applies the query's filters (a
    domain, "not this run"), so a filtered query can come back short, missing rows that a scan from
    another entry point of the graph would have found: which ones depends on how the graph happened
    to be built (its levels are random). pgvector 0.8's iterative scan keeps going, in strict distance
    order, until enough rows pass the filters.

    Every connection is opened with that scan and ``settings.HNSW_EF_SEARCH`` (the ``options`` of
    ``DATABASES``), so with the default this costs nothing: setting them per query took a savepoint
    and three round trips. Another ``ef_search`` is set for the block only (``SET LOCAL``). The block
    marks, where a query is made, that it depends on the scan.
    """
    if ef_search is None or ef_search == settings.HNSW_EF_SEARCH:
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        # set_config(..., true) is SET LOCAL: it ends with this transaction (or the caller's).
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'strict_order', true), "
            "set_config('hnsw.ef_search', %s, true)",
            [str(ef_search)],
        )
        yield
