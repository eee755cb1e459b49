"""The OpenAI-compatible HTTP backend, with the embeddings server replaced by respx routes."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
import respx

from apps.core.errors import UpstreamError
from apps.embeddings.backends import EMBEDDING_DIMENSION, HttpEmbeddingBackend, get_onnx_backend
from apps.embeddings.services import embed_text, embed_texts, get_backend

BASE = "http://embeddings.test/v1"


def _vector(seed: int, scale: float = 3.0) -> list[float]:
    return list(np.random.default_rng(seed).normal(size=EMBEDDING_DIMENSION) * scale)


def _answer(request: httpx.Request) -> httpx.Response:
    import json

    body = json.loads(request.content)
    # Served in reverse index order and not normalised, as some servers do.
    data = [{"index": i, "embedding": _vector(len(text))} for i, text in enumerate(body["input"])][::-1]
    return httpx.Response(200, json={"object": "list", "model": body["model"], "data": data})


@pytest.fixture
def backend() -> HttpEmbeddingBackend:
    return HttpEmbeddingBackend(base_url=BASE, model="all-MiniLM-L6-v2", api_key="k-1", batch_size=2)


@respx.mock
def test_vectors_come_back_in_input_order_normalised_across_batches(backend) -> None:
    route = respx.post(f"{BASE}/embeddings").mock(side_effect=_answer)
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = backend.embed(texts)
    assert route.call_count == 3  # batches of 2, 2, 1
    request = route.calls[0].request
    assert request.headers["Authorization"] == "Bearer k-1"
    assert request.headers["User-Agent"].startswith("CortexWeb")
    assert vectors.shape == (5, EMBEDDING_DIMENSION)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    expected = np.asarray(_vector(3), dtype=np.float32)
    np.testing.assert_allclose(vectors[2], expected / np.linalg.norm(expected), atol=1e-5)


@pytest.mark.parametrize(
    ("response", "retryable"),
    [
        (httpx.Response(503, headers={"Retry-After": "7"}), True),
        (httpx.Response(429), True),
        (httpx.Response(400, json={"error": "bad model"}), False),
        (httpx.Response(200, text="<html>"), False),
        (httpx.Response(200, json={"data": [{"index": 0, "embedding": [0.1] * 768}]}), False),
        (httpx.Response(200, json={"data": []}), False),
        (httpx.Response(200, json={"data": [{"index": 0, "embedding": [0.0] * 384}]}), False),
    ],
    ids=["503", "429", "400", "not-json", "wrong-width", "missing-rows", "zero-vector"],
)
@respx.mock
def test_failures_are_classified(backend, response: httpx.Response, retryable: bool, settings) -> None:
    settings.EMBEDDINGS_MAX_RETRIES = 0  # classification only; retries are tested below
    respx.post(f"{BASE}/embeddings").mock(return_value=response)
    with pytest.raises(UpstreamError) as caught:
        backend.embed(["one"])
    assert caught.value.retryable is retryable
    assert caught.value.details["upstream"] == "embeddings"
    if response.status_code == 503:
        assert caught.value.retry_after == 7.0


@respx.mock
def test_timeouts_and_connection_errors_are_retried_then_reported_retryable(backend, settings) -> None:
    settings.EMBEDDINGS_MAX_RETRIES = 2
    settings.EMBEDDINGS_BACKOFF_BASE_SECONDS = 0.001
    route = respx.post(f"{BASE}/embeddings").mock(
        side_effect=[httpx.ReadTimeout("slow"), httpx.ConnectError("refused"), httpx.ReadTimeout("slow")]
    )
    with pytest.raises(UpstreamError) as caught:
        backend.embed(["one"])
    assert caught.value.retryable is True
    assert route.call_count == 3  # the first try and two retries


def test_embeddings_url_selects_the_backend(settings) -> None:
    settings.EMBEDDINGS_URL = ""
    assert get_backend() is get_onnx_backend()
    settings.EMBEDDINGS_URL = BASE
    settings.EMBEDDINGS_MODEL = "served-minilm"
    selected = get_backend()
    assert isinstance(selected, HttpEmbeddingBackend)
    assert (selected.base_url, selected.model_name) == (BASE, "served-minilm")
    with respx.mock:
        respx.post(f"{BASE}/embeddings").mock(side_effect=_answer)
        assert embed_texts(texts=["x", "yy"]).shape == (2, EMBEDDING_DIMENSION)
        assert embed_text(text="zzz").shape == (EMBEDDING_DIMENSION,)
