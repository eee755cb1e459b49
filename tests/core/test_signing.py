"""Canonical JSON (RFC 8785) and HMAC signatures."""

from __future__ import annotations

import json
import random
from pathlib import Path

import rfc8785

from apps.core.signing import _plain, canonical_json, sign, verify

VECTOR = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "contracts" / "service-map-signing-vector.json").read_text(
        "utf-8"
    )
)
# Escapes, separators, BMP characters either side of U+E000 (where UTF-16 and code-point order differ
# for astral characters) and an astral character.
CHARACTERS = 'abcXYZ "\\/\n\t\b\f\r\x00\x01\x1f\x7f\u2028\u00e9\u6771\ue000\uffff\U0001f600'


def _random_json(rnd: random.Random, depth: int = 0):
    def text() -> str:
        return "".join(rnd.choice(CHARACTERS) for _ in range(rnd.randint(0, 8)))

    roll = rnd.random()
    if depth > 3 or roll < 0.3:
        return rnd.choice([text(), rnd.randint(-(10**6), 10**6), True, False, None, 1.5, -0.0, 1e21])
    if roll < 0.65:
        return [_random_json(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    return {text(): _random_json(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}


def test_the_contract_vector() -> None:
    assert canonical_json(VECTOR["payload"]).decode("utf-8") == VECTOR["canonical"]
    assert sign(VECTOR["payload"], key=VECTOR["keyUtf8"]) == VECTOR["signature"]
    assert verify(VECTOR["payload"], signature=VECTOR["signature"], key=VECTOR["keyUtf8"])
    assert not verify(VECTOR["payload"], signature=VECTOR["signature"], key="another key")


def test_fast_path_is_byte_identical_to_rfc8785() -> None:
    rnd = random.Random(8785)
    fast = 0
    for _ in range(4000):
        value = _random_json(rnd)
        assert canonical_json(value) == rfc8785.dumps(value), value
        fast += _plain(value)
    assert fast > 1000  # both paths were exercised
    assert not _plain({"\U0001f600": 1}) and not _plain([1.5]) and not _plain(2**53)
