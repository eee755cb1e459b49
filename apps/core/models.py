"""Core models: API tokens and the stored event log."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone


class TokenScope(models.TextChoices):
    READ = "read", "read"
    WRITE = "write", "write"
    PROPOSE = "propose", "propose"
    ADMIN = "admin", "admin"


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    """A bearer token for the agent and resource APIs.

    Only a SHA-256 digest of the token is stored: the token itself is shown
    once, at creation. The token is 256 bits of randomness, so a fast digest is
    as safe as a slow password hash here and keeps authentication cheap.
    ``prefix`` (the first characters) lets operators tell tokens apart.
    ``admin`` implies every other scope.
    """

    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    scopes = ArrayField(models.CharField(max_length=16, choices=TokenScope.choices), default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes or TokenScope.ADMIN in self.scopes


class Event(models.Model):
    """A lifecycle event (``arxiv.tool.started``, ``*.rate_limited`` …), kept and published on Redis."""

    name = models.CharField(max_length=100, db_index=True)
    correlation_id = models.CharField(max_length=128, blank=True, db_index=True)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} @ {self.created_at:%Y-%m-%d %H:%M:%S}"
