"""Embedding figures: model load, one sentence, a batch of 64 (in-process ONNX backend)."""

from __future__ import annotations

import time

from apps.embeddings.backends import OnnxMiniLMBackend

SENTENCE = "Marie Curie was the first person to win Nobel Prizes in two different sciences."
BATCH = [f"{SENTENCE} (variant {index}: radioactivity, polonium and radium)" for index in range(64)]


def _timed(function, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return samples


def run(report) -> None:
    report("embedding.load", _timed(OnnxMiniLMBackend, 5))
    backend = OnnxMiniLMBackend()
    backend.embed([SENTENCE])  # first run allocates onnxruntime's buffers
    report("embedding.one_sentence", _timed(lambda: backend.embed([SENTENCE]), 200))
    report("embedding.batch_64", _timed(lambda: backend.embed(BATCH), 20))
