"""Admin of grounding: the settings (one row), the grounding agents, and the read-only log of
grounded messages and verifications.

Verifications are reviewed on the review queue (``/verifications``), where approving, rejecting
and correcting go through ``services.verification_review``; here they are evidence only.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from apps.core.admin_mixins import ReadOnlyAdminMixin, SingletonAdminMixin, change_link, pretty_json
from apps.grounding.forms import GroundingAgentForm, GroundingSettingsForm
from apps.grounding.models import GroundingAgent, GroundingMessage, GroundingSettings, Verification


def _review_page_link(verification: Verification) -> str:
    url = reverse("grounding:verification_detail", args=[verification.pk])
    return format_html('<a href="{}">{}</a>', url, url)


@admin.register(GroundingSettings)
class GroundingSettingsAdmin(SingletonAdminMixin, admin.ModelAdmin):
    """The single configuration row (``GroundingSettings.current()``, the seed's defaults)."""

    form = GroundingSettingsForm
    readonly_fields = ["updated_at"]
    fieldsets = [
        (None, {"fields": ["enabled", "injection_mode", "confidence_threshold"]}),
        ("Claims", {"fields": ["trigger_patterns", "claim_patterns", "min_claim_length"]}),
        (None, {"fields": ["updated_at"]}),
    ]


@admin.register(GroundingAgent)
class GroundingAgentAdmin(admin.ModelAdmin):
    form = GroundingAgentForm
    list_display = ["name", "domain", "enabled", "keywords", "applies_to", "source_count"]
    list_filter = ["enabled", "domain"]
    list_select_related = ["domain"]
    search_fields = ["name", "description", "domain__name"]
    filter_horizontal = ["sources"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[GroundingAgent]:
        return super().get_queryset(request).prefetch_related("sources")

    @admin.display(description="keywords")
    def keywords(self, agent: GroundingAgent) -> str:
        return ", ".join(agent.verification_keywords)

    @admin.display(description="applies to")
    def applies_to(self, agent: GroundingAgent) -> str:
        return ", ".join(agent.applies_to_agents)

    @admin.display(description="sources")
    def source_count(self, agent: GroundingAgent) -> int:
        return len(agent.sources.all())

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "sources":
            kwargs["queryset"] = db_field.related_model.objects.select_related("domain")
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class VerificationInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Verification
    fields = ["claim", "verdict", "confidence", "domain", "review_status", "review_page"]
    readonly_fields = fields
    extra = 0
    ordering = ["id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Verification]:
        return super().get_queryset(request).select_related("domain")

    @admin.display(description="page")
    def review_page(self, verification: Verification) -> str:
        return _review_page_link(verification)


@admin.register(GroundingMessage)
class GroundingMessageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "short_summary", "original_message_id", "mode", "latency_ms"]
    list_filter = ["mode"]
    search_fields = ["original_message_id", "message", "summary"]
    date_hierarchy = "created_at"
    inlines = [VerificationInline]
    fields = [
        "id",
        "original_message_id",
        "mode",
        "message",
        "summary",
        "injected_knowledge_json",
        "latency_ms",
        "created_at",
    ]
    readonly_fields = fields

    @admin.display(description="summary")
    def short_summary(self, grounding: GroundingMessage) -> str:
        return grounding.summary[:100]

    @admin.display(description="injected knowledge")
    def injected_knowledge_json(self, grounding: GroundingMessage) -> str:
        return pretty_json(grounding.injected_knowledge)


@admin.register(Verification)
class VerificationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The verification log, read-only: reviews happen on the review queue."""

    list_display = [
        "id",
        "short_claim",
        "verdict",
        "domain",
        "confidence",
        "review_status",
        "reviewer",
        "created_at",
    ]
    list_display_links = ["id", "short_claim"]
    list_filter = ["verdict", "review_status", "judge", "domain"]
    list_select_related = ["domain", "reviewer"]
    search_fields = ["claim", "corrected_entry"]
    date_hierarchy = "created_at"
    fields = [
        "review_page",
        "claim",
        "domain",
        "verdict",
        "confidence",
        "judge",
        "basis",
        "rests_on",
        "confidence_note",
        "judge_note",
        "judge_latency_ms",
        "sources_json",
        "correction",
        "related_entries",
        "signals_json",
        "wikidata_json",
        "latency_ms",
        "message_link",
        "review_status",
        "reviewer",
        "reviewed_at",
        "review_note",
        "corrected_entry",
        "created_at",
    ]
    readonly_fields = fields

    @admin.display(description="claim", ordering="claim")
    def short_claim(self, verification: Verification) -> str:
        return verification.claim[:100]

    @admin.display(description="review page")
    def review_page(self, verification: Verification) -> str:
        return _review_page_link(verification)

    @admin.display(description="sources")
    def sources_json(self, verification: Verification) -> str:
        return pretty_json(verification.sources)

    @admin.display(description="signals")
    def signals_json(self, verification: Verification) -> str:
        return pretty_json(verification.signals)

    @admin.display(description="Wikidata facts")
    def wikidata_json(self, verification: Verification) -> str:
        return pretty_json(verification.wikidata)

    @admin.display(description="message")
    def message_link(self, verification: Verification) -> str:
        return change_link(GroundingMessage, verification.message_id)
