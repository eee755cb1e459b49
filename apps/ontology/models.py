"""The ontology (seed 003, DESIGN §2.9): classes as notes in Postgres, the source of truth every
process shares; the rdflib graph and its OWL 2 RL closure are built from them per ``version``
(``graph.py``). Agents change it only through proposals an operator reviews.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from apps.core.models import ApiToken
from apps.embeddings.fields import EmbeddingField, hnsw_cosine_index

NAMESPACE = "https://cortexweb.dev/ontology#"
_UNIT = [MinValueValidator(0.0), MaxValueValidator(1.0)]


class Physicality(models.TextChoices):
    VIRTUAL = "VirtualEntity"
    PHYSICAL = "PhysicalEntity"
    ABSTRACT = "AbstractEntity"


class Role(models.TextChoices):
    OBJECT = "Object"
    PROCESS = "Process"
    AGENT = "Agent"
    QUALITY = "Quality"
    RELATION = "Relation"
    CONCEPT = "Concept"


class Maturity(models.TextChoices):
    DRAFT = "draft"
    EMERGING = "emerging"
    MATURE = "mature"


class NoteStatus(models.TextChoices):
    DRAFT = "draft"
    COMPLETE = "complete"


#: Relationship names a note may use (config/ontology/README.md), subject — name — object.
RELATIONSHIP_TYPES = (
    "has-part",
    "is-part-of",
    "requires",
    "enables",
    "uses",
    "mitigates",
    "causes",
    "implements",
    "regulates",
    "relates-to",
    "derived-from",
)


class OntologyClass(models.Model):
    """One class, as its note says (VisionClaw's note shape)."""

    iri = models.CharField(max_length=300, unique=True)
    local_name = models.CharField(max_length=120, unique=True)
    term_id = models.CharField(max_length=32, unique=True)
    preferred_term = models.CharField(max_length=200)
    alt_terms = ArrayField(models.CharField(max_length=300), default=list, blank=True)
    definition = models.TextField()
    physicality = models.CharField(max_length=16, choices=Physicality.choices)
    role = models.CharField(max_length=12, choices=Role.choices)
    domain = models.CharField(max_length=32, db_index=True)
    quality_score = models.FloatField(validators=_UNIT)
    authority_score = models.FloatField(validators=_UNIT)
    maturity = models.CharField(max_length=12, choices=Maturity.choices)
    status = models.CharField(max_length=12, choices=NoteStatus.choices)
    source = models.CharField(max_length=500, help_text="Markdown link [title](url) or plain text.")
    # Full IRIs (cw: classes or external ones such as prov:Entity).
    parent_iris = ArrayField(models.CharField(max_length=300), default=list, blank=True)
    disjoint_iris = ArrayField(models.CharField(max_length=300), default=list, blank=True)
    # [{"type": "mitigates", "target": "<iri>"}], asserted on this (the subject's) note.
    relationships = models.JSONField(default=list, blank=True)
    knowledge_entries = ArrayField(models.CharField(max_length=32), default=list, blank=True)
    about = models.TextField(blank=True, help_text="The note's About section (markdown).")
    markdown = models.TextField(help_text="The whole note, as written.")
    embedding = EmbeddingField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["local_name"]
        verbose_name_plural = "ontology classes"
        indexes = [hnsw_cosine_index(name="ontology_class_embedding", field="embedding")]

    def __str__(self) -> str:
        return f"{self.preferred_term} ({self.term_id})"


class OntologyState(models.Model):
    """The ontology's version (one row): bumped in the transaction of every change, so each process
    rebuilds its graph from exactly the classes of the version it read."""

    version = models.PositiveIntegerField(default=0)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = "ontology state"

    def __str__(self) -> str:
        return f"Ontology version {self.version}"


class ProposalStatus(models.TextChoices):
    """Stored lowercase (as since 0001); the labels are seed 003's values, which the API and MCP answer
    (``PRCreated`` is never reached: no pull request is opened)."""

    STAGED = "staged", "Staged"
    MERGED = "merged", "Merged"
    REJECTED = "rejected", "Rejected"


#: Seed 003's ProposalResult.status values, in its order.
SEED_PROPOSAL_STATUSES = ("Staged", "PRCreated", "Merged", "Rejected")


class ProposalAction(models.TextChoices):
    CREATE = "create"
    AMEND = "amend"


class OntologyProposal(models.Model):
    """An agent's proposed note or amendment, checked and scored, waiting for an operator."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    action = models.CharField(max_length=8, choices=ProposalAction.choices)
    target_iri = models.CharField(max_length=300)
    proposal = models.JSONField(help_text="The proposal as received (snake_case fields).")
    # The identity comes from the credential; whatever the body said is kept only as "claimed".
    token = models.ForeignKey(ApiToken, on_delete=models.PROTECT, related_name="ontology_proposals")
    agent_context = models.JSONField(default=dict, blank=True)
    consistent = models.BooleanField()
    consistency = models.JSONField(default=dict, help_text="{consistent, problems: [{kind, message}]}")
    quality_score = models.FloatField(validators=_UNIT)
    score_breakdown = models.JSONField(default=dict)
    markdown_preview = models.TextField()
    diff = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=ProposalStatus.choices, default=ProposalStatus.STAGED)
    base_version = models.PositiveIntegerField(help_text="The ontology version it was checked against.")
    merged_version = models.PositiveIntegerField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.action} {self.target_iri} ({self.status})"
