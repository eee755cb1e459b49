"""Admin of fact runs and facts: read-only provenance, and a re-run action.

Runs and facts are written only by the fact workflow; the admin shows them (what was asked,
the plan, how each step went, what was found and where it came from) and changes nothing.
Superusers may delete runs (their facts go with them); "Re-run" queues a new run of the same
question through the service, linked to the old one (it needs ``wikidata.add_factrun``, the page
role that asks questions, and counts against the user's page-submission limit).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from apps.core.admin_mixins import (
    ChangelistSummaryMixin,
    ReadOnlyAdminMixin,
    SummaryField,
    change_link,
    json_display,
    truncated,
    warning_display,
)
from apps.core.errors import ApplicationError, RateLimited
from apps.core.services import page_submission_check
from apps.wikidata import services
from apps.wikidata.models import Fact, FactRun, FactRunStatus


class FactInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Fact
    fields = ["position", "text", "qid", "pid", "rank", "score", "admin_link"]
    readonly_fields = fields
    extra = 0
    show_change_link = False
    ordering = ["position"]

    @admin.display(description="Fact")
    def admin_link(self, fact: Fact) -> str:
        return change_link(Fact, fact.pk)


@admin.register(FactRun)
class FactRunAdmin(ChangelistSummaryMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["question_short", "status", "degraded_flag", "scope", "created_at", "duration_ms"]
    summary_fields = (
        SummaryField("status", "Status", warn=(FactRunStatus.FAILED, FactRunStatus.DEGRADED)),
        SummaryField("degraded", "Degraded", warn=(True,)),
    )
    list_filter = ["status", "degraded", "purpose", "scope"]
    search_fields = ["question", "=correlation_id"]
    search_help_text = "Words of the question, a run id, or a correlation id (exact)."
    list_select_related = ["rerun_of"]
    date_hierarchy = "created_at"
    inlines = [FactInline]
    actions = ["rerun"]
    fields = [
        "id",
        "question",
        "purpose",
        "status",
        "degraded_flag",
        "degraded_reason",
        "scope",
        "top_k",
        "include_sparql",
        "include_deprecated",
        "language",
        "plan_json",
        "steps_json",
        "entities_json",
        "error_type",
        "error",
        "executions",
        "heartbeat_at",
        "enqueued_at",
        "correlation_id",
        "rerun_of_link",
        "created_at",
        "started_at",
        "finished_at",
        "duration_ms",
        "page_link",
    ]
    readonly_fields = fields

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, Any, set[str], Any]:
        # A run's facts are part of it (they cascade); the fact admin stays read-only on its own.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, perms_needed - {str(Fact._meta.verbose_name)}, protected

    def has_rerun_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser or request.user.has_perm("wikidata.add_factrun"))

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[FactRun], search_term: str
    ) -> tuple[QuerySet[FactRun], bool]:
        # A UUID term matches the run id too (a UUID lookup with another value would raise).
        found, duplicates = super().get_search_results(request, queryset, search_term)
        try:
            run_id = uuid.UUID(search_term.strip())
        except ValueError:
            return found, duplicates
        return found | queryset.filter(pk=run_id), duplicates

    @admin.action(description="Re-run the selected runs", permissions=["rerun"])
    def rerun(self, request: HttpRequest, queryset: QuerySet[FactRun]) -> None:
        queued = 0
        runs = list(queryset.order_by("created_at"))
        for index, run in enumerate(runs):
            try:
                # Each re-run spends the Wikidata budget: it counts as a page submission of the user.
                page_submission_check(user=request.user)
                services.fact_run_rerun(run=run)
            except RateLimited as error:
                left = len(runs) - index
                self.message_user(request, f"{left} run(s) not queued: {error.message}", level=messages.ERROR)
                break
            except ApplicationError as error:  # e.g. the registry can no longer plan the question
                self.message_user(request, f"{run.question[:60]}: {error.message}", level=messages.ERROR)
            else:
                queued += 1
        if queued:
            self.message_user(request, f"Queued {queued} new run(s).", level=messages.SUCCESS)

    @admin.display(description="Question", ordering="question")
    def question_short(self, run: FactRun) -> str:
        return truncated(run.question, 80)

    degraded_flag = warning_display("degraded", "Degraded")
    plan_json = json_display("plan", "Plan")
    steps_json = json_display("steps", "Steps")
    entities_json = json_display("entities", "Entities")

    @admin.display(description="Re-run of")
    def rerun_of_link(self, run: FactRun) -> str:
        return change_link(FactRun, run.rerun_of_id)

    @admin.display(description="Page")
    def page_link(self, run: FactRun) -> str:
        url = reverse("wikidata:run_detail", args=[run.pk])
        return format_html('<a href="{}">{}</a>', url, url)


@admin.register(Fact)
class FactAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["text_short", "qid", "pid", "rank", "score", "run_link"]
    list_filter = ["rank", "datatype"]
    search_fields = ["=qid", "=pid", "=claim_guid", "text"]
    search_help_text = "A QID, PID or statement GUID (exact), or words of the fact."
    list_select_related = ["run"]
    fields = [
        "text",
        "run_link",
        "position",
        "score",
        "qid",
        "qid_label",
        "pid",
        "pid_label",
        "claim_guid",
        "snaktype",
        "datatype",
        "value_json",
        "value_text",
        "value_label",
        "rank",
        "qualifiers_json",
        "references_json",
        "sparql",
        "sparql_endpoint",
        "sparql_results_json",
        "endpoint",
        "retrieved_at",
        "derived_from_link",
        "created_at",
        "page_link",
    ]
    readonly_fields = fields  # the embedding is left out: a vector says nothing to a reader

    @admin.display(description="Fact", ordering="text")
    def text_short(self, fact: Fact) -> str:
        return truncated(fact.text, 80)

    @admin.display(description="Run")
    def run_link(self, fact: Fact) -> str:
        return change_link(FactRun, fact.run_id, truncated(fact.run.question, 40))

    value_json = json_display("value", "Value")
    qualifiers_json = json_display("qualifiers", "Qualifiers")
    references_json = json_display("references", "References")
    sparql_results_json = json_display("sparql_results", "SPARQL results")

    @admin.display(description="Derived from")
    def derived_from_link(self, fact: Fact) -> str:
        return change_link(Fact, fact.derived_from_id)

    @admin.display(description="Page")
    def page_link(self, fact: Fact) -> str:
        url = reverse("wikidata:fact_detail", args=[fact.pk])
        return format_html('<a href="{}">{}</a>', url, url)
