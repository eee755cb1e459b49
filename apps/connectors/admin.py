"""Admin of the connector registry: connectors, their tools and aliases, calls; manifest import/export.

Operators own names, tags, scopes, aliases and connection settings; what a sync records
(upstream names' schemas and descriptions, drift, undeclared tools, sync times) is shown
read-only. Actions and the import view call the services and the gateway, nothing else.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from apps.connectors.forms import ManifestApplyForm, ManifestUploadForm, RemoteToolForm, ToolAliasForm
from apps.connectors.gateway import connector_sync, connector_test_connection, tool_changes_approve
from apps.connectors.manifest import dumps, manifest_diff
from apps.connectors.models import DRIFTED_STATES, Connector, ConnectorSync, RemoteTool, ToolAlias, ToolCall
from apps.connectors.services import (
    CONNECTOR_SYNC_FIELDS,
    TOOL_SYNC_FIELDS,
    manifest_changes,
    manifest_import,
    manifest_validated,
    registry_export,
)
from apps.core.admin_mixins import (
    JSON_WIDGETS,
    ChangelistSummaryMixin,
    ImportLinkMixin,
    SummaryField,
    YesNoFilter,
    json_display,
    warning_flag,
)
from apps.core.errors import ApplicationError, ValidationFailed

MANIFEST_FILENAME = "connectors.manifest.json"
TOOL_SYNC_JSON = [
    "upstream_input_schema_json",
    "annotations_json",
    "pending_changes_json",
    "pending_input_schema_json",
]


def manifest_download() -> HttpResponse:
    """The whole registry as the manifest file."""
    response = HttpResponse(dumps(registry_export()), content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{MANIFEST_FILENAME}"'
    return response


def alias_links(tool: RemoteTool) -> str:
    """The tool's aliases (prefetched) as text, linking to the tool's page where they are edited."""
    names = ", ".join(alias.name for alias in tool.aliases.all())
    if tool.pk is None:
        return "—"
    url = reverse("admin:connectors_remotetool_change", args=[tool.pk])
    return format_html('{} <a href="{}">edit aliases</a>', names or "—", url)


def connection_summary(result: dict[str, Any]) -> str:
    """One line from ``connector_test_connection``'s result."""
    if "tools" in result:  # native: every tool needs an adapter
        missing = [tool["name"] for tool in result["tools"] if not tool["adapter"]]
        if missing:
            return f"no adapter for {', '.join(missing)}."
        return f"every tool has an adapter ({len(result['tools'])})."
    endpoint = result.get("endpoint", "")
    if not result.get("ok"):
        return f"cannot reach {endpoint}: {result.get('error', 'unknown error')}"
    return f"reachable at {endpoint}: {result.get('toolCount')} tools upstream, {result.get('latencyMs')} ms."


class HasDriftFilter(YesNoFilter):
    """Connectors whose last sync found declared tools missing or changed, or undeclared ones."""

    title = "drift"
    parameter_name = "has_drift"
    yes_label, no_label = "Has drift", "No drift"

    def condition(self) -> Q:
        return Q(Exists(RemoteTool.objects.drifted().filter(connector=OuterRef("pk")))) | ~Q(
            undeclared_upstream_tools=[]
        )


class RemoteToolInline(admin.TabularInline):
    model = RemoteTool
    form = RemoteToolForm
    extra = 0
    fields = ["name", "tags", "scopes", "description", "upstream_name", "drift", "aliases_text", "position"]
    readonly_fields = ["drift", "aliases_text"]
    show_change_link = True
    ordering = ["position", "name"]
    formfield_overrides = {models.TextField: {"widget": forms.Textarea(attrs={"rows": 2, "cols": 40})}}

    def get_queryset(self, request: HttpRequest) -> QuerySet[RemoteTool]:
        return super().get_queryset(request).prefetch_related("aliases")

    @admin.display(description="aliases")
    def aliases_text(self, tool: RemoteTool) -> str:
        return alias_links(tool)


class ConnectorSyncInline(admin.TabularInline):
    """The connector's syncs that found something or failed, newest first (records, never edited);
    every sync is listed under "Connector syncs"."""

    model = ConnectorSync
    fields = ["started_at", "trigger", "ok", "upstream_tools", "findings", "duration_ms"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    ordering = ["-started_at"]
    verbose_name_plural = "syncs that found drift or failed"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ConnectorSync]:
        # Syncs with nothing to say (most of them: one every interval) would bury the few that matter.
        queryset = super().get_queryset(request)
        return queryset.filter(Q(ok=False) | Q(pk__in=ConnectorSync.objects.with_drift().values("pk")))

    @admin.display(description="found")
    def findings(self, sync: ConnectorSync) -> str:
        return sync.findings()


@admin.register(Connector)
class ConnectorAdmin(ImportLinkMixin, admin.ModelAdmin):
    list_display = [
        "slug",
        "name",
        "version",
        "transport",
        "enabled",
        "tool_count",
        "drift_summary",
        "last_synced_at",
    ]
    list_display_links = ["slug", "name"]
    list_filter = ["transport", "enabled", HasDriftFilter]
    search_fields = ["slug", "name", "tools__name"]
    readonly_fields = [*CONNECTOR_SYNC_FIELDS, "created_at", "updated_at"]
    inlines = [RemoteToolInline, ConnectorSyncInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}, **JSON_WIDGETS}
    actions = ["sync_tools", "approve_upstream_changes", "test_connection", "export_manifest"]
    fieldsets = [
        (None, {"fields": ["slug", "name", "version", "transport", "enabled", "position"]}),
        (
            "Endpoint and auth",
            {"fields": ["endpoint", "endpoint_env", "auth_type", "auth_secret_env", "auth_header"]},
        ),
        ("Catalogue", {"fields": ["scopes", "ttl_seconds", "metadata"]}),
        (
            "Calls",
            {"fields": ["rate_limit_interval", "rate_limit_burst", "timeout_seconds", "text_error_patterns"]},
        ),
        ("Last sync (read-only)", {"fields": [*CONNECTOR_SYNC_FIELDS, "created_at", "updated_at"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Connector]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                tool_total=Count("tools", distinct=True),
                drifted_total=Count("tools", filter=Q(tools__drift__in=DRIFTED_STATES), distinct=True),
            )
        )

    @admin.display(description="tools", ordering="tool_total")
    def tool_count(self, connector: Connector) -> int:
        return connector.tool_total  # type: ignore[attr-defined]

    @admin.display(description="drift")
    def drift_summary(self, connector: Connector) -> str:
        parts = []
        if connector.drifted_total:  # type: ignore[attr-defined]
            parts.append(f"{connector.drifted_total} drifted")  # type: ignore[attr-defined]
        if connector.undeclared_upstream_tools:
            parts.append(f"{len(connector.undeclared_upstream_tools)} undeclared upstream")
        if connector.last_sync_error:
            parts.append("last sync failed")
        return ", ".join(parts) or "—"

    # --- Actions -------------------------------------------------------------------------

    @admin.action(description="Sync tools from upstream")
    def sync_tools(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        for connector in queryset:
            try:
                report = connector_sync(slug=connector.slug)
            except ApplicationError as error:
                self.message_user(request, f"{connector.slug}: {error.message}", level=messages.ERROR)
            else:
                self.message_user(request, f"{connector.slug}: {report.summary()}", level=messages.SUCCESS)

    @admin.action(description="Approve the tools' upstream changes awaiting approval")
    def approve_upstream_changes(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        tools = (
            RemoteTool.objects.pending_approval().filter(connector__in=queryset).select_related("connector")
        )
        approve_pending(self, request, tools)

    @admin.action(description="Test connection")
    def test_connection(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        for connector in queryset:
            try:
                result = connector_test_connection(slug=connector.slug)
            except ApplicationError as error:
                self.message_user(request, f"{connector.slug}: {error.message}", level=messages.ERROR)
            else:
                level = messages.SUCCESS if result.get("ok") else messages.ERROR
                self.message_user(request, f"{connector.slug}: {connection_summary(result)}", level=level)

    @admin.action(description="Export manifest (the whole registry)")
    def export_manifest(self, request: HttpRequest, queryset: QuerySet[Connector]) -> HttpResponse:
        return manifest_download()

    # --- Import and export views ---------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        own = [
            path("import/", self.admin_site.admin_view(self.import_view), name="connectors_connector_import"),
            path("export/", self.admin_site.admin_view(self.export_view), name="connectors_connector_export"),
        ]
        return own + super().get_urls()

    def _can_import(self, request: HttpRequest) -> bool:
        # An import creates, changes and deletes connectors and tools.
        return all(
            request.user.has_perm(f"connectors.{action}_{model}")
            for action in ("add", "change", "delete")
            for model in ("connector", "remotetool")
        )

    def export_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return manifest_download()

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload or paste → validate (every error with its path) → preview → apply."""
        if not self._can_import(request):
            raise PermissionDenied
        context: dict[str, Any] = {"errors": [], "changes": None, "diff": None, "apply_form": None}
        upload_form = ManifestUploadForm()
        if request.method == "POST" and "apply" in request.POST:
            apply_form = ManifestApplyForm(request.POST)
            if apply_form.is_valid():
                try:
                    data = manifest_validated(text=apply_form.cleaned_data["manifest"])
                    changes = manifest_import(data=data, actor=request.user.get_username())
                except ValidationFailed as error:
                    context["message"] = error.message
                    context["errors"] = error.details.get("errors", [])
                else:
                    self.message_user(request, f"Manifest imported: {changes.summary()}.", messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:connectors_connector_changelist"))
            else:
                context["message"] = "The manifest to apply was missing; upload it again."
        elif request.method == "POST":
            upload_form = ManifestUploadForm(request.POST, request.FILES)
            if upload_form.is_valid():
                text = upload_form.cleaned_data["text"]
                try:
                    data = manifest_validated(text=text)
                except ValidationFailed as error:
                    context["message"] = error.message
                    context["errors"] = error.details.get("errors", [])
                else:
                    context["changes"] = manifest_changes(data=data)
                    context["diff"] = manifest_diff(registry_export(), data)  # old → new per field
                    context["apply_form"] = ManifestApplyForm(initial={"manifest": text})
        context.update(
            self.admin_site.each_context(request),
            title="Import connector manifest",
            opts=self.opts,
            upload_form=upload_form,
        )
        return TemplateResponse(request, "admin/connectors/connector/import.html", context)


def approve_pending(model_admin: admin.ModelAdmin, request: HttpRequest, tools: QuerySet[RemoteTool]) -> None:
    """Approve each tool's held upstream change, saying which were approved and which had none."""
    if not request.user.has_perm("connectors.change_remotetool"):
        raise PermissionDenied
    for tool in tools:
        try:
            changes = tool_changes_approve(tool=tool, actor=request.user.get_username())
        except ApplicationError as error:
            model_admin.message_user(request, error.message, level=messages.WARNING)
        else:
            model_admin.message_user(
                request, f"{tool.name}: approved ({'; '.join(changes)}).", level=messages.SUCCESS
            )


class ToolAliasInline(admin.TabularInline):
    model = ToolAlias
    form = ToolAliasForm
    extra = 1


@admin.register(RemoteTool)
class RemoteToolAdmin(ChangelistSummaryMixin, admin.ModelAdmin):
    form = RemoteToolForm
    list_display = [
        "name",
        "connector",
        "upstream_name",
        "drift_state",
        "pending_changes_text",
        "tags",
        "scopes",
        "alias_names",
    ]
    list_filter = ["drift", "connector"]
    actions = ["approve_upstream_changes"]
    summary_fields = (SummaryField("drift", "Drift", warn=tuple(DRIFTED_STATES)),)
    list_select_related = ["connector"]
    search_fields = ["name", "upstream_name", "description", "aliases__name"]
    readonly_fields = [*TOOL_SYNC_FIELDS, *TOOL_SYNC_JSON]
    formfield_overrides = JSON_WIDGETS
    inlines = [ToolAliasInline]
    fieldsets = [
        (None, {"fields": ["connector", "name", "description", "tags", "scopes", "position"]}),
        ("Upstream", {"fields": ["upstream_name", "declared_input_schema"]}),
        (
            "Last sync (read-only)",
            {
                "fields": [
                    "drift",
                    "last_seen_upstream_at",
                    "upstream_description",
                    "upstream_input_schema_json",
                    "annotations_json",
                ]
            },
        ),
        (
            "Upstream change awaiting approval (read-only; approve with the list's action)",
            {
                "fields": [
                    "pending_changes_json",
                    "pending_since",
                    "pending_description",
                    "pending_input_schema_json",
                ]
            },
        ),
    ]
    # What sync recorded, as formatted blocks (an empty one in words).
    upstream_input_schema_json = json_display("upstream_input_schema", "Upstream input schema")
    annotations_json = json_display("annotations", "Annotations")
    pending_changes_json = json_display("pending_changes", "Pending changes")
    pending_input_schema_json = json_display("pending_input_schema", "Pending input schema")

    def get_queryset(self, request: HttpRequest) -> QuerySet[RemoteTool]:
        return super().get_queryset(request).prefetch_related("aliases")

    @admin.display(description="drift", ordering="drift")
    def drift_state(self, tool: RemoteTool) -> str:
        if tool.drift in DRIFTED_STATES:
            return format_html("{} {}", warning_flag(True), tool.get_drift_display())
        return tool.get_drift_display()

    @admin.display(description="awaiting approval")
    def pending_changes_text(self, tool: RemoteTool) -> str:
        return "; ".join(tool.pending_changes) or "—"

    @admin.display(description="aliases")
    def alias_names(self, tool: RemoteTool) -> str:
        return ", ".join(alias.name for alias in tool.aliases.all())

    @admin.action(description="Approve upstream changes (description, input schema)")
    def approve_upstream_changes(self, request: HttpRequest, queryset: QuerySet[RemoteTool]) -> None:
        approve_pending(self, request, queryset.select_related("connector"))


@admin.register(ConnectorSync)
class ConnectorSyncAdmin(ChangelistSummaryMixin, admin.ModelAdmin):
    """Each sync and what it found: the registry's drift history (records, never edited)."""

    list_display = ["started_at", "connector", "trigger", "ok", "upstream_tools", "findings", "duration_ms"]
    list_filter = ["trigger", "ok", "connector"]
    summary_fields = (SummaryField("trigger", "Trigger"),)
    list_select_related = ["connector"]
    search_fields = ["connector__slug", "error"]
    date_hierarchy = "started_at"
    # What the sync found, as formatted blocks (an empty one in words) rather than one line of JSON.
    exclude = ["renamed", "changed", "report"]
    readonly_fields = ["renamed_json", "changed_json", "report_json"]
    renamed_json = json_display("renamed", "renamed")
    changed_json = json_display("changed", "changed")
    report_json = json_display("report", "report")

    @admin.display(description="found")
    def findings(self, sync: ConnectorSync) -> str:
        return sync.findings()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ConnectorSync | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ConnectorSync | None = None) -> bool:
        return False


@admin.register(ToolCall)
class ToolCallAdmin(ChangelistSummaryMixin, admin.ModelAdmin):
    """Call records are evidence: viewable, never edited."""

    list_display = [
        "created_at",
        "tool_name",
        "requested_name",
        "connector_slug",
        "status",
        "retryable",
        "duration_ms",
        "correlation_id",
    ]
    list_filter = ["status", "connector_slug", "retryable"]
    summary_fields = (
        SummaryField("status", "Status", warn=("upstream_error", "rate_limited", "denied", "failed")),
    )
    search_fields = ["tool_name", "requested_name", "upstream_name", "correlation_id", "error"]
    list_select_related = ["tool", "token"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ToolCall | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ToolCall | None = None) -> bool:
        return False
