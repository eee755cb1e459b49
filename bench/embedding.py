"""Embedding figures: model load, one sentence, a batch of 64 (in-process ONNX backend)."""

from __future__ import annotations

from apps.embeddings.backends import OnnxMiniLMBackend
from bench import timed

SENTENCE = "Marie Curie was the first person to win Nobel Prizes in two different sciences."
BATCH = [f"{SENTENCE} (variant {index}: radioactivity, polonium and radium)" for index in range(64)]


def run(report) -> None:
    report("embedding.load", timed(OnnxMiniLMBackend, 5))
    backend = OnnxMiniLMBackend()
    backend.embed([SENTENCE])  # first run allocates onnxruntime's buffers
    report("embedding.one_sentence", timed(lambda: backend.embed([SENTENCE]), 200))
    report("embedding.batch_64", timed(lambda: backend.embed(BATCH), 20))
