"""Fact runs (one question each) and the facts they found, with statement-level provenance."""

from __future__ import annotations

import uuid

from django.db import models

from apps.core.models import RUN_PENDING_STATUSES, RunStatus, TrackedRun
from apps.embeddings.fields import EmbeddingField, hnsw_cosine_index

# A fact run has no states beyond the shared lifecycle's.
FactRunStatus = RunStatus


class FactRunPurpose(models.TextChoices):
    """Why a run was made: a question someone asked, or a claim a grounding verification checked on
    Wikidata (its verification points at it: ``Verification.fact_run``)."""

    QUESTION = "question", "Question"
    VERIFICATION = "verification", "On a verification's behalf"


class FactRunQuerySet(models.QuerySet["FactRun"]):
    def pending(self) -> FactRunQuerySet:
        return self.filter(status__in=RUN_PENDING_STATUSES)

    def finished(self) -> FactRunQuerySet:
        return self.exclude(status__in=RUN_PENDING_STATUSES)

    def with_answer_counts(self) -> FactRunQuerySet:
        """Each run's facts and, of those, the stored ones a degraded run copied (``answer_count``,
        ``answered_from``), counted in the same query."""
        return self.annotate(
            fact_count=models.Count("facts"),
            stored_fact_count=models.Count("facts", filter=models.Q(facts__derived_from__isnull=False)),
        )


class FactRun(TrackedRun):
    """One factual question run through the plan: what was asked, how each step went, what it found.

    ``steps`` is a list of ``{name, tool, status, startedAt, durationMs, error, errorType,
    retryable, detail}`` in execution order, written as the run goes, so a page shows a
    run in progress and a failed run shows which step failed and why.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    question = models.TextField()
    scope = models.CharField(max_length=32, default="facts")
    top_k = models.PositiveSmallIntegerField(default=5)
    include_sparql = models.BooleanField(default=True)
    include_deprecated = models.BooleanField(default=False)
    language = models.CharField(max_length=16, default="en")
    plan = models.JSONField(default=dict, help_text="The planner's steps for this question.")
    purpose = models.CharField(
        max_length=16,
        choices=FactRunPurpose.choices,
        default=FactRunPurpose.QUESTION,
        help_text="A question asked, or a claim checked on a grounding verification's behalf.",
    )
    # Always equal to ``status == "degraded"``; kept as a column for the ``?degraded=`` filters and the
    # dashboard's grouped counts, which read it since before the status existed.
    degraded = models.BooleanField(default=False, help_text="Answered from local data: Wikidata failed.")
    degraded_reason = models.TextField(blank=True)
    steps = models.JSONField(default=list)
    entities = models.JSONField(
        default=list, help_text="The entities searched: [{id, label, score, source}]."
    )
    knowledge = models.JSONField(
        default=list, blank=True, help_text="Knowledge entries a degraded run answered with: [{entryId, …}]."
    )
    rerun_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns"
    )

    execute_task = "apps.wikidata.tasks.fact_run_execute_task"
    deadline_setting = "FACTS_RUN_DEADLINE_SECONDS"
    objects = FactRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "-created_at"], name="wikidata_run_status")]

    def __str__(self) -> str:
        return f"{self.question[:60]} ({self.status})"

    @property
    def answer_count(self) -> int:
        """What the run returned: its facts (from Wikidata, or stored ones a degraded run copied) and
        the knowledge entries a degraded run answered with."""
        return sum(self._fact_counts()) + len(self.knowledge or [])

    @property
    def answered_from(self) -> str:
        """What the run answered from, in words: "4 knowledge entries", "2 stored facts and 1
        knowledge entry", "5 Wikidata facts", or "nothing"."""
        live, stored = self._fact_counts()
        entries = len(self.knowledge or [])
        parts = [
            f"{count} {noun if count == 1 else plural}"
            for count, noun, plural in (
                (live, "Wikidata fact", "Wikidata facts"),
                (stored, "stored fact", "stored facts"),
                (entries, "knowledge entry", "knowledge entries"),
            )
            if count
        ]
        return " and ".join(parts) or "nothing"

    def _fact_counts(self) -> tuple[int, int]:
        """(facts read from Wikidata, stored facts a degraded run copied). A list annotates
        ``fact_count`` and ``stored_fact_count`` for all its runs in one query (``with_answer_counts``)."""
        total, stored = getattr(self, "fact_count", None), getattr(self, "stored_fact_count", None)
        if total is None or stored is None:
            total = self.facts.count()
            stored = self.facts.filter(derived_from__isnull=False).count() if total else 0
        return int(total) - int(stored), int(stored)


class FactQuerySet(models.QuerySet["Fact"]):
    def from_wikidata(self) -> FactQuerySet:
        return self.exclude(claim_guid="")


class Fact(models.Model):
    """One Wikidata statement as a fact a run found, with where it came from.

    ``value`` is the typed Wikibase value (``{"type", ...}`` as ``Statement.as_dict`` gives it);
    ``value_text`` its human-readable form. A fact from a degraded run copies a stored fact
    and points at it with ``derived_from``.
    """

    run = models.ForeignKey(FactRun, on_delete=models.CASCADE, related_name="facts")
    position = models.PositiveSmallIntegerField(help_text="1 = best answer of the run.")
    text = models.TextField(help_text="subject — property — value, as ranked.")
    score = models.FloatField()
    qid = models.CharField(max_length=32, db_index=True)
    qid_label = models.TextField(blank=True)
    pid = models.CharField(max_length=32, db_index=True)
    pid_label = models.TextField(blank=True)
    snaktype = models.CharField(max_length=16, default="value")
    datatype = models.CharField(max_length=64, blank=True)
    value = models.JSONField(null=True, blank=True)
    value_text = models.TextField(blank=True)
    value_label = models.TextField(
        blank=True, help_text="The value entity's label, when the value is an entity."
    )
    claim_guid = models.CharField(max_length=200, db_index=True)
    rank = models.CharField(max_length=16)
    qualifiers = models.JSONField(default=list)
    references = models.JSONField(default=list)
    sparql = models.TextField(blank=True, help_text="The query that enriched this fact.")
    sparql_endpoint = models.URLField(max_length=500, blank=True)
    sparql_results = models.JSONField(null=True, blank=True)
    endpoint = models.URLField(max_length=500, help_text="Where the statement was read.")
    retrieved_at = models.DateTimeField()
    embedding = EmbeddingField(null=True, blank=True)
    derived_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = FactQuerySet.as_manager()

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            # A retried task writes the same rows again: update_or_create on this pair.
            models.UniqueConstraint(fields=["run", "claim_guid"], name="wikidata_fact_run_claim_unique")
        ]
        indexes = [hnsw_cosine_index(name="wikidata_fact_embedding", field="embedding")]

    def __str__(self) -> str:
        return self.text[:100]

    @property
    def entity_url(self) -> str:
        return f"https://www.wikidata.org/wiki/{self.qid}"

    @property
    def property_url(self) -> str:
        return f"https://www.wikidata.org/wiki/Property:{self.pid}"

    @property
    def statement_url(self) -> str:
        return f"https://www.wikidata.org/wiki/{self.qid}#{self.claim_guid}"
