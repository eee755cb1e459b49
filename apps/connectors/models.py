"""The connector registry: remote tool servers, the tools they expose, and every call made.

Operators own the catalogue (names, tags, scopes, aliases); sync only records what
the upstream reports next to it (``upstream_*`` fields and the drift state), so a
sync never rewrites what an operator decided.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from apps.connectors.environment import validate_auth_secret_env, validate_endpoint_env
from apps.connectors.schema_refs import schema_refusal

TOOL_NAME_PATTERN = r"^[a-z0-9._-]{1,64}$"
TOOL_NAME_RE = re.compile(TOOL_NAME_PATTERN)
CONNECTOR_ID_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"

tool_name_validator = RegexValidator(
    TOOL_NAME_PATTERN, "Use 1–64 characters from a–z, 0–9, '.', '_' and '-'."
)
connector_id_validator = RegexValidator(
    CONNECTOR_ID_PATTERN, "Use 1–64 characters from a–z, 0–9 and '-', starting with a letter or digit."
)


def _field_checked(
    field_checks: Callable[..., None],
    exclude: Collection[str] | None,
    name: str,
    refusal: Callable[[], str | None],
    label: str,
) -> None:
    """Django's field checks, then ``refusal`` for field ``name`` when that field is checked and valid."""
    errors: dict[str, Any] = {}
    try:
        field_checks(exclude=exclude)
    except ValidationError as error:
        errors = error.update_error_dict(errors)
    if name not in (exclude or ()) and name not in errors:
        reason = refusal()
        if reason:
            errors[name] = [ValidationError(f"{label}: {reason}")]
    if errors:
        raise ValidationError(errors)


class Transport(models.TextChoices):
    MCP = "mcp", "MCP (streamable HTTP)"
    NATIVE = "native", "Native adapter"


class AuthType(models.TextChoices):
    NONE = "none", "None"
    BEARER = "bearer", "Bearer token"
    API_KEY = "api_key", "API key header"


class DriftState(models.TextChoices):
    UNSYNCED = "unsynced", "Not synced yet"
    IN_SYNC = "in_sync", "In sync"
    MISSING_UPSTREAM = "missing_upstream", "Declared but missing upstream"
    SCHEMA_CHANGED = "schema_changed", "Input schema changed upstream (awaiting approval)"
    DESCRIPTION_CHANGED = "description_changed", "Description changed upstream (awaiting approval)"


# Drift an operator should look at: a tool gone upstream, or an upstream change not yet approved.
DRIFTED_STATES = (DriftState.MISSING_UPSTREAM, DriftState.SCHEMA_CHANGED, DriftState.DESCRIPTION_CHANGED)


def connectors_switched_off() -> tuple[str, ...]:
    """Connectors whose feature flag (``CORTEX_CONNECTOR_FEATURE_FLAGS``) is off: as good as absent."""
    flags = settings.CORTEX_CONNECTOR_FEATURE_FLAGS
    return tuple(sorted(slug for slug, flag in flags.items() if not getattr(settings, flag, False)))


class ConnectorQuerySet(models.QuerySet["Connector"]):
    def enabled(self) -> ConnectorQuerySet:
        return self.filter(enabled=True)

    def switched_on(self) -> ConnectorQuerySet:
        return self.exclude(slug__in=connectors_switched_off())


class Connector(models.Model):
    """A remote tool server (MCP) or a built-in upstream (native adapter)."""

    slug = models.CharField(
        "id",
        max_length=64,
        unique=True,
        validators=[connector_id_validator],
        help_text="The service map's id.",
    )
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=64)
    transport = models.CharField(max_length=16, choices=Transport.choices)
    endpoint = models.URLField(max_length=500, help_text="Used when the endpoint variable is unset.")
    # Names, never values; which names a connector may read is apps.connectors.environment's rule.
    endpoint_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[validate_endpoint_env],
        help_text="Environment variable that overrides the endpoint.",
    )
    auth_type = models.CharField(max_length=16, choices=AuthType.choices, default=AuthType.NONE)
    auth_secret_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[validate_auth_secret_env],
        help_text="Environment variable holding the secret (never the secret).",
    )
    auth_header = models.CharField(max_length=100, blank=True, help_text="Header name for API-key auth.")
    scopes = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    ttl_seconds = models.PositiveIntegerField(default=1800, validators=[MinValueValidator(1)])
    enabled = models.BooleanField(default=True)
    metadata = models.JSONField(default=dict, blank=True)
    rate_limit_interval = models.FloatField(
        null=True, blank=True, help_text="Seconds between calls, shared by every process (empty = no limit)."
    )
    rate_limit_burst = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    timeout_seconds = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.1)], help_text="Empty: the HTTP read timeout."
    )
    text_error_patterns = models.JSONField(
        default=list,
        blank=True,
        help_text='Upstream failures that arrive as ordinary text: [{"pattern": regex, "retryable": bool}].',
    )
    position = models.PositiveIntegerField(default=0)
    undeclared_upstream_tools = ArrayField(
        models.CharField(max_length=200), default=list, blank=True, help_text="Found upstream, not declared."
    )
    last_synced_at = models.DateTimeField(null=True, blank=True)
    last_sync_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ConnectorQuerySet.as_manager()

    class Meta:
        ordering = ["position", "slug"]

    def __str__(self) -> str:
        return self.slug

    def clean_fields(self, exclude: Collection[str] | None = None) -> None:
        """No endpoint in loopback, private, link-local or metadata ranges unless the operator allows it.

        A field check (not ``clean``) so that forms without the field never get its error.
        """
        from apps.core.outbound import url_refusal

        _field_checked(
            super().clean_fields, exclude, "endpoint", lambda: url_refusal(self.endpoint), "Endpoint refused"
        )


class RemoteToolQuerySet(models.QuerySet["RemoteTool"]):
    def published(self) -> RemoteToolQuerySet:
        """Tools of enabled connectors, as agents see them."""
        return (
            self.filter(connector__enabled=True)
            .exclude(connector__slug__in=connectors_switched_off())
            .select_related("connector")
        )

    def drifted(self) -> RemoteToolQuerySet:
        return self.filter(drift__in=DRIFTED_STATES)

    def pending_approval(self) -> RemoteToolQuerySet:
        """Tools whose upstream changed description or input schema, held until an operator approves."""
        return self.filter(pending_since__isnull=False)


class RemoteTool(models.Model):
    """One tool under its canonical name; ``upstream_name`` is what the connector calls it now."""

    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=64, unique=True, validators=[tool_name_validator])
    description = models.TextField(blank=True)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    scopes = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    position = models.PositiveIntegerField(default=0)
    upstream_name = models.CharField(max_length=200, blank=True, help_text="Empty: the canonical name.")
    declared_input_schema = models.JSONField(
        null=True, blank=True, help_text="JSON Schema of the arguments, as the manifest declares it."
    )
    upstream_input_schema = models.JSONField(
        null=True,
        blank=True,
        help_text="JSON Schema of the arguments, as the upstream reported it at the last sync.",
    )
    annotations = models.JSONField(default=dict, blank=True)
    upstream_description = models.TextField(blank=True)
    drift = models.CharField(max_length=20, choices=DriftState.choices, default=DriftState.UNSYNCED)
    last_seen_upstream_at = models.DateTimeField(null=True, blank=True)
    # The rug-pull guard: once a tool has been seen upstream, a changed description or input schema is
    # kept here, untrusted, until an operator approves it; calls and listings keep the approved
    # ``upstream_*`` values meanwhile.
    pending_description = models.TextField(blank=True)
    pending_input_schema = models.JSONField(null=True, blank=True)
    pending_changes = models.JSONField(
        default=list, blank=True, help_text="What changed upstream and is awaiting approval, in words."
    )
    pending_since = models.DateTimeField(null=True, blank=True)

    objects = RemoteToolQuerySet.as_manager()

    class Meta:
        ordering = ["connector__position", "connector__slug", "position", "name"]
        indexes = [models.Index(fields=["connector", "position"], name="connectors_tool_position")]

    def __str__(self) -> str:
        return self.name

    def clean_fields(self, exclude: Collection[str] | None = None) -> None:
        """A declared input schema may reference only itself: CortexWeb never fetches a ``$ref``."""
        _field_checked(
            super().clean_fields,
            exclude,
            "declared_input_schema",
            lambda: schema_refusal(self.declared_input_schema),
            "Input schema refused",
        )

    @property
    def upstream_call_name(self) -> str:
        return self.upstream_name or self.name

    @property
    def input_schema(self) -> dict | None:
        """What arguments are checked against: the upstream's own schema once synced."""
        return self.upstream_input_schema or self.declared_input_schema


class SyncTrigger(models.TextChoices):
    """Why a sync ran."""

    SCHEDULE = "schedule", "Schedule (Celery beat)"
    LIST_CHANGED = "list_changed", "Upstream sent tools/list_changed"
    UNKNOWN_TOOL = "unknown_tool", "Upstream answered 'unknown tool'"
    MANUAL = "manual", "Operator (command, admin or API)"


class ConnectorSyncQuerySet(models.QuerySet["ConnectorSync"]):
    def with_drift(self) -> ConnectorSyncQuerySet:
        """Syncs that found something: a tool added, removed, renamed or changed upstream."""
        return self.exclude(added=[], removed=[], renamed={}, changed={})


class ConnectorSync(models.Model):
    """One sync of a connector's tools and what it found compared with the sync before it."""

    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="syncs")
    trigger = models.CharField(max_length=20, choices=SyncTrigger.choices)
    ok = models.BooleanField()
    error = models.TextField(blank=True)
    upstream_tools = models.PositiveIntegerField(default=0)
    added = ArrayField(
        models.CharField(max_length=200), default=list, blank=True, help_text="Upstream names new this sync."
    )
    removed = ArrayField(
        models.CharField(max_length=64),
        default=list,
        blank=True,
        help_text="Declared tools that went missing upstream this sync.",
    )
    renamed = models.JSONField(default=dict, blank=True, help_text="Canonical name → its new upstream name.")
    changed = models.JSONField(
        default=dict, blank=True, help_text="Canonical name → what changed upstream (held for approval)."
    )
    report = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(db_index=True)
    duration_ms = models.FloatField(default=0)

    objects = ConnectorSyncQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["connector", "-started_at"], name="connectorsync_recent")]

    def __str__(self) -> str:
        return f"{self.connector} {self.started_at:%Y-%m-%d %H:%M:%S} ({self.trigger})"

    @property
    def drifted(self) -> bool:
        return bool(self.added or self.removed or self.renamed or self.changed)

    def findings(self) -> str:
        """What this sync found, in a line (the admin and the dashboard show it)."""
        parts = []
        if self.added:
            parts.append(f"added: {', '.join(self.added)}")
        if self.removed:
            parts.append(f"removed: {', '.join(self.removed)}")
        if self.renamed:
            parts.append("renamed: " + ", ".join(f"{name} → {new}" for name, new in self.renamed.items()))
        if self.changed:
            parts.append(
                "changed (awaiting approval): "
                + "; ".join(f"{name}: {', '.join(changes)}" for name, changes in self.changed.items())
            )
        if not self.ok:
            parts.append(f"failed: {self.error}")
        return " · ".join(parts) or "no change"


class ToolAlias(models.Model):
    """Another name for a tool (an old or current upstream name); renames are data, not code."""

    tool = models.ForeignKey(RemoteTool, on_delete=models.CASCADE, related_name="aliases")
    name = models.CharField(max_length=200, unique=True)

    class Meta:
        ordering = ["tool", "name"]
        verbose_name_plural = "tool aliases"

    def __str__(self) -> str:
        return f"{self.name} → {self.tool.name}"


class ToolCallStatus(models.TextChoices):
    OK = "ok", "OK"
    UPSTREAM_ERROR = "upstream_error", "Upstream error"
    RATE_LIMITED = "rate_limited", "Rate limited"
    INVALID_ARGUMENTS = "invalid_arguments", "Invalid arguments"
    DENIED = "denied", "Denied (token or scope)"
    FAILED = "failed", "Failed"


class CallTransport(models.TextChoices):
    """How the caller reached CortexWeb: the REST API, the MCP server (HTTP or stdio) or a tool page."""

    REST = "rest", "REST /v1/"
    MCP_HTTP = "mcp-http", "MCP over HTTP"
    MCP_STDIO = "mcp-stdio", "MCP over stdio"
    PAGE = "page", "A tool page's \"Try this tool\" (staff)"


class ToolCall(models.Model):
    """One dispatched call: what was asked, of whom, how it ended and how long it took.

    Calls of the registry's tools have ``tool``; calls of CortexWeb's own MCP tools
    (``facts.query`` …) have none and the connector ``cortexweb``.
    """

    tool = models.ForeignKey(RemoteTool, null=True, on_delete=models.SET_NULL, related_name="calls")
    tool_name = models.CharField(max_length=64)
    requested_name = models.CharField(max_length=200)
    upstream_name = models.CharField(max_length=200)
    connector_slug = models.CharField(max_length=64)
    status = models.CharField(max_length=20, choices=ToolCallStatus.choices)
    retryable = models.BooleanField(default=False)
    duration_ms = models.FloatField()
    error = models.TextField(blank=True)
    correlation_id = models.CharField(max_length=64, blank=True)
    token = models.ForeignKey("core.ApiToken", null=True, blank=True, on_delete=models.SET_NULL)
    transport = models.CharField(max_length=16, choices=CallTransport.choices, default=CallTransport.REST)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["connector_slug", "tool_name", "-created_at"], name="toolcall_lookup"),
            # The dashboard's errors of the last day: only the failed calls, read without the table.
            models.Index(
                fields=["created_at"],
                include=["status"],
                condition=~models.Q(status="ok"),
                name="toolcall_failed_recent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} {self.status}"
