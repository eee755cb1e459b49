"""Canonical JSON and signatures (DESIGN §5.1).

A signature is ``base64url_nopad(HMAC-SHA256(key, RFC8785(payload)))``: RFC 8785
(JSON Canonicalization Scheme) makes the bytes independent of key order and
number formatting, so any consumer can recompute and compare.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

import rfc8785


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON value."""
    return rfc8785.dumps(value)


def sign(value: Any, *, key: str) -> str:
    digest = hmac.new(key.encode("utf-8"), canonical_json(value), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def verify(value: Any, *, signature: str, key: str) -> bool:
    return hmac.compare_digest(sign(value, key=key), signature)
