"""In/Out schemas of the ontology read tools (seed 003): requests in camelCase, answers in snake_case,
as VisionClaw's clients send and read them. Inputs are strict, so a snake_case ``start_iri`` where
``startIri`` belongs is a 422 naming it, not a default silently used.

``whelk_inferred`` and ``is_inferred`` keep VisionClaw's names; here they mark what the OWL 2 RL
closure (``owlrl``) derives and no note asserts.
"""

from __future__ import annotations

from typing import Literal

from ninja import Field, Schema

from apps.core.schemas import StrictSchema

IRI_MAX = 300

# --- discover ---------------------------------------------------------------------------------


class DiscoverIn(StrictSchema):
    query: str = Field(
        ..., min_length=1, max_length=500, description="Free text: terms, phrases, a question."
    )
    limit: int = Field(20, ge=1, le=100, description="At most this many results.")
    domain: str | None = Field(
        None, max_length=32, description="Only classes of this domain (cortexweb, security, …)."
    )


class DiscoverRelationshipOut(Schema):
    rel_type: str = Field(..., description="subClassOf or a note relationship (mitigates, uses, …).")
    target_iri: str
    target_term: str


class DiscoverResultOut(Schema):
    iri: str
    preferred_term: str
    definition_summary: str = Field(..., description="The definition's first sentence.")
    relevance_score: float = Field(
        ..., description="Lexical, semantic and hierarchy score (docs/ontology.md)."
    )
    quality_score: float
    domain: str
    relationships: list[DiscoverRelationshipOut]
    whelk_inferred: bool = Field(
        ...,
        description="Reached only through a subsumption the OWL 2 RL reasoner inferred (not a direct match).",
    )


class DiscoverOut(Schema):
    success: bool
    count: int
    results: list[DiscoverResultOut]


# --- read -------------------------------------------------------------------------------------


class ReadIn(StrictSchema):
    iri: str = Field(..., min_length=1, max_length=IRI_MAX, description="A full class IRI or cw:LocalName.")


class OntologyMetadataOut(Schema):
    owl_class: str
    physicality: str
    role: str
    domain: str
    quality_score: float
    authority_score: float
    maturity: str
    status: str
    parent_classes: list[str]


class WhelkAxiomOut(Schema):
    axiom_type: str = Field(..., description="SubClassOf, DisjointWith or a relationship (mitigates, …).")
    subject: str
    object: str
    is_inferred: bool = Field(..., description="Derived by the OWL 2 RL closure, not asserted by a note.")


class RelatedNoteOut(Schema):
    iri: str
    preferred_term: str
    relationship_type: str
    direction: Literal["outgoing", "incoming"]
    summary: str


class EnrichedNoteOut(Schema):
    iri: str
    term_id: str
    preferred_term: str
    markdown_content: str
    ontology_metadata: OntologyMetadataOut
    whelk_axioms: list[WhelkAxiomOut]
    related_notes: list[RelatedNoteOut]
    schema_context: str = Field(
        ..., description="Prefixes, the class's neighbourhood and properties, for SPARQL."
    )


class ReadOut(Schema):
    success: bool
    note: EnrichedNoteOut


# --- traverse ---------------------------------------------------------------------------------


class TraverseIn(StrictSchema):
    startIri: str = Field(
        ..., min_length=1, max_length=IRI_MAX, description="A full class IRI or cw:LocalName."
    )
    depth: int = Field(3, ge=1, le=5)
    relationshipTypes: list[str] | None = Field(
        None,
        max_length=13,
        description="Only these edges: subClassOf, disjointWith or note relationships (mitigates, …).",
    )


class TraversalNodeOut(Schema):
    iri: str
    preferred_term: str
    domain: str
    depth: int


class TraversalEdgeOut(Schema):
    source_iri: str
    target_iri: str
    relationship_type: str


class TraversalOut(Schema):
    start_iri: str
    nodes: list[TraversalNodeOut]
    edges: list[TraversalEdgeOut]


class TraverseOut(Schema):
    success: bool
    traversal: TraversalOut


# --- validate ---------------------------------------------------------------------------------


class AxiomIn(StrictSchema):
    # The seed's own field names (snake_case even in the request).
    axiom_type: str = Field(
        ..., min_length=1, max_length=64, description="SubClassOf, DisjointWith or a relationship."
    )
    subject: str = Field(..., min_length=1, max_length=IRI_MAX)
    object: str = Field(..., min_length=1, max_length=IRI_MAX)


class ValidateIn(StrictSchema):
    axioms: list[AxiomIn] = Field(..., min_length=1, max_length=100)


class ValidateOut(Schema):
    success: bool
    valid: bool
    errors: list[str]
    hints: list[str]
    axiom_count: int


# --- status -----------------------------------------------------------------------------------


class StatusOut(Schema):
    service: str
    status: Literal["healthy", "degraded"]
    capabilities: list[str]
    ontology_version: int
    class_count: int
    inferred_triple_count: int
    unsatisfiable_classes: list[str]
    reasoner: str
    graph_build_ms: float
