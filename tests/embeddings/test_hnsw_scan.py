"""A filtered nearest-neighbour query inside ``hnsw_filtered_scan`` returns every row it asks for."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from pgvector.django import CosineDistance

from apps.embeddings.backends import EMBEDDING_DIMENSION
from apps.embeddings.fields import hnsw_filtered_scan
from apps.knowledge import services
from apps.knowledge.models import KnowledgeEntry

pytestmark = pytest.mark.django_db


def _unit(vector: np.ndarray) -> list[float]:
    return (vector / np.linalg.norm(vector)).tolist()


def test_a_filtered_index_scan_is_not_cut_short_by_nearer_rows_the_filter_drops() -> None:
    # 200 rows sit right around the query and the filter drops them; the 30 it keeps are far off.
    rng = np.random.default_rng(7)
    query = rng.normal(size=EMBEDDING_DIMENSION)
    domain = services.domain_get_or_create(name="vectors")
    KnowledgeEntry.objects.bulk_create(
        [
            KnowledgeEntry(
                entry_id=f"NEA-{i:03d}", domain=domain, topic="near", content="near", source="test",
                embedding=_unit(query + rng.normal(scale=0.05, size=EMBEDDING_DIMENSION)),
            )
            for i in range(200)
        ]
        + [
            KnowledgeEntry(
                entry_id=f"FAR-{i:03d}", domain=domain, topic="far", content="far", source="test",
                embedding=_unit(rng.normal(size=EMBEDDING_DIMENSION)),
            )
            for i in range(30)
        ]
    )  # fmt: skip
    with connection.cursor() as cursor:
        # The plan a large table gets: walk the HNSW index and filter what it hands over.
        cursor.execute("SET LOCAL enable_seqscan = off")
    nearest_far = (
        KnowledgeEntry.objects.filter(topic="far")
        .annotate(distance=CosineDistance("embedding", query.tolist()))
        .order_by("distance")[:10]
    )
    assert "knowledge_entry_embedding" in nearest_far.explain()
    with connection.cursor() as cursor:
        # What pgvector does without the iterative scan every connection is opened with.
        cursor.execute("SET LOCAL hnsw.iterative_scan = off")
    # A plain scan hands over its ef_search nearest candidates, all dropped by the filter.
    assert len(list(nearest_far.all())) < 10
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")

    for ef_search in (None, 40):  # the connection's settings, and another ef_search for the block
        with hnsw_filtered_scan(ef_search=ef_search):
            found = list(nearest_far.all())
        assert len(found) == 10
        distances = [row.distance for row in found]
        assert distances == sorted(distances)


def test_every_connection_is_opened_with_the_iterative_scan(settings) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT '[1,0]'::vector")  # the extension's settings exist once it is loaded
        cursor.execute("SELECT current_setting('hnsw.iterative_scan'), current_setting('hnsw.ef_search')")
        assert cursor.fetchone() == ("strict_order", str(settings.HNSW_EF_SEARCH))
        with hnsw_filtered_scan(ef_search=settings.HNSW_EF_SEARCH + 1):
            cursor.execute("SELECT current_setting('hnsw.ef_search')")
            assert cursor.fetchone() == (str(settings.HNSW_EF_SEARCH + 1),)
