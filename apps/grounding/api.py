"""``/v1/grounding/ground`` (ground a whole message, the seed's ``ground_message``) and
``/v1/knowledge/verify`` (verify one claim).

Both create verifications for the operators' review queue. ``verify`` keeps the URL, tag and
operation id it was published with under ``/v1/knowledge/``, so its router is mounted there.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from apps.core.auth import verify_token
from apps.grounding import services
from apps.grounding.schemas import GroundIn, GroundingMessageOut, VerificationOut, VerifyIn

router = Router(tags=["grounding"])
# Mounted at /v1/knowledge/ beside apps.knowledge.api.router (cortexweb/api.py).
knowledge_router = Router(tags=["knowledge"])


@knowledge_router.post(
    "/verify",
    auth=verify_token,
    response=VerificationOut,
    exclude_none=True,
    summary="Verify a claim",
    # The id it was published with when it lived in apps.knowledge.api; clients generated from
    # the document name their method after it.
    operation_id="apps_knowledge_api_verify",
)
def verify(request: HttpRequest, payload: VerifyIn) -> dict[str, Any]:
    verification = services.claim_verify(claim=payload.claim, domain=payload.domain)
    return services.verification_result(verification=verification)


@router.post(
    "/ground", auth=verify_token, response=GroundingMessageOut, exclude_none=True, summary="Ground a message"
)
def ground(request: HttpRequest, payload: GroundIn) -> dict[str, Any]:
    grounding = services.message_ground(
        message=payload.message, message_id=payload.messageId or "", mode=payload.mode
    )
    return services.grounding_message_result(grounding=grounding)
