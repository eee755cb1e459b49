"""``/ontology-agent/``: the seven ontology tools of seed 003 (VisionClaw's contracts: camelCase
requests, snake_case responses). Reads are anonymous; ``propose`` needs a token."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from apps.core.auth import write_token
from apps.ontology import cypher, proposals, selectors
from apps.ontology.schemas import (
    DiscoverIn,
    DiscoverOut,
    ReadIn,
    ReadOut,
    StatusOut,
    TraverseIn,
    TraverseOut,
    ValidateIn,
    ValidateOut,
)
from apps.ontology.schemas_propose import ProposeIn, ProposeOut
from apps.ontology.schemas_query import QueryIn, QueryOut

router = Router(tags=["ontology"])

# The read tools (ontology_discover, _read, _traverse, _validate, _status): anonymous, as the seed
# says; no auth= on purpose. Their MCP twins in apps/mcp_server/tools.py call the same selectors.


@router.post(
    "/discover",
    response=DiscoverOut,
    summary="Find ontology classes for a text (ontology_discover)",
    description="Lexical (terms, alternative terms, definitions) and semantic (embedding) matches, expanded "
    "down the class hierarchy, scored; whelk_inferred marks results reached only through a subsumption the "
    "OWL 2 RL reasoner inferred.",
)
def discover(request: HttpRequest, payload: DiscoverIn) -> dict[str, Any]:
    results = selectors.ontology_discover(query=payload.query, limit=payload.limit, domain=payload.domain)
    return {"success": True, "count": len(results), "results": results}


@router.post(
    "/read",
    response=ReadOut,
    summary="Read one class as an enriched note (ontology_read)",
    description="The note's markdown, metadata, axioms asserted and inferred (is_inferred), related notes "
    "with their direction, and a schema_context text for writing SPARQL. Unknown IRI: 404 with suggestions.",
)
def read(request: HttpRequest, payload: ReadIn) -> dict[str, Any]:
    return {"success": True, "note": selectors.ontology_read(iri=payload.iri)}


@router.post(
    "/traverse",
    response=TraverseOut,
    summary="Walk the ontology breadth-first from a class (ontology_traverse)",
    description="Subclass edges both ways, disjointness and note relationships, depth 1 to 5, each class "
    "once.",
)
def traverse(request: HttpRequest, payload: TraverseIn) -> dict[str, Any]:
    traversal = selectors.ontology_traverse(
        start_iri=payload.startIri, depth=payload.depth, relationship_types=payload.relationshipTypes
    )
    return {"success": True, "traversal": traversal}


@router.post(
    "/validate",
    response=ValidateOut,
    summary="Check candidate axioms against the ontology (ontology_validate)",
    description="Unknown classes, subclass cycles, disjointness contradicted by the closure: errors; what "
    "already holds and did-you-mean: hints. valid only when there is no error.",
)
def validate(request: HttpRequest, payload: ValidateIn) -> dict[str, Any]:
    return selectors.ontology_validate(axioms=[axiom.dict() for axiom in payload.axioms])


@router.get(
    "/status",
    response=StatusOut,
    summary="Health and capabilities (ontology_status)",
    description="healthy when the ontology has classes and none is unsatisfiable; the tools it offers.",
)
def status(request: HttpRequest) -> dict[str, Any]:
    return selectors.ontology_status()


@router.post(
    "/query",
    response=QueryOut,
    summary="Read-only Cypher or SPARQL over the ontology and its inferences (ontology_query)",
    description="Exactly one of cypher (seed 003: a read-only subset, MATCH … WHERE … RETURN … LIMIT n, "
    "translated to SPARQL and shown as translated_sparql; outside the subset: valid false with a hint naming "
    "the supported forms) or sparql. Validates, then runs a SELECT or ASK query on the ontology's OWL 2 RL "
    "closure (inferred triples included). Refused with errors and hints: syntax errors, updates, SERVICE, "
    "FROM, CONSTRUCT/DESCRIBE, GRAPH, unknown cw: names, regexes RE2 cannot run. At most 10,000 characters "
    "(422 beyond); at most 1000 rows (a missing or larger LIMIT is capped) and 1 MB of rows; stopped at the "
    "hard time limit (ONTOLOGY_QUERY_TIME_LIMIT_SECONDS, 5 s). 503 with Retry-After when this "
    "process runs too many queries.",
)
def query(request: HttpRequest, payload: QueryIn) -> dict[str, Any]:
    return cypher.ontology_query_request(sparql=payload.sparql, cypher=payload.cypher)


@router.post(
    "/propose",
    auth=write_token,
    response=ProposeOut,
    summary="Propose a new class or an amendment, staged for review (ontology_propose)",
    description="Needs a token with the write scope; 20 proposals a minute per token (429 with Retry-After). "
    "agentContext.agent_id and user_id are replaced by the token's identity. The proposal is checked for "
    "consistency (unknown parents or targets, subclass cycles, disjointness, owl:Nothing), scored, rendered "
    "as a note and staged; an operator merges or rejects it. No pull request is opened (pr_url is absent).",
)
def propose(request: HttpRequest, payload: ProposeIn) -> dict[str, Any]:
    result = proposals.ontology_propose(
        token=request.auth,  # type: ignore[attr-defined]
        proposal=payload.proposal.model_dump(),
        agent_context=payload.agentContext.model_dump(exclude_none=True) if payload.agentContext else {},
    )
    return {"success": True, "proposal": result}
