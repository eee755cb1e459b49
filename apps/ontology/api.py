"""``/ontology-agent/``: the seven ontology tools of seed 003 (VisionClaw's contracts: camelCase
requests, snake_case responses). Reads are anonymous; ``propose`` needs a token."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from apps.ontology import sparql as ontology_sparql
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
