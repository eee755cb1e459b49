"""Grounding (seed 001): the configuration, the prebuilt grounding agents as data, every
verification of a claim (the verification log, reviewed by operators) and grounding messages."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from apps.core.process_cache import ProcessCache, singleton_cache
from apps.embeddings.fields import EmbeddingField, hnsw_cosine_index
from apps.knowledge.models import KnowledgeDomain, KnowledgeSource

DEFAULT_TRIGGER_PATTERNS = ["should be", "must be", "is required", "according to", "best practice"]
DEFAULT_CLAIM_PATTERNS = [
    r"\b(?:must|should|is required to|needs to)\b",
    r"\b(?:according to|per|as per)\b",
    r"\b(?:best practice|standard|guideline)\b",
]


def _default_triggers() -> list[str]:
    return list(DEFAULT_TRIGGER_PATTERNS)


def _default_claim_patterns() -> list[str]:
    return list(DEFAULT_CLAIM_PATTERNS)


class InjectionMode(models.TextChoices):
    AUTOMATIC = "automatic", "Ground every message"
    ON_REQUEST = "on_request", "Ground when asked"
    ON_DETECTION = "on_detection", "Ground when a trigger pattern is found"


class GroundingSettings(models.Model):
    """The one grounding configuration (seed 001 ``grounding_config`` + ``verification``), edited in
    the admin; ``GroundingSettings.current()`` creates it with the seed's defaults."""

    enabled = models.BooleanField(default=True)
    injection_mode = models.CharField(
        max_length=16, choices=InjectionMode.choices, default=InjectionMode.AUTOMATIC
    )
    trigger_patterns = ArrayField(models.CharField(max_length=200), default=_default_triggers, blank=True)
    claim_patterns = ArrayField(
        models.CharField(max_length=300),
        default=_default_claim_patterns,
        blank=True,
        help_text="Regular expressions; a sentence matching one is a claim to verify.",
    )
    min_claim_length = models.PositiveIntegerField(default=10, help_text="Shorter claims are ignored.")
    confidence_threshold = models.FloatField(
        default=0.7,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Below this confidence a verdict goes to the review queue.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = "grounding settings"

    def __str__(self) -> str:
        return "Grounding settings"

    @classmethod
    def current(cls) -> GroundingSettings:
        """The row in force (created with the defaults when missing), kept per process until it changes."""
        return _grounding_settings_cache.current()


_grounding_settings_cache = singleton_cache(GroundingSettings)


class GroundingAgent(models.Model):
    """A prebuilt agent as data: the domain it checks, the words that route claims to it."""

    name = models.CharField(max_length=100, unique=True)
    domain = models.OneToOneField(KnowledgeDomain, on_delete=models.CASCADE, related_name="agent")
    description = models.TextField(blank=True)
    verification_keywords = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    applies_to_agents = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    sources = models.ManyToManyField(KnowledgeSource, blank=True, related_name="agents")
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def enabled_with_domains(cls) -> list[GroundingAgent]:
        """The enabled agents with their domains (read on every claim; kept per process until an agent
        or a domain changes)."""
        return _enabled_agents_cache.current()


def _enabled_agents_read() -> list[GroundingAgent]:
    return list(GroundingAgent.objects.filter(enabled=True).select_related("domain"))


_enabled_agents_cache = ProcessCache(
    name="grounding.enabled-agents", read=_enabled_agents_read, models=[GroundingAgent, KnowledgeDomain]
)


class Verdict(models.TextChoices):
    SUPPORTED = "supported", "Supported"
    CONTRADICTED = "contradicted", "Contradicted"
    UNVERIFIED = "unverified", "Unverified"


class ReviewStatus(models.TextChoices):
    PENDING = "pending", "Pending review"
    NOT_NEEDED = "not_needed", "Confident, not queued"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    CORRECTED = "corrected", "Corrected"


class GroundingMessage(models.Model):
    """A grounded message (seed ``grounding_message``): its verifications and injected knowledge."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    original_message_id = models.CharField(max_length=200, blank=True)
    message = models.TextField()
    mode = models.CharField(max_length=16, choices=InjectionMode.choices)
    injected_knowledge = models.JSONField(default=list)
    summary = models.TextField(blank=True)
    latency_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.summary[:80] or str(self.pk)


class VerificationQuerySet(models.QuerySet["Verification"]):
    def pending_review(self) -> VerificationQuerySet:
        return self.filter(review_status=ReviewStatus.PENDING)


class Verification(models.Model):
    """One claim checked against the knowledge base (the verification log)."""

    claim = models.TextField()
    domain = models.ForeignKey(
        KnowledgeDomain, null=True, blank=True, on_delete=models.SET_NULL, related_name="verifications"
    )
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    confidence = models.FloatField()
    sources = models.JSONField(default=list, help_text="[{entry_id, content_excerpt, relevance}]")
    correction = models.TextField(blank=True)
    related_entries = ArrayField(models.CharField(max_length=32), default=list, blank=True)
    signals = models.JSONField(default=list, help_text="Why: the contradiction signals found, if any.")
    wikidata = models.JSONField(default=list, blank=True, help_text="Wikidata facts consulted.")
    latency_ms = models.FloatField()
    # Who decided and on what (docs/grounding.md "Judges and confidence").
    judge = models.CharField(max_length=16, default="local", help_text="local, nli or llm.")
    basis = models.CharField(
        max_length=64, blank=True, help_text="What the verdict rests on, as the calibration table counts it."
    )
    rests_on = models.TextField(blank=True, help_text="The evidence sentence or signal the verdict rests on.")
    confidence_note = models.TextField(blank=True, help_text="Why the confidence is not higher.")
    judge_note = models.TextField(
        blank=True, help_text="A model judge that failed or was skipped, and who decided instead."
    )
    judge_latency_ms = models.FloatField(null=True, blank=True, help_text="The model judge's own time.")
    judge_details = models.JSONField(default=dict, blank=True, help_text="The model judge's raw answer.")
    # The sources beyond the knowledge base a verification asked (Wikidata), and whether one could not
    # be reached (docs/grounding.md "When a source is down").
    sources_note = models.TextField(blank=True, help_text="What asking Wikidata came to, when it was asked.")
    degraded = models.BooleanField(
        default=False, help_text="A source the verification asked could not be reached."
    )
    degraded_reason = models.TextField(blank=True, help_text="Why the source could not be reached.")
    fact_run = models.ForeignKey(
        "wikidata.FactRun",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="verifications",
        help_text="The fact run made on this verification's behalf.",
    )
    message = models.ForeignKey(
        GroundingMessage, null=True, blank=True, on_delete=models.CASCADE, related_name="verifications"
    )
    review_status = models.CharField(
        max_length=16, choices=ReviewStatus.choices, default=ReviewStatus.PENDING
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)
    corrected_entry = models.CharField(max_length=32, blank=True, help_text="Entry written by the review.")
    reviewed_verdict = models.CharField(
        max_length=16, choices=Verdict.choices, blank=True, help_text="The verdict the reviewer gave."
    )
    # The queue (docs/grounding.md "The review queue"): what the verdict leans to when it abstains, and
    # why it waits for a person ("" when it does not).
    leaning = models.CharField(max_length=16, blank=True, help_text="supported, contradicted or none.")
    queue_reason = models.TextField(blank=True, help_text="Why it waits for review.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = VerificationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["review_status", "verdict", "-created_at"], name="grounding_review_queue"),
            models.Index(fields=["review_status", "confidence"], name="grounding_review_order"),
            # The verifications citing an entry (its page): ``sources @> [{"entry_id": …}]``.
            GinIndex(fields=["sources"], opclasses=["jsonb_path_ops"], name="grounding_sources_cited"),
        ]
        permissions = [("review_verification", "Can review grounding verifications")]

    def __str__(self) -> str:
        return f"{self.verdict}: {self.claim[:80]}"

    @property
    def verified(self) -> bool:
        return self.verdict == Verdict.SUPPORTED


class ReviewDecision(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"
    CORRECT = "correct", "Correct"


class ReviewMemoryQuerySet(models.QuerySet["ReviewMemory"]):
    def in_force(self) -> ReviewMemoryQuerySet:
        return self.filter(revoked_at__isnull=True)


class ReviewMemory(models.Model):
    """A reviewed verdict, remembered with its claim so the same claim said again gets it (judge
    ``review``). One per verification: a later review of that verification replaces it; revoking
    it (the admin's action) stops it being used."""

    verification = models.OneToOneField(Verification, on_delete=models.CASCADE, related_name="memory")
    claim = models.TextField()
    normalized = models.TextField(
        db_index=True, help_text="The claim in lower case, words only."
    )
    embedding = EmbeddingField()
    features = models.JSONField(
        default=dict, help_text="Numbers, names, polarity and modality: a match must have the same."
    )
    domain = models.CharField(max_length=64, blank=True)
    decision = models.CharField(max_length=16, choices=ReviewDecision.choices)
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    correction = models.TextField(blank=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept as text too: the citation outlives the reviewer's account.
    reviewer_name = models.CharField(max_length=150, blank=True)
    reviewed_at = models.DateTimeField()
    note = models.TextField(blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ReviewMemoryQuerySet.as_manager()

    class Meta:
        ordering = ["-reviewed_at", "-id"]
        verbose_name = verbose_name_plural = "review memory"
        indexes = [hnsw_cosine_index(name="grounding_review_memory_vec", field="embedding")]

    def __str__(self) -> str:
        return f"{self.verdict} (review of #{self.verification_id}): {self.claim[:80]}"
