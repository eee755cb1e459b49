"""``POST /v1/embeddings`` and the 384-d vector column helper on real Postgres+pgvector."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test import Client

from apps.embeddings.backends import EMBEDDING_DIMENSION
from apps.embeddings.fields import EmbeddingField, hnsw_cosine_index
from apps.embeddings.services import embed_texts

pytestmark = pytest.mark.django_db


def test_endpoint_returns_the_service_vectors(read_client: Client) -> None:
    response = read_client.post(
        "/v1/embeddings", {"input": ["Marie Curie", "Warsaw"]}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["model"] == "all-MiniLM-L6-v2-onnx-int8"
    assert body["dimension"] == EMBEDDING_DIMENSION
    assert [item["index"] for item in body["data"]] == [0, 1]
    expected = embed_texts(texts=["Marie Curie", "Warsaw"])
    np.testing.assert_allclose(np.asarray([item["embedding"] for item in body["data"]]), expected, atol=1e-6)


def test_endpoint_requires_a_token() -> None:
    response = Client().post("/v1/embeddings", {"input": ["x"]}, content_type="application/json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_required"


@pytest.mark.parametrize(
    ("payload", "detail"),
    [({"input": ["ok", "   "]}, "blank"), ({"input": ["x" * 8193]}, "tooLong")],
)
def test_blank_and_oversized_texts_are_named(read_client: Client, payload: dict, detail: str) -> None:
    response = read_client.post("/v1/embeddings", payload, content_type="application/json")
    assert response.status_code == 422
    assert response.json()["error"]["details"][detail] == [len(payload["input"]) - 1]


def test_too_many_texts_are_refused(read_client: Client) -> None:
    response = read_client.post("/v1/embeddings", {"input": ["x"] * 65}, content_type="application/json")
    assert response.status_code == 422


def test_embedding_field_is_a_384_d_vector_with_cosine_search() -> None:
    field = EmbeddingField()
    assert field.db_type(connection) == f"vector({EMBEDDING_DIMENSION})"
    assert "dimensions" not in field.deconstruct()[3]
    index = hnsw_cosine_index(name="doc_embedding_hnsw", field="embedding")
    assert index.opclasses == ["vector_cosine_ops"]
    query, near, far = embed_texts(texts=["physicist born in Warsaw", "Marie Curie", "tax law"])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT %s::vector(384) <=> %s::vector(384), %s::vector(384) <=> %s::vector(384)",
            [field.get_prep_value(v) for v in (query, near, query, far)],
        )
        near_distance, far_distance = cursor.fetchone()
    assert near_distance < far_distance
