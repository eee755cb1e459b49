"""arXiv's spacing holds at the upstream's side: the next send waits the interval from the end of the
previous request, not only from its claim (apps/core/ratelimit.py's ConnectionLock release)."""

from __future__ import annotations

import secrets
import time

from apps.core.ratelimit import KEY_PREFIX, ConnectionLock, MinimumSpacing


def test_the_next_send_is_spaced_from_the_end_of_the_previous_request(redis_client) -> None:
    name = f"deploy-spacing-{secrets.token_hex(4)}"
    spacing, lock = MinimumSpacing(name, interval=0.5), ConnectionLock(name, ttl=5)
    with lock.hold():
        assert spacing.claim() == 0.0
        time.sleep(0.3)  # the request: sent at its claim, answered 0.3 s later
    released = time.monotonic()
    waited = spacing.claim()
    # From the release, not the claim: 0.5 s, where counting from the claim waited only 0.2 s.
    assert 0.45 <= waited <= 0.6, waited
    assert time.monotonic() - released >= 0.45
    assert 1000 < redis_client.pttl(f"{KEY_PREFIX}{name}:last-send") <= 1500


def test_a_lock_without_spacing_leaves_no_spacing_key(redis_client) -> None:
    name = f"deploy-lock-only-{secrets.token_hex(4)}"
    with ConnectionLock(name, ttl=5).hold():
        pass
    assert redis_client.exists(f"{KEY_PREFIX}{name}:last-send") == 0
