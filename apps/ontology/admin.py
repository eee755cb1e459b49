"""The operators' side of the ontology: the proposal review queue (approve applies a proposal and
bumps the ontology version; reject records why) and a read-mostly list of the classes."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from apps.core.admin_mixins import ChangelistSummaryMixin, ReadOnlyAdminMixin, SummaryField, json_display
from apps.core.errors import ApplicationError
from apps.ontology.models import OntologyClass, OntologyProposal, ProposalStatus
from apps.ontology.proposals import proposal_approve, proposal_reject


@admin.register(OntologyProposal)
class OntologyProposalAdmin(ChangelistSummaryMixin, admin.ModelAdmin):
    """Staged proposals, newest first. Only ``review_note`` is editable (while staged): reject uses it
    as the reason, so write it first, save, then reject."""

    list_display = [
        "created_at",
        "action",
        "target_iri",
        "status",
        "consistent",
        "quality_score",
        "base_version",
        "merged_version",
        "reviewed_by",
    ]
    list_filter = ["status", "action", "consistent"]
    summary_fields = (
        SummaryField("status", "Status"),
        SummaryField("consistent", "Consistent", warn=(False,)),
    )
    list_select_related = ["reviewed_by", "token"]
    search_fields = ["target_iri", "markdown_preview", "review_note"]
    date_hierarchy = "created_at"
    actions = ["approve", "reject"]
    fields = [
        "id",
        "action",
        "target_iri",
        "status",
        "consistent",
        "consistency_json",
        "quality_score",
        "score_breakdown_json",
        "preview",
        "diff_view",
        "agent_context_json",
        "token",
        "base_version",
        "merged_version",
        "reviewed_by",
        "reviewed_at",
        "review_note",
        "proposal_json",
        "created_at",
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: OntologyProposal | None = None) -> list[str]:
        editable = {"review_note"} if obj is not None and obj.status == ProposalStatus.STAGED else set()
        return [name for name in self.fields if name not in editable]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # proposals come from agents (ontology_propose)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the record of what was proposed and decided stays

    consistency_json = json_display("consistency", "consistency")
    score_breakdown_json = json_display("score_breakdown", "score breakdown")
    agent_context_json = json_display("agent_context", "agent context (identity from the token)")
    proposal_json = json_display("proposal", "proposal as received")

    @admin.display(description="markdown preview")
    def preview(self, proposal: OntologyProposal) -> str:
        return format_html('<pre class="cortex-pre">{}</pre>', proposal.markdown_preview)

    @admin.display(description="diff against the current note")
    def diff_view(self, proposal: OntologyProposal) -> str:
        return format_html('<pre class="cortex-pre">{}</pre>', proposal.diff or "(a new class)")

    @admin.action(description="Approve: apply to the ontology (re-checked first)", permissions=["change"])
    def approve(self, request: HttpRequest, queryset: QuerySet[OntologyProposal]) -> None:
        for proposal in queryset.order_by("created_at"):
            try:
                merged = proposal_approve(proposal_id=proposal.pk, reviewer=request.user)  # type: ignore[arg-type]
            except ApplicationError as refusal:
                self.message_user(request, f"{proposal}: not approved. {refusal.message}", messages.ERROR)
            else:
                self.message_user(
                    request,
                    f"{merged.target_iri} merged: ontology version {merged.merged_version}.",
                    messages.SUCCESS,
                )

    @admin.action(description="Reject (the review note says why)", permissions=["change"])
    def reject(self, request: HttpRequest, queryset: QuerySet[OntologyProposal]) -> None:
        for proposal in queryset:
            try:
                proposal_reject(proposal_id=proposal.pk, reviewer=request.user, note=proposal.review_note)  # type: ignore[arg-type]
            except ApplicationError as refusal:
                self.message_user(
                    request,
                    f"{proposal}: not rejected. {refusal.message} Write the review note on its page first.",
                    messages.ERROR,
                )
            else:
                self.message_user(request, f"{proposal.target_iri}: rejected.", messages.SUCCESS)


@admin.register(OntologyClass)
class OntologyClassAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The classes as loaded and merged; they change only through the loader and approved proposals."""

    list_display = ["local_name", "term_id", "preferred_term", "domain", "role", "maturity", "quality_score"]
    list_filter = ["domain", "role", "physicality", "maturity", "status"]
    search_fields = ["local_name", "term_id", "preferred_term", "definition", "alt_terms"]
    fields = [
        "iri",
        "term_id",
        "preferred_term",
        "alt_terms",
        "definition",
        "physicality",
        "role",
        "domain",
        "quality_score",
        "authority_score",
        "maturity",
        "status",
        "source",
        "parent_iris",
        "disjoint_iris",
        "relationships_json",
        "knowledge_entries",
        "markdown",
        "updated_at",
    ]
    readonly_fields = fields
    relationships_json = json_display("relationships", "relationships")

    def get_queryset(self, request: HttpRequest) -> QuerySet[OntologyClass]:
        return super().get_queryset(request).defer("embedding")
