"""``/ontology-agent/``: the seven ontology tools of seed 003 (VisionClaw's contracts: camelCase
requests, snake_case responses). Reads are anonymous; ``propose`` needs a token."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from apps.core.auth import write_token
from apps.ontology import proposals
from apps.ontology import sparql as ontology_sparql
from apps.ontology.schemas_propose import ProposeIn, ProposeOut
from apps.ontology.schemas_query import QueryIn, QueryOut

router = Router(tags=["ontology"])


@router.post(
    "/query",
    response=QueryOut,
    summary="Read-only SPARQL over the ontology and its inferences (ontology_query)",
    description="Validates, then runs a SELECT or ASK query on the ontology's OWL 2 RL closure (inferred "
    "triples included). Refused with errors and hints: syntax errors, updates, SERVICE, FROM, CONSTRUCT/"
    "DESCRIBE, unknown cw: names. At most 1000 rows (a missing or larger LIMIT is capped) within 5 s.",
)
def query(request: HttpRequest, payload: QueryIn) -> dict[str, Any]:
    return ontology_sparql.ontology_query(sparql=payload.sparql)


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
        agent_context=payload.agentContext.model_dump(exclude_none=True),
    )
    return {"success": True, "proposal": result}
