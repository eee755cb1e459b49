"""Admin of the knowledge base: bases, domains, sources and entries; pack import and export.

Entries are imported from pack files (JSON or Markdown) through ``services.entries_import``, which
validates the whole file first: a file with errors lists every error and imports nothing. Export
writes entries in the seed's ``knowledge_entry`` shape, so an exported file imports again. Embeddings
are never shown or edited: saving an entry here re-embeds it when its topic or content changed.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from apps.core.admin_mixins import ImportLinkMixin, YesNoFilter, change_link, truncated
from apps.core.errors import ValidationFailed
from apps.knowledge import selectors, services
from apps.knowledge.forms import EntryImportForm
from apps.knowledge.models import KnowledgeBase, KnowledgeDomain, KnowledgeEntry, KnowledgeSource, SourceType
from apps.ontology.browse import classes_about_entry

EXPORT_FILENAME = "knowledge-entries.json"


# --- Export -------------------------------------------------------------------------------------


def entry_record(entry: KnowledgeEntry) -> dict[str, Any]:
    """An entry in the seed's ``knowledge_entry`` shape (without the embedding, which is recomputed)."""
    record: dict[str, Any] = {
        "id": entry.entry_id,
        "topic": entry.topic,
        "content": entry.content,
        "source": entry.source,
    }
    if entry.url:
        record["url"] = entry.url
    record["related"] = list(entry.related)
    record["tags"] = list(entry.tags)
    record["confidence"] = entry.confidence
    if entry.last_verified:
        record["last_verified"] = entry.last_verified.isoformat()
    return record


def entries_download(entries: QuerySet[KnowledgeEntry], filename: str = EXPORT_FILENAME) -> HttpResponse:
    """``{"entries": [...]}`` as a JSON file download, ordered by entry id."""
    body = json.dumps(
        {"entries": [entry_record(entry) for entry in entries.order_by("entry_id")]},
        indent=2,
        ensure_ascii=False,
    )
    response = HttpResponse(body + "\n", content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- Bases, domains, sources ------------------------------------------------------------------


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(admin.ModelAdmin):
    list_display = ["name", "storage_path", "domain_count", "created_at"]
    search_fields = ["name", "description"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeBase]:
        return super().get_queryset(request).annotate(domain_total=Count("domains"))

    @admin.display(description="domains", ordering="domain_total")
    def domain_count(self, base: KnowledgeBase) -> int:
        return base.domain_total  # type: ignore[attr-defined]


@admin.register(KnowledgeDomain)
class KnowledgeDomainAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "base",
        "entry_count",
        "source_count",
        "update_frequency",
        "embedding_model",
        "export_link",
    ]
    list_filter = ["base", "update_frequency"]
    list_select_related = ["base"]
    search_fields = ["name", "description"]
    readonly_fields = ["created_at"]
    actions = ["export_entries"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeDomain]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                entry_total=Count("entries", distinct=True), source_total=Count("sources", distinct=True)
            )
        )

    @admin.display(description="entries", ordering="entry_total")
    def entry_count(self, domain: KnowledgeDomain) -> str:
        url = reverse("admin:knowledge_knowledgeentry_changelist") + "?" + urlencode({"domain": domain.pk})
        return format_html('<a href="{}">{}</a>', url, domain.entry_total)  # type: ignore[attr-defined]

    @admin.display(description="sources", ordering="source_total")
    def source_count(self, domain: KnowledgeDomain) -> int:
        return domain.source_total  # type: ignore[attr-defined]

    @admin.display(description="export")
    def export_link(self, domain: KnowledgeDomain) -> str:
        url = reverse("admin:knowledge_knowledgedomain_export", args=[domain.pk])
        return format_html('<a href="{}">{}.json</a>', url, domain.name)

    @admin.action(description="Export all entries of the selected domains (JSON)")
    def export_entries(self, request: HttpRequest, queryset: QuerySet[KnowledgeDomain]) -> HttpResponse:
        names = sorted(queryset.values_list("name", flat=True))
        if len(names) == 1:
            return entries_download(selectors.entries_for_export(domain=names[0]), f"{names[0]}.json")
        return entries_download(KnowledgeEntry.objects.filter(domain__name__in=names))

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<int:domain_id>/export/",
                self.admin_site.admin_view(self.export_view),
                name="knowledge_knowledgedomain_export",
            )
        ]
        return own + super().get_urls()

    def export_view(self, request: HttpRequest, domain_id: int) -> HttpResponse:
        if not (self.has_view_permission(request) and request.user.has_perm("knowledge.view_knowledgeentry")):
            raise PermissionDenied
        domain = get_object_or_404(KnowledgeDomain, pk=domain_id)
        return entries_download(selectors.entries_for_export(domain=domain.name), f"{domain.name}.json")


@admin.register(KnowledgeSource)
class KnowledgeSourceAdmin(admin.ModelAdmin):
    list_display = ["name", "domain", "type", "priority", "location", "entry_count"]
    list_filter = ["type", "domain"]
    list_select_related = ["domain"]
    search_fields = ["name", "location", "domain__name"]
    ordering = ["domain__name", "priority", "name"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeSource]:
        return super().get_queryset(request).annotate(entry_total=Count("entries"))

    @admin.display(description="entries", ordering="entry_total")
    def entry_count(self, source: KnowledgeSource) -> int:
        return source.entry_total  # type: ignore[attr-defined]


# --- Entries --------------------------------------------------------------------------------------


class TagFilter(admin.SimpleListFilter):
    """Entries carrying a tag."""

    title = "tag"
    parameter_name = "tag"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        tags = {tag for tags in KnowledgeEntry.objects.values_list("tags", flat=True) for tag in tags}
        return [(tag, tag) for tag in sorted(tags)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[KnowledgeEntry]) -> QuerySet[KnowledgeEntry]:
        if self.value():
            return queryset.filter(tags__contains=[self.value()])
        return queryset


class EmbeddedFilter(YesNoFilter):
    """Entries whose embedding is missing or older than their text."""

    title = "embedding"
    parameter_name = "embedded"
    yes_label, no_label = "Up to date", "Missing or stale"

    def condition(self) -> Q:
        return ~Q(pk__in=KnowledgeEntry.objects.needing_embedding().values("pk"))


@admin.register(KnowledgeEntry)
class KnowledgeEntryAdmin(ImportLinkMixin, admin.ModelAdmin):
    list_display = ["entry_id", "topic_short", "domain_link", "source_short", "confidence", "last_verified"]
    list_display_links = ["entry_id", "topic_short"]
    list_filter = ["domain", TagFilter, "knowledge_source__type", EmbeddedFilter, "last_verified"]
    list_select_related = ["domain"]
    search_fields = ["=entry_id", "topic", "content", "source"]
    search_help_text = "An entry id (exact), or words of the topic, content or source."
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    actions = ["export_entries"]
    readonly_fields = [
        "embedded", "content_hash", "embedded_hash", "created_at", "updated_at", "ontology_classes"
    ]  # fmt: skip
    fieldsets = [
        (None, {"fields": ["entry_id", "domain", "knowledge_source", "topic", "content"]}),
        ("Provenance", {"fields": ["source", "url", "confidence", "last_verified"]}),
        ("Links", {"fields": ["tags", "related", "ontology_classes"]}),
        ("Embedding (read-only)", {"fields": ["embedded", "content_hash", "embedded_hash"]}),
        ("Record", {"fields": ["created_at", "updated_at"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeEntry]:
        # The vector is large and never shown.
        return super().get_queryset(request).defer("embedding")

    @admin.display(description="topic", ordering="topic")
    def topic_short(self, entry: KnowledgeEntry) -> str:
        return truncated(entry.topic, 60)

    @admin.display(description="source", ordering="source")
    def source_short(self, entry: KnowledgeEntry) -> str:
        return truncated(entry.source, 30)

    @admin.display(description="domain", ordering="domain__name")
    def domain_link(self, entry: KnowledgeEntry) -> str:
        return change_link(KnowledgeDomain, entry.domain_id, entry.domain.name)

    @admin.display(description="ontology classes about it")
    def ontology_classes(self, entry: KnowledgeEntry) -> str:
        """The classes whose ontology notes name this entry (their ``knowledge-entries``), linked."""
        refs = classes_about_entry(entry.entry_id) if entry.entry_id else []
        if not refs:
            return "—"
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            ((reverse("ontology:class_detail", args=[ref.local_name]), ref.term) for ref in refs),
        )

    @admin.display(description="embedding up to date", boolean=True)
    def embedded(self, entry: KnowledgeEntry) -> bool:
        return bool(entry.pk and entry.embedded_hash and entry.embedded_hash == entry.content_hash)

    def save_model(self, request: HttpRequest, obj: KnowledgeEntry, form: Any, change: bool) -> None:
        obj.content_hash = services.ParsedEntry(
            entry_id=obj.entry_id, topic=obj.topic, content=obj.content, source=obj.source
        ).content_hash
        super().save_model(request, obj, form, change)
        services.entries_embed(domain_name=obj.domain.name)

    @admin.action(description="Export the selected entries (JSON)")
    def export_entries(self, request: HttpRequest, queryset: QuerySet[KnowledgeEntry]) -> HttpResponse:
        return entries_download(queryset.select_related(None))

    # --- Import ------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="knowledge_knowledgeentry_import",
            )
        ]
        return own + super().get_urls()

    def _can_import(self, request: HttpRequest) -> bool:
        return self.has_add_permission(request) and self.has_change_permission(request)

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload a pack into a domain → validate (every error listed) → import and embed."""
        if not self._can_import(request):
            raise PermissionDenied
        context: dict[str, Any] = {"errors": [], "message": ""}
        form = EntryImportForm()
        if request.method == "POST":
            form = EntryImportForm(request.POST, request.FILES)
            if form.is_valid():
                data = form.cleaned_data
                try:
                    summary = self._import(data)
                except ValidationFailed as error:
                    context["message"] = error.message
                    context["errors"] = error.details.get("errors", [])
                else:
                    self.message_user(request, f"Imported {summary.summary()}.", messages.SUCCESS)
                    domain = KnowledgeDomain.objects.get(name=summary.domain)
                    changelist = reverse("admin:knowledge_knowledgeentry_changelist")
                    return HttpResponseRedirect(f"{changelist}?{urlencode({'domain': domain.pk})}")
        context.update(
            self.admin_site.each_context(request),
            title="Import knowledge entries",
            opts=self.opts,
            form=form,
        )
        return TemplateResponse(request, "admin/knowledge/knowledgeentry/import.html", context)

    def _import(self, data: dict[str, Any]) -> services.ImportSummary:
        markdown = data["format"] == "markdown"
        if markdown:
            pack = services.pack_parse_markdown(
                data["text"], default_source=data["source_name"] or data["stem"]
            )
        else:
            pack = services.pack_parse_json(data["text"])
        return services.entries_import(
            domain_name=data["domain_name"],
            pack=pack,
            source_name=data["source_name"] or data["stem"],
            location=f"upload:{data['file_name']}",
            source_type=SourceType.MARKDOWN if markdown else SourceType.JSON_FILE,
        )
