"""Papers found on arXiv and the search runs that found them."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models

from apps.core.models import RUN_PENDING_STATUSES, TrackedRun


class Paper(models.Model):
    """One arXiv article (by base id), upserted with its latest metadata whenever a run sees it."""

    arxiv_id = models.CharField(max_length=64, unique=True, help_text="Base id, without version.")
    latest_version = models.PositiveIntegerField(null=True, blank=True)
    title = models.TextField()
    summary = models.TextField()
    authors = models.JSONField(default=list, help_text="Names in author order.")
    author_details = models.JSONField(default=list, help_text="[{name, affiliations}] in author order.")
    published = models.DateTimeField(help_text="Date of version 1.")
    updated = models.DateTimeField(help_text="Date of the latest version seen.")
    url = models.URLField(max_length=500)
    pdf_url = models.URLField(max_length=500, blank=True)
    categories = ArrayField(models.CharField(max_length=100), default=list)
    primary_category = models.CharField(max_length=100, blank=True)
    doi = models.CharField(max_length=200, blank=True)
    journal_ref = models.TextField(blank=True)
    comment = models.TextField(blank=True)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-published", "arxiv_id"]
        indexes = [
            models.Index(fields=["primary_category", "-published"], name="arxiv_paper_category"),
            models.Index(fields=["-published"], name="arxiv_paper_published"),
        ]

    def __str__(self) -> str:
        return f"{self.arxiv_id}: {self.title[:80]}"


class PaperVersion(models.Model):
    """A version of a paper seen on arXiv (``updated`` is that version's date)."""

    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    updated = models.DateTimeField()
    seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["paper", "version"]
        constraints = [
            models.UniqueConstraint(fields=["paper", "version"], name="arxiv_paper_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.paper.arxiv_id}v{self.version}"


class RunStatus(models.TextChoices):
    """The shared run lifecycle's states (``apps.core.models.RunStatus``) plus one of arXiv's own: the
    rate limit left no slot in time. ``degraded``: arXiv was down, and a search answered from the
    stored papers instead (seed 002)."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    DEGRADED = "degraded", "Degraded"
    FAILED = "failed", "Failed"
    RATE_LIMITED = "rate_limited", "Rate limited"


class RunKind(models.TextChoices):
    SEARCH = "search", "Search"
    LOOKUP = "lookup", "Lookup by id"


class SearchRunQuerySet(models.QuerySet["SearchRun"]):
    def finished(self) -> SearchRunQuerySet:
        return self.exclude(status__in=RUN_PENDING_STATUSES)


class SearchRun(TrackedRun):
    """One request for arXiv results: its parameters, how it went, and the page it produced.

    A run answered from a recent identical run's stored page has ``cached_from`` set and
    never reached arXiv.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=10, choices=RunKind.choices)
    cache_key = models.CharField(max_length=64, db_index=True, help_text="sha256 of the arXiv parameters.")
    parameters = models.JSONField(help_text="The request as the API received it (normalised).")
    arxiv_params = models.JSONField(help_text="The query parameters sent to arXiv.")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    attempts = models.PositiveIntegerField(default=0, help_text="Requests sent to arXiv for this run.")
    rate_limit_waits = models.PositiveIntegerField(default=0, help_text="Requests that waited for a slot.")
    waited_seconds = models.FloatField(default=0.0, help_text="Time spent waiting for slots and backoff.")
    retryable = models.BooleanField(
        default=False, help_text="The last error was transient: retrying later may work."
    )
    retry_after = models.FloatField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="The normalised page.")
    papers = models.ManyToManyField(Paper, through="SearchRunPaper", related_name="runs")
    cached_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)

    execute_task = "apps.arxiv.tasks.search_run_execute_task"
    deadline_setting = "ARXIV_RUN_DEADLINE_SECONDS"
    objects = SearchRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["cache_key", "status", "-finished_at"], name="arxiv_run_cache_lookup")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} {self.status}"

    @property
    def asked(self) -> str:
        """What the run asked for, as a list shows it: the search's query, or a lookup's ids."""
        parameters = self.parameters or {}
        if "query" in parameters:
            return str(parameters["query"])
        return ", ".join(str(arxiv_id) for arxiv_id in parameters.get("ids", []))

    @property
    def answer_count(self) -> int | None:
        """How many papers the run returned (arXiv's, a cached run's, or a degraded run's stored ones);
        None while pending or when it ended without an answer (failed, rate limited)."""
        page = (self.cached_from.result if self.cached_from_id and self.cached_from else None) or self.result
        if not isinstance(page, dict):
            return None
        return len(page.get("items") or [])


class SearchRunPaper(models.Model):
    run = models.ForeignKey(SearchRun, on_delete=models.CASCADE)
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE)
    rank = models.PositiveIntegerField()

    class Meta:
        ordering = ["run", "rank"]
        constraints = [models.UniqueConstraint(fields=["run", "paper"], name="arxiv_run_paper_unique")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.rank}"
