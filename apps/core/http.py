"""The one httpx client factory: every outbound call goes through here.

Explicit connect/read timeouts, CortexWeb's descriptive User-Agent (Wikimedia
rejects generic ones), redirects chosen by the caller rather than inherited,
and the request's correlation id forwarded as ``X-Request-ID`` so upstream
logs can be matched to ours. Nothing else in the code calls ``httpx.get``.

Every client connects through :mod:`apps.core.outbound`'s network backends, which refuse
private, loopback, link-local and metadata addresses unless the operator allows them (and
connect only to the addresses they checked, so DNS rebinding cannot slip past). Environment
proxies (``HTTP_PROXY``…) are not used: the check must see the address actually connected to.
"""

from __future__ import annotations

import functools
import math
import random
import ssl
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import certifi
import httpcore
import httpcore2
import httpx
import httpx2
from django.conf import settings

from apps.core.errors import DeadlineReached
from apps.core.logging import current_correlation_id
from apps.core.outbound import GuardedAsyncBackend2, GuardedSyncBackend

# httpx's own defaults for a client's pool (httpx.Client without a transport uses the same).
MAX_CONNECTIONS = 100
MAX_KEEPALIVE_CONNECTIONS = 20
KEEPALIVE_EXPIRY = 5.0


def default_timeout(read: float | None = None) -> httpx.Timeout:
    return httpx.Timeout(
        connect=settings.CORTEX_HTTP_CONNECT_TIMEOUT,
        read=read if read is not None else settings.CORTEX_HTTP_READ_TIMEOUT,
        write=settings.CORTEX_HTTP_READ_TIMEOUT,
        pool=settings.CORTEX_HTTP_CONNECT_TIMEOUT,
    )


def default_headers() -> dict[str, str]:
    headers = {"User-Agent": settings.CORTEX_USER_AGENT}
    correlation_id = current_correlation_id()
    if correlation_id:
        headers["X-Request-ID"] = correlation_id
    return headers


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process (certifi's CA bundle, as httpx's default).

    Loading the CA bundle costs ~30 ms; building it for every client made each upstream request
    that much slower. An ``SSLContext`` is safe to share between threads and clients.
    """
    return ssl.create_default_context(cafile=certifi.where())


def _pool_options() -> dict:
    return {
        "ssl_context": tls_context(),
        "max_connections": MAX_CONNECTIONS,
        "max_keepalive_connections": MAX_KEEPALIVE_CONNECTIONS,
        "keepalive_expiry": KEEPALIVE_EXPIRY,
    }


def guarded_transport() -> httpx.HTTPTransport:
    """httpx's transport with its connection pool on the outbound-checking network backend."""
    transport = httpx.HTTPTransport(verify=tls_context(), trust_env=False)
    # httpx takes no network backend, so its pool is replaced by the same pool with ours.
    transport._pool = httpcore.ConnectionPool(**_pool_options(), network_backend=GuardedSyncBackend())
    return transport


def guarded_async_transport2() -> httpx2.AsyncHTTPTransport:
    """The same, async, for the ``mcp`` SDK's httpx fork."""
    transport = httpx2.AsyncHTTPTransport(verify=tls_context(), trust_env=False)
    transport._pool = httpcore2.AsyncConnectionPool(**_pool_options(), network_backend=GuardedAsyncBackend2())
    return transport


def build_client(
    *, base_url: str = "", timeout: float | None = None, follow_redirects: bool = False
) -> httpx.Client:
    """A synchronous client; use it as a context manager."""
    return httpx.Client(
        base_url=base_url,
        transport=guarded_transport(),
        timeout=default_timeout(timeout),
        headers=default_headers(),
        follow_redirects=follow_redirects,
    )


def build_mcp_async_client(
    *, timeout: float | None = None, headers: dict[str, str] | None = None, event_hooks: dict | None = None
) -> httpx2.AsyncClient:
    """The async client for the official ``mcp`` SDK, which accepts only its own httpx fork (httpx2).

    Same User-Agent, correlation id and timeouts as the others (``timeout`` bounds reads and
    writes); redirects are off because the SDK follows same-origin redirects itself.
    """
    read = timeout if timeout is not None else settings.CORTEX_HTTP_READ_TIMEOUT
    return httpx2.AsyncClient(
        transport=guarded_async_transport2(),
        headers={**default_headers(), **(headers or {})},
        timeout=httpx2.Timeout(
            connect=settings.CORTEX_HTTP_CONNECT_TIMEOUT,
            read=read,
            write=read,
            pool=settings.CORTEX_HTTP_CONNECT_TIMEOUT,
        ),
        follow_redirects=False,
        event_hooks=event_hooks or {},
    )


def timeout_until(deadline: float | None, *, read: float) -> httpx.Timeout | None:
    """The timeout of one request that must be over by ``deadline`` (a ``time.monotonic()`` instant).

    Reads and writes wait at most ``read`` seconds and never past the deadline; connecting and
    taking a pooled connection at most ``CORTEX_HTTP_CONNECT_TIMEOUT``, no longer than that.
    ``None`` when the deadline has passed (the request should not be sent). Without a deadline,
    just ``read`` (and the connect timeout).
    """
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        read = min(read, left)
    connect = min(float(settings.CORTEX_HTTP_CONNECT_TIMEOUT), read)
    return httpx.Timeout(read, connect=connect, pool=connect)


def timeout_before(deadline: float | None, *, read: float | None, upstream: str, name: str) -> httpx.Timeout:
    """The timeout of one request to ``name`` that must be over by ``deadline`` (``timeout_until``;
    ``read`` ``None`` is ``CORTEX_HTTP_READ_TIMEOUT``). Raises ``DeadlineReached`` when the deadline
    has passed: the request is not sent. Called after the limiter's wait, just before sending."""
    timeout = timeout_until(deadline, read=read if read is not None else settings.CORTEX_HTTP_READ_TIMEOUT)
    if timeout is None:
        raise DeadlineReached(upstream=upstream, name=name)
    return timeout


def deadline_check(deadline: float | None, *, upstream: str, name: str) -> None:
    """``DeadlineReached`` when ``deadline`` has passed: checked before a limiter slot is taken, so a
    request that cannot be sent spends none of the upstream's budget."""
    if deadline is not None and deadline - time.monotonic() <= 0:
        raise DeadlineReached(upstream=upstream, name=name)


def full_jitter_delay(
    *, attempt: int, base: float, cap: float = math.inf, retry_after: float | None
) -> float:
    """Backoff with full jitter (uniform in [0, min(cap, base * 2**attempt)]), never before the
    upstream's ``Retry-After``."""
    ceiling = min(cap, base * 2**attempt)
    return max(random.uniform(0, ceiling), retry_after or 0.0)  # noqa: S311 - jitter, not secrecy


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date); ``None`` if unusable."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
