"""``/v1/grounding/``: ground a whole message (the seed's ``ground_message``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from apps.core.auth import verify_token
from apps.grounding import services
from apps.knowledge.schemas import GroundIn, GroundingMessageOut

router = Router(tags=["grounding"])


@router.post(
    "/ground", auth=verify_token, response=GroundingMessageOut, exclude_none=True, summary="Ground a message"
)
def ground(request: HttpRequest, payload: GroundIn) -> dict[str, Any]:
    grounding = services.message_ground(
        message=payload.message, message_id=payload.messageId or "", mode=payload.mode
    )
    return services.grounding_message_result(grounding=grounding)
