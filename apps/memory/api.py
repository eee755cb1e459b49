"""``/v1/memory/``: tell, ask, read, pin and forget an agent's memories (seed 004).

The caller's token is the owner of what it tells and the only one who reads it back (unless an
operator shares a memory domain-wide); ``agent`` and ``session`` narrow it to a namespace.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpRequest
from ninja import Router

from apps.core.auth import read_token, write_token
from apps.memory import answers, selectors, services
from apps.memory.schemas import (
    AskIn,
    AskOut,
    ForgetModeIn,
    ForgetOut,
    MemoryOut,
    PinIn,
    TellBatchIn,
    TellBatchOut,
    TellIn,
    TellOut,
)
from apps.memory.services import Scope

router = Router(tags=["memory"])


def _scope(request: HttpRequest, agent: str | None = None, session: str | None = None) -> Scope:
    return Scope(token=request.auth, agent=agent or "", session=session or "")  # type: ignore[attr-defined]


@router.post("/tell", auth=write_token, response=TellOut, summary="Tell: remember one thing")
def tell(request: HttpRequest, payload: TellIn) -> dict[str, Any]:
    scope = _scope(request, payload.agent, payload.session)
    return services.memory_tell(scope=scope, items=[payload.tell_item()])[0]


@router.post("/tell/batch", auth=write_token, response=TellBatchOut, summary="Tell up to 500 memories")
def tell_batch(request: HttpRequest, payload: TellBatchIn) -> dict[str, Any]:
    scope = _scope(request, payload.agent, payload.session)
    results = services.memory_tell(scope=scope, items=[item.tell_item() for item in payload.items])
    return services.tell_batch_summary(results=results)


@router.post("/ask", auth=read_token, response=AskOut, summary="Ask: the memories that matter")
def ask(request: HttpRequest, payload: AskIn) -> dict[str, Any]:
    return answers.ask_result(
        scope=_scope(request, payload.agent, payload.session),
        question=payload.question,
        domain=payload.domain,
        memory_type=payload.type,
        limit=payload.limit,
        threshold=payload.threshold,
        include_superseded=payload.includeSuperseded,
        weights=payload.weights.model_dump() if payload.weights else None,
    )


@router.get("/{uuid:memory_id}", auth=read_token, response=MemoryOut, summary="One memory")
def memory_detail(request: HttpRequest, memory_id: UUID) -> dict[str, Any]:
    memory = selectors.memory_get(scope=_scope(request), memory_id=memory_id)
    return selectors.memory_detail(memory=memory)


@router.delete("/{uuid:memory_id}", auth=write_token, response=ForgetOut, summary="Remove a memory")
def memory_delete(request: HttpRequest, memory_id: UUID) -> dict[str, Any]:
    return services.memory_forget(scope=_scope(request), memory_id=memory_id, mode="remove")


@router.post("/{uuid:memory_id}/forget", auth=write_token, response=ForgetOut, summary="Forget a memory")
def memory_forget(request: HttpRequest, memory_id: UUID, payload: ForgetModeIn) -> dict[str, Any]:
    return services.memory_forget(scope=_scope(request), memory_id=memory_id, mode=payload.mode)


@router.post("/{uuid:memory_id}/pin", auth=write_token, response=MemoryOut, summary="Pin or unpin a memory")
def memory_pin(request: HttpRequest, memory_id: UUID, payload: PinIn) -> dict[str, Any]:
    memory = services.memory_pin(scope=_scope(request), memory_id=memory_id, pinned=payload.pinned)
    return selectors.memory_detail(memory=memory)
