"""Curated knowledge (seed 001): bases → domains → prioritised sources → entries.

An entry is one checkable fact with its authoritative source; its embedding and a Postgres
full-text vector make it findable by meaning and by words (``selectors.knowledge_search``).
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from apps.embeddings.fields import EmbeddingField, hnsw_cosine_index

ENTRY_ID_PATTERN = r"^[A-Z]+-\d{3}$"
DOMAIN_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"


class KnowledgeBase(models.Model):
    """Where a set of domains is stored and loaded from (the seed's ``knowledge_bases``)."""

    name = models.CharField(max_length=100, unique=True)
    storage_path = models.CharField(
        max_length=500, default="config/knowledge/", help_text="Folder the packs are loaded from."
    )
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class UpdateFrequency(models.TextChoices):
    MANUAL = "manual", "Manual"
    DAILY = "daily", "Daily"
    WEEKLY = "weekly", "Weekly"


class KnowledgeDomain(models.Model):
    base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="domains")
    name = models.CharField(
        max_length=64,
        unique=True,
        validators=[RegexValidator(DOMAIN_NAME_PATTERN, "lowercase letters, digits, - and _")],
    )
    description = models.TextField(blank=True)
    embedding_model = models.CharField(max_length=100, default="all-MiniLM-L6-v2")
    update_frequency = models.CharField(
        max_length=10, choices=UpdateFrequency.choices, default=UpdateFrequency.MANUAL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SourceType(models.TextChoices):
    JSON_FILE = "json_file", "JSON file"
    MARKDOWN = "markdown", "Markdown"
    EXTERNAL_API = "external_api", "External API"
    EMBEDDED = "embedded", "Pre-embedded vectors"


class KnowledgeSource(models.Model):
    """A file (or API) entries come from. Lower ``priority`` wins when sources conflict."""

    domain = models.ForeignKey(KnowledgeDomain, on_delete=models.CASCADE, related_name="sources")
    name = models.CharField(max_length=200)
    type = models.CharField(max_length=20, choices=SourceType.choices, default=SourceType.JSON_FILE)
    location = models.CharField(max_length=500)
    priority = models.IntegerField(default=100, help_text="Lower = preferred when entries conflict.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["domain", "priority", "name"]
        constraints = [models.UniqueConstraint(fields=["domain", "name"], name="knowledge_source_unique")]

    def __str__(self) -> str:
        return f"{self.domain.name}: {self.name}"


class KnowledgeEntryQuerySet(models.QuerySet["KnowledgeEntry"]):
    def in_domain(self, domain: str | None) -> KnowledgeEntryQuerySet:
        return self.filter(domain__name=domain) if domain else self

    def needing_embedding(self) -> KnowledgeEntryQuerySet:
        return self.filter(
            models.Q(embedding__isnull=True) | ~models.Q(embedded_hash=models.F("content_hash"))
        )


class KnowledgeEntry(models.Model):
    entry_id = models.CharField(
        max_length=32,
        unique=True,
        validators=[
            RegexValidator(ENTRY_ID_PATTERN, "an id like SEC-001: capital letters, '-', three digits")
        ],
    )
    domain = models.ForeignKey(KnowledgeDomain, on_delete=models.PROTECT, related_name="entries")
    knowledge_source = models.ForeignKey(
        KnowledgeSource, null=True, blank=True, on_delete=models.SET_NULL, related_name="entries"
    )
    topic = models.CharField(max_length=300)
    content = models.TextField()
    source = models.CharField(max_length=300, help_text="The authoritative source of the fact.")
    url = models.URLField(max_length=500, blank=True)
    related = ArrayField(models.CharField(max_length=32), default=list, blank=True)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    confidence = models.FloatField(default=1.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    last_verified = models.DateField(null=True, blank=True)
    embedding = EmbeddingField(null=True, blank=True)
    # Kept by Postgres itself (a stored generated column), so searches never recompute it.
    search_vector = models.GeneratedField(
        expression=SearchVector("topic", weight="A", config="english")
        + SearchVector("content", weight="B", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    content_hash = models.CharField(max_length=64, help_text="sha256 of what the embedding is computed from.")
    embedded_hash = models.CharField(max_length=64, blank=True, help_text="content_hash when last embedded.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = KnowledgeEntryQuerySet.as_manager()

    class Meta:
        ordering = ["entry_id"]
        verbose_name_plural = "knowledge entries"
        indexes = [
            hnsw_cosine_index(name="knowledge_entry_embedding", field="embedding"),
            GinIndex(fields=["search_vector"], name="knowledge_entry_fulltext"),
        ]

    def __str__(self) -> str:
        return f"{self.entry_id}: {self.topic}"
