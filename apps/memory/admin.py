"""Admin of memory: the settings (one row: ask's weights, validated to sum to 1, and the lifecycle's
constants), and the memories themselves, where operators share them domain-wide, pin and unpin.

Memories are what agents told: their content, scope and history (supersession, and the versions
updates replaced) are read-only here. A token's
memories move to its replacement with the token admin's "Rotate" action.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.core.admin_mixins import SingletonAdminMixin, change_link, json_display
from apps.core.errors import ValidationFailed
from apps.core.models import ApiToken
from apps.memory import services
from apps.memory.models import Memory, MemorySettings, MemoryVersion


@admin.register(MemorySettings)
class MemorySettingsAdmin(SingletonAdminMixin, admin.ModelAdmin):
    """``MemorySettings.current()``; ``MemorySettings.clean`` refuses weights that do not sum to 1."""

    readonly_fields = ["updated_at"]
    fieldsets = [
        (
            "Ask: relevance = Σ weight × component",
            {
                "fields": [
                    "weight_domain",
                    "weight_temporal",
                    "weight_semantic",
                    "weight_frequency",
                    "relevance_threshold",
                    "semantic_floor",
                    "temporal_lambda_per_day",
                    "frequency_saturation",
                ]
            },
        ),
        ("Tell", {"fields": ["duplicate_similarity", "reinforce_factor"]}),
        (
            "Lifecycle",
            {
                "fields": [
                    "decay_rate",
                    "decay_interval_hours",
                    "decay_floor",
                    "promotion_accesses",
                    "access_history_days",
                ]
            },
        ),
        (None, {"fields": ["updated_at"]}),
    ]


class MemoryVersionInline(admin.TabularInline):
    """What a memory said before each update (``PATCH /v1/memory/{id}``): read-only history."""

    model = MemoryVersion
    fields = readonly_fields = ["version", "content", "domain", "importance", "valid_from", "replaced_at"]
    extra = 0
    can_delete = False
    ordering = ["version"]

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = [
        "summary", "token_link", "agent", "domain", "type", "access_count", "decay", "pinned", "shared",
        "expires_at", "superseded",
    ]  # fmt: skip
    list_filter = ["type", "pinned", "shared", "domain", ("valid_until", admin.EmptyFieldListFilter)]
    search_fields = ["content", "agent", "session", "domain", "=id"]
    list_select_related = ["token"]
    date_hierarchy = "created_at"
    actions = ["share_domain_wide", "stop_sharing", "pin", "unpin"]
    exclude = ["embedding"]
    readonly_fields = [
        "id", "token_link", "agent", "session", "content", "content_hash", "domain", "type", "concepts",
        "metadata_json", "chunk_group", "chunk_index", "importance", "access_count", "last_accessed_at",
        "decay_factor", "decayed_at", "created_at", "expires_at", "valid_from", "valid_until",
        "superseded_by_link", "version", "updated_at",
    ]  # fmt: skip
    inlines = [MemoryVersionInline]
    fieldsets = [
        (None, {"fields": ["id", "content", "domain", "type", "concepts", "metadata_json"]}),
        ("Scope", {"fields": ["token_link", "agent", "session", "shared"]}),
        ("Lifecycle", {"fields": ["pinned", "expires_at", "importance", "access_count", "last_accessed_at"]}),
        ("Decay", {"fields": ["decay_factor", "decayed_at"]}),
        ("Validity", {"fields": ["created_at", "valid_from", "valid_until", "superseded_by_link"]}),
        ("Versions", {"fields": ["version", "updated_at"]}),
        ("Chunk", {"fields": ["chunk_group", "chunk_index", "content_hash"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        return super().get_queryset(request).defer("embedding")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories are told by agents (POST /v1/memory/tell), not typed in here

    @admin.display(description="Memory")
    def summary(self, memory: Memory) -> str:
        return str(memory)

    @admin.display(description="Token", ordering="token__name")
    def token_link(self, memory: Memory) -> str:
        return change_link(ApiToken, memory.token_id, str(memory.token))

    @admin.display(description="Decay", ordering="decay_factor")
    def decay(self, memory: Memory) -> str:
        return f"{memory.decay_factor:.3f}"

    @admin.display(description="Superseded", boolean=True, ordering="valid_until")
    def superseded(self, memory: Memory) -> bool:
        return memory.valid_until is not None

    @admin.display(description="Superseded by")
    def superseded_by_link(self, memory: Memory) -> str:
        return change_link(Memory, memory.superseded_by_id)

    metadata_json = json_display("metadata", "Metadata")

    @admin.action(description="Share domain-wide (every token asking in their domain sees them)")
    def share_domain_wide(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        try:
            count = services.memories_share(ids=list(queryset.values_list("id", flat=True)), shared=True)
        except ValidationFailed as error:
            self.message_user(request, error.message, level=messages.ERROR)
            return
        self.message_user(request, f"Shared {count} memories in their domains.")

    @admin.action(description="Stop sharing")
    def stop_sharing(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        count = services.memories_share(ids=list(queryset.values_list("id", flat=True)), shared=False)
        self.message_user(request, f"{count} memories are private to their tokens again.")

    @admin.action(description="Pin (never expire)")
    def pin(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        count = services.memories_pin_by_operator(
            ids=list(queryset.values_list("id", flat=True)), pinned=True
        )
        self.message_user(request, f"Pinned {count} memories.")

    @admin.action(description="Unpin")
    def unpin(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        count = services.memories_pin_by_operator(
            ids=list(queryset.values_list("id", flat=True)), pinned=False
        )
        self.message_user(request, f"Unpinned {count} memories.")
