"""Core models: API tokens, the stored event log and the lifecycle every workflow run shares."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from apps.core.scopes import SCOPE_LABELS


class TokenScope(models.TextChoices):
    """What a token may do. The labels (the API-token form's) and what each scope allows (docs/security.md)
    come from the one table, ``apps.core.scopes.SCOPE_TABLE``; ``admin`` implies every other scope.
    """

    READ = "read", SCOPE_LABELS["read"]
    UPSTREAM = "upstream", SCOPE_LABELS["upstream"]
    VERIFY = "verify", SCOPE_LABELS["verify"]
    WRITE = "write", SCOPE_LABELS["write"]
    PROPOSE = "propose", SCOPE_LABELS["propose"]
    ADMIN = "admin", SCOPE_LABELS["admin"]


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


class RunStatus(models.TextChoices):
    """The states every workflow run goes through (a workflow may add terminal states of its own).

    ``degraded`` is finished like ``succeeded`` and ``failed``: the upstream could not be reached (its
    calls failed for good, or the run's deadline cut it short) and the run answered from stored data
    instead — perhaps with nothing. It is never shown as "Succeeded" (issue 26); docs/api.md "Run
    statuses" says which runs end in which state.
    """

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    DEGRADED = "degraded", "Degraded"
    FAILED = "failed", "Failed"


# A run in one of these states is not finished: a worker will (still) execute it.
RUN_PENDING_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)


class TrackedRun(models.Model):
    """The lifecycle every workflow run shares (fact runs, arXiv search runs and later workflows).

    A worker claims a run (``executions`` + 1, ``heartbeat_at`` set) and beats while it executes;
    the periodic sweep (``apps.core.runs.runs_sweep``) re-enqueues a running run whose heartbeat
    went stale — its worker died — until ``CORTEX_RUN_MAX_EXECUTIONS``, then fails it with the
    reason. ``execute_task`` is the dotted path of the Celery task that executes a run of the subclass;
    ``deadline_setting`` names the setting of its deadline in seconds from submission (every execution
    counts from there, and the sweep ends a run past it: ``apps.core.runs``), empty for none.
    """

    execute_task: str = ""
    deadline_setting: str = ""

    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    executions = models.PositiveIntegerField(
        default=0, help_text="How many times a worker started this run (more than one: a worker was lost)."
    )
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life from the worker executing the run."
    )
    enqueued_at = models.DateTimeField(
        null=True, blank=True, default=timezone.now, help_text="When the run was last handed to the queue."
    )
    error = models.TextField(blank=True)
    error_type = models.CharField(max_length=64, blank=True)
    correlation_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def pending(self) -> bool:
        return self.status in RUN_PENDING_STATUSES


class UpstreamOutcome(models.TextChoices):
    """How one request to an upstream ended, as the budget chart counts it."""

    OK = "ok", "OK"
    THROTTLED = "throttled", "Throttled by the upstream (HTTP 429)"
    FAILED = "failed", "Failed (other upstream error)"
    REFUSED = "refused", "Refused by our limiter (would wait past the deadline)"


class UpstreamRequest(models.Model):
    """One request to a rate-limited upstream (a Wikidata service, arXiv, an MCP connector), written
    by the gate that spent the upstream's budget on it. Prometheus counters add up since a process
    started; "requests in the last hour against the limit" needs rows with a time.

    ``budget_per_hour`` is what the shared limiter allowed when the request was made, so the
    dashboard shows the budget in force rather than today's setting applied to old traffic.
    """

    upstream = models.CharField(max_length=100)
    outcome = models.CharField(max_length=16, choices=UpstreamOutcome.choices)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    waited_ms = models.FloatField(default=0.0, help_text="Time the shared limiter made the caller wait.")
    duration_ms = models.FloatField(help_text="The whole request, the wait included.")
    budget_per_hour = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["created_at", "upstream"], name="core_upstream_recent")]

    def __str__(self) -> str:
        return f"{self.upstream} {self.outcome} @ {self.created_at:%Y-%m-%d %H:%M:%S}"
