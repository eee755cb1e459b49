"""``/v1/memory/``: tell, ask, list, read, update, pin and forget an agent's memories (seed 004).

The caller's token is the owner of what it tells and the only one who reads it back (unless an
operator shares a memory domain-wide); ``agent`` and ``session`` narrow it to a namespace.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from ninja import Query, Router

from apps.core.auth import read_token, write_token
from apps.core.errors import UnsupportedMediaType, ValidationFailed
from apps.memory import answers, rdf, selectors, services
from apps.memory.schemas import (
    AskIn,
    AskOut,
    ExportIn,
    ForgetAllIn,
    ForgetAllOut,
    ForgetModeIn,
    ForgetOut,
    ImportOut,
    ImportQueryIn,
    ListQueryIn,
    MemoryHistoryOut,
    MemoryListOut,
    MemoryOut,
    MemoryUpdateIn,
    MemoryUpdateOut,
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


@router.get("", auth=read_token, response=MemoryListOut, summary="List your memories (filtered, paged)")
def memory_list(request: HttpRequest, filters: Query[ListQueryIn]) -> dict[str, Any]:
    scope = _scope(request, filters.agent, filters.session)
    return selectors.memories_list(
        scope=scope, filters=filters.filters(), limit=filters.limit, offset=filters.offset
    )


@router.post("/forget-all", auth=write_token, response=ForgetAllOut, summary="Forget all your memories")
def memory_forget_all(request: HttpRequest, payload: ForgetAllIn) -> dict[str, Any]:
    scope = _scope(request, payload.agent, payload.session)
    return services.memories_forget_all(scope=scope, confirm=payload.confirm, domain=payload.domain or "")


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
    scope = _scope(request, payload.agent, payload.session)
    return answers.ask_result(scope=scope, **payload.ask_arguments())


# The file formats of export and import, as OpenAPI documents them (the bodies are not JSON schemas).
_FILE_CONTENT: dict[str, Any] = {
    "text/turtle": {"schema": {"type": "string", "description": "Turtle."}},
    "application/ld+json": {"schema": {"type": "object", "description": "JSON-LD, its context inline."}},
}
# The media types an import accepts, and the format each one means.
IMPORT_MEDIA_TYPES = {"text/turtle": "turtle", "application/ld+json": "jsonld", "application/json": "jsonld"}


@router.get(
    "/export",
    auth=read_token,
    summary="Export memories as RDF (Turtle or JSON-LD)",
    openapi_extra={
        "responses": {
            200: {
                "description": "The token's own memories (narrowed by agent, session and domain when "
                "given) in Semem's vocabulary plus PROV-O, as an attachment: docs/memory.md.",
                "headers": {
                    "Content-Disposition": {
                        "schema": {"type": "string"},
                        "description": 'attachment; filename="memories-….ttl" (or .jsonld)',
                    }
                },
                "content": _FILE_CONTENT,
            }
        }
    },
)
def memories_export(request: HttpRequest, filters: Query[ExportIn]) -> HttpResponse:
    content, media_type, _ = services.memories_export(
        scope=_scope(request, filters.agent, filters.session), fmt=filters.format, domain=filters.domain
    )
    response = HttpResponse(content, content_type=media_type)
    filename = f"memories-{timezone.now():%Y%m%d-%H%M%S}.{rdf.FILE_SUFFIXES[filters.format]}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@router.post(
    "/import",
    auth=write_token,
    response=ImportOut,
    summary="Import memories from an export (Turtle or JSON-LD)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "The file, as the body (not a form): text/turtle, or application/ld+json "
            "(application/json too).",
            "content": {**_FILE_CONTENT, "application/json": _FILE_CONTENT["application/ld+json"]},
        }
    },
)
def memories_import(request: HttpRequest, query: Query[ImportQueryIn]) -> dict[str, Any]:
    """Restores the memories of a file into this token's memories, all or none: ids already this
    token's are left alone; every other id gets this token's own id for it (renamed), whoever holds it."""
    fmt = _import_format(request, query.format)
    try:
        content = request.body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValidationFailed(
            f"The file must be UTF-8 text (byte {error.start} is not).", details={"field": "body"}
        ) from None
    return services.memories_import(scope=_scope(request), content=content, fmt=fmt)


def _import_format(request: HttpRequest, requested: str | None) -> str:
    """The format of the body: its Content-Type's, which must agree with ``?format=`` when given."""
    media_type = (request.content_type or "").strip().lower()
    fmt = IMPORT_MEDIA_TYPES.get(media_type)
    if fmt is None:
        raise UnsupportedMediaType(
            f"Send the file itself as the body, with Content-Type text/turtle or application/ld+json; "
            f"this body is {media_type or 'of no media type'}.",
            details={"accepted": sorted(IMPORT_MEDIA_TYPES), "received": media_type},
        )
    if requested and requested != fmt:
        raise UnsupportedMediaType(
            f"format={requested} but the body is {media_type}: send "
            + ("text/turtle" if requested == "turtle" else "application/ld+json")
            + ", or leave format out.",
            details={"accepted": [m for m, f in IMPORT_MEDIA_TYPES.items() if f == requested]},
        )
    return fmt


@router.get("/{uuid:memory_id}", auth=read_token, response=MemoryOut, summary="One memory")
def memory_detail(request: HttpRequest, memory_id: UUID) -> dict[str, Any]:
    memory = selectors.memory_get(scope=_scope(request), memory_id=memory_id)
    return selectors.memory_detail(memory=memory)


@router.patch("/{uuid:memory_id}", auth=write_token, response=MemoryUpdateOut, summary="Update a memory")
def memory_update(request: HttpRequest, memory_id: UUID, payload: MemoryUpdateIn) -> dict[str, Any]:
    updated = services.memory_update(scope=_scope(request), memory_id=memory_id, changes=payload.changes())
    return {**selectors.memory_detail(memory=updated["memory"]), "changed": updated["changed"]}


@router.get(
    "/{uuid:memory_id}/history", auth=read_token, response=MemoryHistoryOut, summary="A memory's versions"
)
def memory_history(request: HttpRequest, memory_id: UUID) -> dict[str, Any]:
    return selectors.memory_history(scope=_scope(request), memory_id=memory_id)


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
