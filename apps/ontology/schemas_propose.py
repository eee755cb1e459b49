"""In/Out schemas of ``POST /ontology-agent/propose`` and the MCP tool ``ontology_propose`` (seed
003: the body's keys ``proposal`` and ``agentContext`` in camelCase, the proposal's own fields and the
response in snake_case, as VisionClaw's clients send and read them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Field, Schema

from apps.core.schemas import StrictSchema
from apps.ontology.models import RELATIONSHIP_TYPES, Physicality, Role
from apps.ontology.notes import DOMAINS

RelationshipType = Literal[tuple(RELATIONSHIP_TYPES)]  # type: ignore[valid-type]
# An amendment may also change the class's axioms, under the note's own property names.
AmendableType = Literal[(*RELATIONSHIP_TYPES, "is-subclass-of", "disjoint-with")]  # type: ignore[valid-type]
ClassName = Annotated[str, Field(min_length=1, max_length=300)]
Term = Annotated[str, Field(min_length=1, max_length=300)]


class CreateProposalIn(StrictSchema):
    """A NoteProposal: a new class."""

    action: Literal["create"]
    preferred_term: str = Field(..., min_length=1, max_length=200)
    definition: str = Field(..., min_length=1, max_length=4000, description="In your own words.")
    owl_class: str = Field(
        ..., min_length=1, max_length=300, description="cw:<UpperCamelCase name> of the class."
    )
    physicality: Literal[tuple(Physicality.values)]  # type: ignore[valid-type]
    role: Literal[tuple(Role.values)]  # type: ignore[valid-type]
    domain: Literal[tuple(DOMAINS)]  # type: ignore[valid-type]
    is_subclass_of: list[ClassName] = Field(
        default_factory=list, max_length=20, description="Parent classes (cw:Name, prov:Entity or full IRIs)."
    )
    relationships: dict[RelationshipType, list[ClassName]] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="Typed relationships: has-part, requires, mitigates, … → classes."
    )
    alt_terms: list[Term] = Field(default_factory=list, max_length=50)
    disjoint_with: list[ClassName] = Field(default_factory=list, max_length=20)
    source: str | None = Field(
        None,
        max_length=500,
        description="The authoritative source, ideally a markdown link [title](https://…).",
    )
    owner_user_id: str | None = Field(
        None, max_length=200, description="Replaced by the token's identity (the user_id of agentContext)."
    )


class AmendmentIn(StrictSchema):
    """A NoteAmendment."""

    add_relationships: dict[AmendableType, list[ClassName]] = Field(default_factory=dict)
    remove_relationships: dict[AmendableType, list[ClassName]] = Field(default_factory=dict)
    update_definition: str | None = Field(None, min_length=1, max_length=4000)
    update_quality_score: float | None = Field(None, ge=0.0, le=1.0)
    add_alt_terms: list[Term] = Field(default_factory=list, max_length=50)
    custom_fields: dict[str, Any] = Field(
        default_factory=dict, description="Kept with the proposal for the reviewer; not applied to the note."
    )


class AmendProposalIn(StrictSchema):
    action: Literal["amend"]
    target_iri: str = Field(..., min_length=1, max_length=300)
    amendment: AmendmentIn


class AgentContextIn(StrictSchema):
    """Who says they are proposing: agent_id and user_id are replaced by the token's identity."""

    agent_id: str | None = Field(None, max_length=200)
    agent_type: str | None = Field(None, max_length=100)
    task_description: str | None = Field(None, max_length=2000)
    session_id: str | None = Field(None, max_length=200)
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    user_id: str | None = Field(None, max_length=200)


class ProposeIn(StrictSchema):
    proposal: Annotated[CreateProposalIn | AmendProposalIn, Field(discriminator="action")]
    agentContext: AgentContextIn | None = Field(
        None, description="Who is proposing, as the agent says; agent_id and user_id come from the token."
    )


class ProblemOut(Schema):
    kind: str = Field(
        ...,
        description="unknown_parent, unknown_relationship_target, subclass_cycle, disjointness_violation, "
        "unsatisfiable",
    )
    message: str


class ConsistencyOut(Schema):
    consistent: bool
    new_subsumptions: list[str] = Field(
        ..., description="Superclasses the reasoner adds beyond the named parents."
    )
    explanation: str | None = Field(None, description="Why it is inconsistent (absent when consistent).")
    problems: list[ProblemOut]


class ProposalResultOut(Schema):
    proposal_id: str
    action: str
    target_iri: str
    consistency: ConsistencyOut
    quality_score: float
    score_breakdown: dict[str, dict[str, float]] = Field(
        ..., description="Each part of the score: {weight, value (0–1), points = weight × value}."
    )
    markdown_preview: str
    diff: str = Field(..., description="Unified diff against the current note (amend); empty for create.")
    status: Literal["Staged", "PRCreated", "Merged", "Rejected"] = Field(
        ..., description="Seed 003's values; PRCreated is never given (no pull request is opened)."
    )


class ProposeOut(Schema):
    success: bool
    proposal: ProposalResultOut
