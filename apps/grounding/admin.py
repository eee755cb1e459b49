"""Admin of grounding: the settings (one row), the grounding agents, and the read-only log of
grounded messages and verifications.

Verifications are reviewed on the review queue (``/verifications``), where approving, rejecting
and correcting go through ``services.verification_review``; here they are evidence only. The review
memory (what those reviews taught the checker) is listed here, and a reviewer can revoke a review so
later claims stop getting its verdict.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from apps.core.admin_mixins import (
    ChangelistSummaryMixin,
    ReadOnlyAdminMixin,
    SingletonAdminMixin,
    SummaryField,
    change_link,
    json_display,
    truncated,
)
from apps.grounding import review_memory
from apps.grounding.forms import GroundingAgentForm, GroundingSettingsForm
from apps.grounding.models import (
    GroundingAgent,
    GroundingMessage,
    GroundingSettings,
    ReviewMemory,
    ReviewStatus,
    Verdict,
    Verification,
)


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
    fields = ["admin_link", "claim", "verdict", "confidence", "domain", "review_status", "review_page"]
    readonly_fields = fields
    extra = 0
    ordering = ["id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Verification]:
        return super().get_queryset(request).select_related("domain")

    @admin.display(description="page")
    def review_page(self, verification: Verification) -> str:
        return _review_page_link(verification)

    @admin.display(description="#")
    def admin_link(self, verification: Verification) -> str:
        return change_link(Verification, verification.pk)


@admin.register(GroundingMessage)
class GroundingMessageAdmin(ChangelistSummaryMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "short_summary", "message_id_short", "mode", "claims", "latency_ms"]
    list_filter = ["mode"]
    summary_fields = (SummaryField("mode", "Mode"),)
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

    def get_queryset(self, request: HttpRequest) -> QuerySet[GroundingMessage]:
        return super().get_queryset(request).annotate(claim_total=Count("verifications"))

    @admin.display(description="summary", ordering="summary")
    def short_summary(self, grounding: GroundingMessage) -> str:
        return truncated(grounding.summary, 70)

    @admin.display(description="message id", ordering="original_message_id")
    def message_id_short(self, grounding: GroundingMessage) -> str:
        return truncated(grounding.original_message_id, 24)

    @admin.display(description="claims", ordering="claim_total")
    def claims(self, grounding: GroundingMessage) -> str:
        url = reverse("admin:grounding_verification_changelist") + f"?message__id__exact={grounding.pk}"
        return format_html('<a href="{}">{}</a>', url, grounding.claim_total)  # type: ignore[attr-defined]

    injected_knowledge_json = json_display("injected_knowledge", "injected knowledge")


@admin.register(Verification)
class VerificationAdmin(ChangelistSummaryMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """The verification log, read-only: reviews happen on the review queue."""

    list_display = [
        "id",
        "short_claim",
        "verdict",
        "domain",
        "confidence_short",
        "review_status",
        "message_link",
        "created_at",
    ]
    list_display_links = ["id", "short_claim"]
    summary_fields = (
        SummaryField("verdict", "Verdict", warn=(Verdict.CONTRADICTED,)),
        SummaryField("review_status", "Review", warn=(ReviewStatus.PENDING,)),
    )
    # degraded: Wikidata could not be reached, so the verdict rests on stored facts alone.
    list_filter = ["verdict", "review_status", "judge", "domain", "degraded"]
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
        "degraded",
        "degraded_reason",
        "latency_ms",
        "message_link",
        "review_status",
        "queue_reason",
        "leaning",
        "reviewer",
        "reviewed_at",
        "reviewed_verdict",
        "review_note",
        "corrected_entry",
        "created_at",
    ]
    readonly_fields = fields

    @admin.display(description="claim", ordering="claim")
    def short_claim(self, verification: Verification) -> str:
        return truncated(verification.claim, 80)

    @admin.display(description="conf.", ordering="confidence")
    def confidence_short(self, verification: Verification) -> str:
        return f"{verification.confidence:.2f}"

    @admin.display(description="review page")
    def review_page(self, verification: Verification) -> str:
        return _review_page_link(verification)

    sources_json = json_display("sources", "sources")
    signals_json = json_display("signals", "signals")
    wikidata_json = json_display("wikidata", "Wikidata facts")

    @admin.display(description="message")
    def message_link(self, verification: Verification) -> str:
        if verification.message_id is None:
            return "—"
        return change_link(GroundingMessage, verification.message_id, str(verification.message_id)[:8])


@admin.register(ReviewMemory)
class ReviewMemoryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The reviewed verdicts later claims get (judge ``review``); "Revoke" stops one being used."""

    list_display = ["id", "short_claim", "verdict", "decision", "reviewer_name", "reviewed_at", "revoked_at"]
    list_display_links = ["id", "short_claim"]
    list_filter = ["verdict", "decision", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["claim", "reviewer_name"]
    fields = [
        "verification_link", "claim", "domain", "decision", "verdict", "correction", "features_json",
        "reviewer_name", "reviewed_at", "note", "revoked_at",
    ]  # fmt: skip
    readonly_fields = fields
    actions = ["revoke"]
    features_json = json_display("features", "features")

    @admin.display(description="claim", ordering="claim")
    def short_claim(self, memory: ReviewMemory) -> str:
        return truncated(memory.claim, 100)

    @admin.display(description="verification")
    def verification_link(self, memory: ReviewMemory) -> str:
        url = reverse("grounding:verification_detail", args=[memory.verification_id])
        return format_html('<a href="{}">#{}</a>', url, memory.verification_id)

    def has_review_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("grounding.review_verification")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Reviewers made these rows: they see them (and may revoke them) without a permission of their own.
        return self.has_review_permission(request) or super().has_view_permission(request, obj)

    @admin.action(description="Revoke: later claims stop getting these verdicts", permissions=["review"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ReviewMemory]) -> None:
        count = review_memory.memories_revoke(memory_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{count} review(s) revoked.", messages.SUCCESS)
