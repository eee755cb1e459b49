"""``/v1/knowledge/``: hybrid search of the knowledge base.

``POST /v1/knowledge/verify`` shares the prefix but not this router: it creates a verification for
the review queue, so the app that owns verifications mounts it (``cortexweb/api.py``).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from apps.core.auth import read_token
from apps.knowledge import selectors
from apps.knowledge.schemas import KnowledgeSearchIn, KnowledgeSearchOut

router = Router(tags=["knowledge"])


@router.post("/search", auth=read_token, response=KnowledgeSearchOut, summary="Search the knowledge base")
def search(request: HttpRequest, payload: KnowledgeSearchIn) -> dict[str, Any]:
    hits = selectors.knowledge_search(query=payload.query, domain=payload.domain, limit=payload.limit)
    return {"query": payload.query, "domain": payload.domain, "results": [hit.as_dict() for hit in hits]}
