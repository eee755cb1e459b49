"""``/v1/knowledge/``: hybrid search of the knowledge base and the verification of one claim."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from apps.core.auth import read_token, verify_token
from apps.grounding import services as grounding_services
from apps.knowledge import selectors
from apps.knowledge.schemas import KnowledgeSearchIn, KnowledgeSearchOut, VerificationOut, VerifyIn

router = Router(tags=["knowledge"])


@router.post("/search", auth=read_token, response=KnowledgeSearchOut, summary="Search the knowledge base")
def search(request: HttpRequest, payload: KnowledgeSearchIn) -> dict[str, Any]:
    hits = selectors.knowledge_search(query=payload.query, domain=payload.domain, limit=payload.limit)
    return {"query": payload.query, "domain": payload.domain, "results": [hit.as_dict() for hit in hits]}


@router.post(
    "/verify", auth=verify_token, response=VerificationOut, exclude_none=True, summary="Verify a claim"
)
def verify(request: HttpRequest, payload: VerifyIn) -> dict[str, Any]:
    verification = grounding_services.claim_verify(claim=payload.claim, domain=payload.domain)
    return grounding_services.verification_result(verification=verification)
