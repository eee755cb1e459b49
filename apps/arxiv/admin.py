"""Admin of arXiv papers and search runs: read-only provenance.

Papers and runs are written only by the search workflow; the admin shows them (what was
asked, how the run went, what it returned) and changes nothing: no add, change or delete.
"""

from __future__ import annotations

import uuid

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from apps.arxiv.models import Paper, PaperVersion, SearchRun, SearchRunPaper
from apps.core.admin_mixins import (
    ChangelistSummaryMixin,
    ReadOnlyAdminMixin,
    SummaryField,
    YesNoFilter,
    change_link,
    json_display,
    truncated,
)


class PaperVersionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = PaperVersion
    fields = ["version", "updated", "seen_at"]
    readonly_fields = fields
    extra = 0


@admin.register(Paper)
class PaperAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "arxiv_id",
        "short_title",
        "primary_category",
        "published",
        "latest_version",
        "last_seen_at",
    ]
    list_filter = ["primary_category", "published"]
    search_fields = ["=arxiv_id", "title", "doi"]
    date_hierarchy = "published"
    list_select_related = True  # no relations shown; keeps the convention explicit
    inlines = [PaperVersionInline]
    fields = [
        "arxiv_id",
        "latest_version",
        "title",
        "authors_with_affiliations",
        "summary",
        "published",
        "updated",
        "url",
        "pdf_url",
        "categories",
        "primary_category",
        "doi",
        "journal_ref",
        "comment",
        "page_link",
        "first_seen_at",
        "last_seen_at",
    ]
    readonly_fields = fields

    @admin.display(description="Title", ordering="title")
    def short_title(self, paper: Paper) -> str:
        return paper.title[:100]

    @admin.display(description="Authors")
    def authors_with_affiliations(self, paper: Paper) -> str:
        details = paper.author_details or [{"name": name, "affiliations": []} for name in paper.authors]
        return format_html_join(
            ", ",
            "{}{}",
            (
                (
                    author.get("name", ""),
                    f" ({'; '.join(author['affiliations'])})" if author.get("affiliations") else "",
                )
                for author in details
            ),
        )

    @admin.display(description="Page")
    def page_link(self, paper: Paper) -> str:
        url = reverse("arxiv:paper_detail", args=[paper.arxiv_id])
        return format_html('<a href="{}">{}</a>', url, url)


class CachedFilter(YesNoFilter):
    """Runs answered from a recent identical run's page, or that reached arXiv themselves."""

    title = "cached"
    parameter_name = "cached"
    yes_label, no_label = "From cache", "Reached arXiv"

    def condition(self) -> Q:
        return Q(cached_from__isnull=False)


@admin.register(SearchRun)
class SearchRunAdmin(ChangelistSummaryMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "kind",
        "query",
        "status",
        "attempts_short",
        "waits_short",
        "duration_ms",
        "is_cached",
        "created_at",
    ]
    summary_fields = (
        SummaryField("status", "Status", warn=("failed", "degraded")),
        SummaryField("kind", "Kind"),
    )
    list_filter = ["status", "kind", CachedFilter]
    search_fields = ["=correlation_id"]
    search_help_text = "A run id or a correlation id (exact)."
    list_select_related = ["cached_from"]
    date_hierarchy = "created_at"
    fields = [
        "id",
        "kind",
        "status",
        "query",
        "parameters_json",
        "arxiv_params_json",
        "cache_key",
        "cached_from_link",
        "executions",
        "heartbeat_at",
        "enqueued_at",
        "attempts",
        "rate_limit_waits",
        "waited_seconds",
        "error_type",
        "error",
        "retry_after",
        "result_summary",
        "papers_found",
        "correlation_id",
        "created_at",
        "started_at",
        "finished_at",
        "duration_ms",
        "page_link",
    ]
    readonly_fields = fields

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[SearchRun], search_term: str
    ) -> tuple[QuerySet[SearchRun], bool]:
        # A UUID term matches the run id; anything else only the correlation id (a UUID
        # lookup with a non-UUID value would raise instead of finding nothing).
        term = search_term.strip()
        try:
            run_id = uuid.UUID(term)
        except ValueError:
            return super().get_search_results(request, queryset, search_term)
        return queryset.filter(pk=run_id) | queryset.filter(correlation_id=term), False

    @admin.display(description="Query")
    def query(self, run: SearchRun) -> str:
        parameters = run.parameters or {}
        if "query" in parameters:
            return truncated(parameters["query"], 60)
        return truncated(", ".join(str(arxiv_id) for arxiv_id in parameters.get("ids", [])), 60)

    @admin.display(description="tries", ordering="attempts")
    def attempts_short(self, run: SearchRun) -> int:
        return run.attempts

    @admin.display(description="waits", ordering="rate_limit_waits")
    def waits_short(self, run: SearchRun) -> int:
        return run.rate_limit_waits

    @admin.display(description="Cached", boolean=True)
    def is_cached(self, run: SearchRun) -> bool:
        return run.cached_from_id is not None

    parameters_json = json_display("parameters", "Parameters")
    arxiv_params_json = json_display("arxiv_params", "arXiv parameters")

    @admin.display(description="Answered from")
    def cached_from_link(self, run: SearchRun) -> str:
        return change_link(SearchRun, run.cached_from_id)

    @admin.display(description="Result")
    def result_summary(self, run: SearchRun) -> str:
        page = (run.cached_from.result if run.cached_from_id else run.result) or None
        if page is None:
            return "—"
        return format_html(
            "{} item(s) of {} total; start {}, next start {}",
            len(page.get("items") or []),
            page.get("totalResults", "?"),
            page.get("start", "?"),
            page.get("nextStart", "—"),
        )

    @admin.display(description="Papers (by rank)")
    def papers_found(self, run: SearchRun) -> str:
        source = run.cached_from_id or run.pk
        links = SearchRunPaper.objects.filter(run_id=source).select_related("paper").order_by("rank")
        if not links:
            return "—"
        return format_html(
            "<ol>{}</ol>",
            format_html_join(
                "",
                '<li><a href="{}">{}</a> {}</li>',
                (
                    (
                        reverse("admin:arxiv_paper_change", args=[link.paper_id]),
                        link.paper.arxiv_id,
                        link.paper.title[:100],
                    )
                    for link in links
                ),
            ),
        )

    @admin.display(description="Page")
    def page_link(self, run: SearchRun) -> str:
        url = reverse("arxiv:run_detail", args=[run.pk])
        return format_html('<a href="{}">{}</a>', url, url)
