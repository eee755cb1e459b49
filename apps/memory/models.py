"""Agent memory (seed 004, DESIGN §2.7): what an agent told CortexWeb, ranked when it asks.

A memory belongs to a **scope**: the API token that told it (one client's identity) and, inside
it, an optional ``agent`` and ``session`` namespace. No other token sees it unless an operator
shares it domain-wide (``shared``). Memories are superseded, never overwritten: ``supersedes``
closes the old memory's validity (``valid_until``) and links it to its successor (Zep's rule).
The ranking weights and the lifecycle constants are one ``MemorySettings`` row, edited in the admin.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from apps.core.models import ApiToken
from apps.core.process_cache import singleton_cache
from apps.embeddings.fields import EmbeddingField, hnsw_cosine_index

SCOPE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,99}$"
DOMAIN_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"

_UNIT = [MinValueValidator(0.0), MaxValueValidator(1.0)]


class MemoryType(models.TextChoices):
    SHORT_TERM = "short_term", "Short-term"
    LONG_TERM = "long_term", "Long-term"


class MemoryQuerySet(models.QuerySet["Memory"]):
    def current(self) -> MemoryQuerySet:
        """Memories still valid: not superseded (``valid_until`` unset)."""
        return self.filter(valid_until__isnull=True)

    def live(self, now: datetime | None = None) -> MemoryQuerySet:
        """Memories not past their TTL at ``now`` (the lifecycle deletes those, unless pinned)."""
        unexpired = models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now or timezone.now())
        return self.filter(unexpired | models.Q(pinned=True))


class Memory(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Scope. PROTECT: deleting a token would silently delete what its client remembered; rotate it
    # (the token admin's action moves the memories to the replacement) or delete the memories first.
    token = models.ForeignKey(ApiToken, on_delete=models.PROTECT, related_name="memories")
    agent = models.CharField(max_length=100, blank=True, db_index=True)
    session = models.CharField(max_length=100, blank=True)
    shared = models.BooleanField(
        default=False,
        help_text="Shared domain-wide by an operator: every token asking in this memory's domain sees it.",
    )

    content = models.TextField()
    content_hash = models.CharField(max_length=64, help_text="sha256 of the content.")
    embedding = EmbeddingField()
    domain = models.CharField(max_length=64, blank=True, db_index=True)
    type = models.CharField(max_length=12, choices=MemoryType.choices, default=MemoryType.SHORT_TERM)
    concepts = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # A content over the chunk size is stored as several memories sharing a chunk group.
    chunk_group = models.UUIDField(null=True, blank=True, db_index=True)
    chunk_index = models.PositiveIntegerField(default=0)

    importance = models.FloatField(default=0.5, validators=_UNIT)
    access_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    decay_factor = models.FloatField(default=1.0, validators=_UNIT)
    # When the lifecycle last decayed it: a second run within one cycle leaves it alone.
    decayed_at = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Deleted after this, unless pinned.")
    pinned = models.BooleanField(default=False, help_text="Pinned memories never expire.")
    valid_from = models.DateTimeField(default=timezone.now)
    valid_until = models.DateTimeField(null=True, blank=True, help_text="Set when superseded.")
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    # An update edits the memory in place (same id) and keeps what it replaced as a MemoryVersion.
    version = models.PositiveIntegerField(default=1, help_text="1 as told; one more per update.")
    updated_at = models.DateTimeField(null=True, blank=True, help_text="When it was last updated.")

    objects = MemoryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "memories"
        indexes = [
            hnsw_cosine_index(name="memory_embedding", field="embedding"),
            models.Index(fields=["token", "domain"], name="memory_scope_domain"),
            models.Index(
                fields=["expires_at"], name="memory_expiring", condition=models.Q(expires_at__isnull=False)
            ),
            models.Index(fields=["domain"], name="memory_shared", condition=models.Q(shared=True)),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(importance__gte=0) & models.Q(importance__lte=1),
                name="memory_importance_unit",
            ),
            models.CheckConstraint(
                condition=models.Q(decay_factor__gt=0) & models.Q(decay_factor__lte=1),
                name="memory_decay_unit",
            ),
            models.CheckConstraint(
                condition=~models.Q(shared=True, domain=""), name="memory_shared_needs_domain"
            ),
        ]

    def __str__(self) -> str:
        text = " ".join(self.content.split())
        return text[:80] + ("…" if len(text) > 80 else "")


class MemoryVersion(models.Model):
    """What a memory said before an update: its content, domain, metadata and importance as version
    ``version``, valid from ``valid_from`` until the update replaced it (``replaced_at``).

    Removed with the memory: forgetting a memory forgets what it used to say too."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    content = models.TextField()
    domain = models.CharField(max_length=64, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    importance = models.FloatField(validators=_UNIT)
    valid_from = models.DateTimeField(help_text="When this version was told or written.")
    replaced_at = models.DateTimeField(default=timezone.now, help_text="When an update replaced it.")

    class Meta:
        ordering = ["memory", "version"]
        constraints = [
            models.UniqueConstraint(fields=["memory", "version"], name="memory_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} v{self.version}"


class MemoryAccess(models.Model):
    """One retrieval of a memory by ``ask`` (its access history; the lifecycle prunes old rows)."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="accesses")
    accessed_at = models.DateTimeField(default=timezone.now)
    relevance = models.FloatField()

    class Meta:
        ordering = ["-accessed_at"]
        indexes = [models.Index(fields=["memory", "-accessed_at"], name="memory_access_recent")]

    def __str__(self) -> str:
        return f"{self.memory_id} at {self.accessed_at:%Y-%m-%d %H:%M:%S} ({self.relevance:.3f})"


class MemorySettings(models.Model):
    """The one memory configuration: ``ask``'s weights (seed 004's defaults) and the lifecycle's
    constants. ``MemorySettings.current()`` creates it with the defaults."""

    weight_domain = models.FloatField(default=0.35, validators=_UNIT, help_text="Domain match (seed: 0.35).")
    weight_temporal = models.FloatField(default=0.20, validators=_UNIT, help_text="Temporal (seed: 0.20).")
    weight_semantic = models.FloatField(default=0.30, validators=_UNIT, help_text="Semantic (seed: 0.30).")
    weight_frequency = models.FloatField(default=0.15, validators=_UNIT, help_text="Frequency (seed: 0.15).")
    temporal_lambda_per_day = models.FloatField(
        default=0.1,
        validators=[MinValueValidator(0.0), MaxValueValidator(100.0)],
        help_text="λ of temporal = decay factor · exp(−λ · age in days); 0.1 halves it in about 7 days.",
    )
    frequency_saturation = models.PositiveIntegerField(
        default=100,
        validators=[MinValueValidator(1)],
        help_text="Accesses at which frequency = log1p(count) / log1p(this) reaches 1 (times importance).",
    )
    relevance_threshold = models.FloatField(
        default=0.1, validators=_UNIT, help_text="ask's default: memories below it are not returned."
    )
    semantic_floor = models.FloatField(
        default=0.26,
        validators=[MinValueValidator(-1.0), MaxValueValidator(1.0)],
        help_text="ask answers only from memories at least this similar in meaning to the question "
        "(cosine similarity, whatever their recency or importance); measured on "
        "tests/data/memory_relevance_pairs.jsonl, see docs/memory.md.",
    )
    duplicate_similarity = models.FloatField(
        default=0.97,
        validators=[MinValueValidator(0.5), MaxValueValidator(1.0)],
        help_text="tell reinforces an existing memory this similar (same scope and domain) instead of "
        "storing a copy.",
    )
    reinforce_factor = models.FloatField(
        default=1.1,
        validators=[MinValueValidator(1.0), MaxValueValidator(10.0)],
        help_text="A retrieved memory's decay factor is multiplied by this (capped at 1).",
    )
    decay_rate = models.FloatField(
        default=0.9,
        validators=[MinValueValidator(0.01), MaxValueValidator(1.0)],
        help_text="Each lifecycle cycle multiplies the decay of memories not retrieved in it by this.",
    )
    decay_interval_hours = models.PositiveIntegerField(
        default=24,
        validators=[MinValueValidator(1), MaxValueValidator(24 * 365)],
        help_text="The decay cycle: a memory no ask retrieved for this long is decayed once (the lifecycle "
        "runs more often, for expiry and promotion, but decays a memory at most once per cycle).",
    )
    decay_floor = models.FloatField(
        default=0.001,
        validators=[MinValueValidator(0.000001), MaxValueValidator(1.0)],
        help_text="Decay never goes below this: a memory is never fully forgotten.",
    )
    promotion_accesses = models.PositiveIntegerField(
        default=10, help_text="A short-term memory retrieved more often than this becomes long-term."
    )
    access_history_days = models.PositiveIntegerField(
        default=30, validators=[MinValueValidator(1)], help_text="Access history older than this is pruned."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = "memory settings"

    def __str__(self) -> str:
        return "Memory settings"

    @classmethod
    def current(cls) -> MemorySettings:
        """The row in force (created with the defaults when missing), kept per process until it changes."""
        return _memory_settings_cache.current()

    @property
    def weights(self) -> dict[str, float]:
        return {
            "domain": self.weight_domain,
            "temporal": self.weight_temporal,
            "semantic": self.weight_semantic,
            "frequency": self.weight_frequency,
        }

    def clean(self) -> None:
        total = sum(self.weights.values())
        if abs(total - 1.0) > 1e-6:
            raise ValidationError(f"The four weights must sum to 1; they sum to {total:.4f}.")


_memory_settings_cache = singleton_cache(MemorySettings)
