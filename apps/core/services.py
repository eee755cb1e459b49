"""Core services: API tokens and events."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import User
from django.db import DatabaseError, models, transaction
from django.dispatch import Signal
from django.utils import timezone

from apps.core import metrics
from apps.core.errors import (
    DeadlineReached,
    NotFound,
    RateLimited,
    UpstreamError,
    ValidationFailed,
)
from apps.core.logging import current_correlation_id, get_logger
from apps.core.models import ApiToken, Event, TokenScope, UpstreamOutcome, UpstreamRequest
from apps.core.ratelimit import RateLimiter
from apps.core.redis import get_redis

logger = get_logger(__name__)

TOKEN_PREFIX = "cwt_"  # noqa: S105 - a public marker, not a secret
EVENTS_CHANNEL = "cortex:events"
# Writing last_used_at on every request would turn each read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_token(raw_token: str) -> str:
    return hashlib.sha256(raw_token.encode()).hexdigest()


def parse_scopes(scopes: Iterable[str]) -> list[str]:
    """Validate and normalise scope names; unknown names are a 4xx, listed."""
    cleaned = sorted({scope.strip() for scope in scopes if scope.strip()})
    unknown = [scope for scope in cleaned if scope not in TokenScope.values]
    if unknown:
        raise ValidationFailed(
            f"Unknown scope(s): {', '.join(unknown)}. Known scopes: {', '.join(TokenScope.values)}.",
            details={"unknown": unknown, "known": list(TokenScope.values)},
        )
    if not cleaned:
        raise ValidationFailed(
            "A token needs at least one scope.", details={"known": list(TokenScope.values)}
        )
    return cleaned


def api_token_expiry_check(*, expires_at: datetime | None) -> None:
    """``ValidationFailed`` unless the expiry is absent or in the future (the admin form checks it
    before saving, so a refused expiry is a field error there, not a failed save)."""
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationFailed("The expiry must be in the future.", details={"field": "expires_at"})


def api_token_create(
    *,
    name: str,
    scopes: Iterable[str],
    expires_at: datetime | None = None,
    created_by: User | None = None,
) -> tuple[ApiToken, str]:
    """Create a token; returns the row and the raw token, which is never stored."""
    name = name.strip()
    if not name:
        raise ValidationFailed("A token needs a name.")
    api_token_expiry_check(expires_at=expires_at)
    raw_token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        name=name,
        prefix=raw_token[: len(TOKEN_PREFIX) + 6],
        token_hash=hash_token(raw_token),
        scopes=parse_scopes(scopes),
        expires_at=expires_at,
        created_by=created_by,
    )
    logger.info("api_token.created", token_id=token.pk, token_name=token.name, scopes=token.scopes)
    return token, raw_token


def api_token_revoke(*, token_id: int) -> ApiToken:
    with transaction.atomic():
        token = ApiToken.objects.select_for_update().filter(pk=token_id).first()
        if token is None:
            raise NotFound(f"No API token with id {token_id}.")
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
    logger.info("api_token.revoked", token_id=token.pk, token_name=token.name)
    return token


#: Sent inside ``api_token_rotate``'s transaction with ``old`` and ``new``: apps that keep data owned by
#: a token (memories) move it to the replacement there, so a rotation moves all of it or none.
api_token_rotated = Signal()


def api_token_rotate(*, token_id: int, created_by: User | None = None) -> tuple[ApiToken, str]:
    """Replace a token: a new one with the same name, scopes and expiry owns what the old one owned
    (``api_token_rotated``), and the old one is revoked. Returns the new row and its raw token."""
    with transaction.atomic():
        old = ApiToken.objects.select_for_update().filter(pk=token_id).first()
        if old is None:
            raise NotFound(f"No API token with id {token_id}.")
        if not old.is_active:
            raise ValidationFailed(f"Token {old} is revoked or expired: create a new token instead.")
        new, raw_token = api_token_create(
            name=old.name, scopes=old.scopes, expires_at=old.expires_at, created_by=created_by
        )
        api_token_rotated.send(sender=ApiToken, old=old, new=new)
        old.revoked_at = timezone.now()
        old.save(update_fields=["revoked_at"])
    logger.info("api_token.rotated", token_id=old.pk, replacement_id=new.pk, token_name=old.name)
    return new, raw_token


def api_token_authenticate(*, raw_token: str) -> ApiToken:
    """The active token matching ``raw_token``, or AuthenticationRequired.

    Each authentication is one request against the token's limit (``api_token_rate_check``), on
    every surface that authenticates: ``/v1/``, ``/api/`` and MCP.
    """
    token = ApiToken.objects.active().filter(token_hash=hash_token(raw_token)).first()
    if token is None:
        # Not an API token: an OAuth access token acts as its grant's API token (apps/oauth/tokens.py).
        # Imported here: apps.oauth builds on apps.core.
        from apps.oauth.tokens import oauth_token_authenticate

        token = oauth_token_authenticate(raw_token=raw_token)
    api_token_rate_check(token=token)
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def api_token_limiter(*, token: ApiToken) -> RateLimiter:
    """The token's own request limiter (``CORTEX_TOKEN_REQUESTS_PER_MINUTE``, ``CORTEX_TOKEN_BURST``)."""
    per_minute = max(settings.CORTEX_TOKEN_REQUESTS_PER_MINUTE, 1)
    return RateLimiter(f"token:{token.pk}", interval=60.0 / per_minute, burst=settings.CORTEX_TOKEN_BURST)


def api_token_rate_check(*, token: ApiToken) -> None:
    """Count one request against the token's limit, shared by every process through Redis.

    ``RateLimited`` (429, ``Retry-After``) once ``CORTEX_TOKEN_REQUESTS_PER_MINUTE`` is spent beyond
    a burst of ``CORTEX_TOKEN_BURST``; requests never queue. A limit of 0 switches it off.
    """
    if settings.CORTEX_TOKEN_REQUESTS_PER_MINUTE > 0:
        api_token_limiter(token=token).check()


def page_submission_limiter(*, user: AbstractBaseUser) -> RateLimiter:
    """A signed-in user's limiter of page submissions that start upstream work (a fact question, a
    live arXiv search, an admin re-run): ``CORTEX_PAGE_SUBMISSIONS_PER_MINUTE`` beyond a burst of
    ``CORTEX_PAGE_SUBMISSION_BURST``, shared by every process through Redis."""
    per_minute = max(settings.CORTEX_PAGE_SUBMISSIONS_PER_MINUTE, 1)
    burst = max(settings.CORTEX_PAGE_SUBMISSION_BURST, 1)
    return RateLimiter(f"page:user:{user.pk}", interval=60.0 / per_minute, burst=burst)


def page_submission_check(*, user: AbstractBaseUser) -> None:
    """Count one page submission against the user's limit; ``RateLimited`` (429, ``Retry-After``)
    once it is spent. Submissions never queue. A limit of 0 switches it off."""
    if settings.CORTEX_PAGE_SUBMISSIONS_PER_MINUTE <= 0:
        return
    try:
        page_submission_limiter(user=user).check()
    except RateLimited as refusal:
        wait = max(1, math.ceil(refusal.retry_after))
        raise RateLimited(
            "Too many searches and questions from this account (each user may start "
            f"{settings.CORTEX_PAGE_SUBMISSIONS_PER_MINUTE} a minute); retry after {wait} s.",
            retry_after=refusal.retry_after,
            details={"limiter": "page-submissions"},
        ) from refusal


def event_emit(*, name: str, payload: dict[str, Any] | None = None) -> Event:
    """Store an event and publish it on Redis (``cortex:events``) for live consumers.

    Publishing is best effort: a Redis hiccup must not fail the work the event
    describes, and the stored row is the record.
    """
    event = Event.objects.create(
        name=name, correlation_id=current_correlation_id() or "", payload=payload or {}
    )
    message = json.dumps(
        {
            "id": event.pk,
            "name": name,
            "correlationId": event.correlation_id,
            "payload": event.payload,
            "createdAt": event.created_at.isoformat(),
        }
    )
    # Published only once the row is committed, so consumers never see an event that was rolled back.
    transaction.on_commit(lambda: _publish_event(name, message))
    return event


def _publish_event(name: str, message: str) -> None:
    try:
        get_redis().publish(EVENTS_CHANNEL, message)
    except Exception as error:  # noqa: BLE001 - see event_emit
        logger.warning("event.publish_failed", event_name=name, error=str(error))


def superuser_ensure(*, username: str, password: str, password_file: Path) -> str:
    """Make sure an admin can log in; returns a line telling the operator how.

    With ``username`` and ``password`` given (DJANGO_SUPERUSER_*), that user is
    created or its password set. Otherwise an ``admin`` user gets a strong
    generated password once, written to ``password_file`` readable only by its
    owner; later runs leave both alone.
    """
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    if username and password:
        user, _ = user_model.objects.get_or_create(username=username, defaults={"is_staff": True})
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        return f"Admin login: '{username}' with DJANGO_SUPERUSER_PASSWORD."
    username = username or "admin"
    if user_model.objects.filter(username=username).exists() and password_file.exists():
        return f"Admin login: '{username}'; its password is in {password_file}."
    generated = secrets.token_urlsafe(24)
    user, _ = user_model.objects.get_or_create(username=username, defaults={"is_staff": True})
    user.is_staff = user.is_superuser = True
    user.set_password(generated)
    user.save()
    password_file.unlink(missing_ok=True)
    fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"username: {username}\npassword: {generated}\n")
    return f"Admin login: '{username}'; a generated password was written to {password_file} (mode 600)."


RowT = TypeVar("RowT", bound=models.Model)


def row_wait(*, row: RowT, pending: Callable[[RowT], bool], timeout: float, interval: float = 0.02) -> RowT:
    """``row`` re-read from the database until it is no longer ``pending`` or ``timeout`` seconds pass
    (the APIs' bounded wait for a run a worker executes)."""
    give_up_at = time.monotonic() + timeout
    while pending(row) and time.monotonic() < give_up_at:
        time.sleep(interval)
        row.refresh_from_db()
    return row


# --- Upstream requests (the dashboard's budget chart) ------------------------------------------


@dataclass
class UpstreamRequestTally:
    """What the gate learns while a request is under way: how long the shared limiter made it wait."""

    waited_seconds: float = 0.0


def upstream_http_status(error: UpstreamError) -> int | None:
    """The HTTP status an upstream answered with, where its client recorded one (the Wikidata and
    arXiv clients say ``status``, the MCP client ``httpStatus``)."""
    details = error.details if isinstance(error.details, dict) else {}
    status = details.get("status", details.get("httpStatus"))
    return status if isinstance(status, int) and not isinstance(status, bool) else None


@contextlib.contextmanager
def upstream_request_recorded(
    *, upstream: str, budget_per_hour: float | None
) -> Iterator[UpstreamRequestTally]:
    """Record one request to ``upstream`` as an ``UpstreamRequest`` row when the block ends, its
    outcome read from how it ended: ``RateLimited`` is our limiter refusing (the request was never
    sent), an ``UpstreamError`` with HTTP 429 the upstream throttling us, any other error a failure.

    Wrap the whole gate — the limiter's wait and the request — and set ``tally.waited_seconds``.
    A row that cannot be written is logged and dropped: the record must never fail the request.
    """
    tally = UpstreamRequestTally()
    started = time.perf_counter()
    outcome, http_status = UpstreamOutcome.OK, None
    try:
        yield tally
    except (RateLimited, DeadlineReached):  # never sent: our limiter, or the caller's deadline, refused it
        outcome = UpstreamOutcome.REFUSED
        raise
    except UpstreamError as error:
        http_status = upstream_http_status(error)
        outcome = UpstreamOutcome.THROTTLED if http_status == 429 else UpstreamOutcome.FAILED
        raise
    except Exception:
        outcome = UpstreamOutcome.FAILED
        raise
    finally:
        try:
            # A savepoint, so that a failed insert cannot break a caller's transaction.
            with transaction.atomic():
                UpstreamRequest.objects.create(
                    upstream=upstream,
                    outcome=outcome,
                    http_status=http_status,
                    waited_ms=round(tally.waited_seconds * 1000, 3),
                    duration_ms=round((time.perf_counter() - started) * 1000, 3),
                    budget_per_hour=budget_per_hour,
                )
        except DatabaseError as error:
            logger.warning("upstream_request.not_recorded", upstream=upstream, error=str(error))
        # The same outcomes as a counter: the alert rules' error rate and refusals (deploy/prometheus).
        metrics.upstream_requests_total.labels(upstream=upstream, outcome=outcome).inc()


#: Rows deleted per statement when pruning, so one prune never holds a long lock on the table.
PRUNE_BATCH = 10_000


def upstream_requests_prune(*, now: datetime | None = None) -> int:
    """Delete the upstream request records older than ``CORTEX_UPSTREAM_REQUEST_DAYS`` (the dashboard
    reads the last hour and day; the table would otherwise grow with every request), in batches;
    returns how many were deleted. Run hourly by Celery beat."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.CORTEX_UPSTREAM_REQUEST_DAYS)
    deleted = 0
    while True:
        batch = list(
            UpstreamRequest.objects.filter(created_at__lt=cutoff).values_list("pk", flat=True)[:PRUNE_BATCH]
        )
        if not batch:
            break
        deleted += UpstreamRequest.objects.filter(pk__in=batch).delete()[0]
    if deleted:
        logger.info("upstream_requests.pruned", deleted=deleted, before=cutoff.isoformat())
    return deleted
