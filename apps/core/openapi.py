"""Both OpenAPI documents tell the truth about errors: every operation lists the error statuses it
can answer, each with the one error shape (``{"error": {"code", "message", "details"}}``).

The statuses follow from what an operation is, not from a hand-kept list per endpoint:

- every request passes the edge (``apps.core.middleware``): text a database cannot store (NUL
  bytes, lone surrogates) anywhere in it is a 422, a request Django cannot read a 400, and a
  database, Redis or broker outage a 503;
- a body can be malformed (400), too large (413), of another media type (415) or invalid (422);
- parameters can be invalid (422; a filter value on /api/: 400); an id in the path, or a name in
  the body (a knowledge domain, a tool), can name nothing (404);
- a token-authenticated operation answers 401 without a valid token, 403 without the scope, and
  429 past the token's request limit;
- an operation that starts upstream work (scopes ``upstream``/``verify``) or embeds text (which
  an ``EMBEDDINGS_URL`` service may do) can meet an upstream failure: 502.

``tests/test_openapi_contract.py`` runs Schemathesis against both documents: a status an operation
answers but does not list here fails it.
"""

from __future__ import annotations

import typing
from typing import Any

from ninja import NinjaAPI
from ninja.openapi.schema import OpenAPISchema
from ninja.operation import Operation
from ninja.params.models import TModel
from rest_framework import serializers
from rest_framework.schemas.openapi import AutoSchema

ERROR_SCHEMA_NAME = "Error"
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": ERROR_SCHEMA_NAME,
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {
                    "type": "string",
                    "description": "Stable, machine-readable: e.g. validation_failed.",
                },
                "message": {"type": "string", "description": "What went wrong and what to fix, for people."},
                "details": {"type": "object", "description": "Structured specifics (fields, retryAfter, …)."},
            },
        }
    },
}
ERROR_DESCRIPTIONS = {
    400: "Bad request: malformed JSON, or a request that cannot be read.",
    401: "No valid bearer token.",
    403: "The token lacks the scope this operation needs (details.required).",
    404: "Nothing has this id.",
    409: "The request conflicts with the current state (e.g. superseding a memory already superseded).",
    413: "The body is larger than CORTEX_MAX_BODY_BYTES.",
    415: "The body is not of a supported media type.",
    422: "Invalid fields, or text a database cannot store (NUL bytes, lone surrogates): details name each.",
    429: "A rate limit was reached: retry after details.retryAfter seconds (also Retry-After).",
    502: "An upstream (Wikidata, arXiv, a connector, the embeddings service) failed.",
    503: "Postgres, Redis or the broker is unavailable, or a feature is switched off (Retry-After).",
}
# Scopes whose operations start upstream work (docs/security.md).
UPSTREAM_SCOPES = frozenset({"upstream", "verify"})
# Operations outside those scopes that embed text, which an EMBEDDINGS_URL service does remotely
# (by view function: ninja's operations do not know the prefix their router is mounted at).
EMBEDDING_VIEWS = frozenset(
    {
        "apps.embeddings.api.create_embeddings",
        "apps.knowledge.api.search",
        "apps.memory.api.tell",
        "apps.memory.api.tell_batch",
        "apps.memory.api.ask",
        "apps.memory.api.memories_import",  # embeds the memories a file has no vector for
        "apps.ontology.api.discover",  # embeds the query
    }
)


# Operations whose body names something that may not exist (a knowledge domain, a tool): 404.
BODY_LOOKUP_VIEWS = frozenset(
    {
        "apps.knowledge.api.search",
        "apps.grounding.api.verify",
        "apps.connectors.api.call_tool",
        "apps.memory.api.tell",  # supersedes
        "apps.memory.api.tell_batch",
        "apps.ontology.api.discover",  # domain
        "apps.ontology.api.read",  # iri
        "apps.ontology.api.traverse",  # startIri
        "apps.ontology.api.propose",  # an amendment's target_iri
    }
)
# Operations that can conflict with what is stored: 409.
CONFLICT_VIEWS = frozenset(
    {
        "apps.memory.api.tell",
        "apps.memory.api.tell_batch",
        "apps.ontology.api.propose",  # creating a class that exists
    }
)
# Operations whose body is a file read from the request itself (no body model): 413 and 415 too.
RAW_BODY_VIEWS = frozenset({"apps.memory.api.memories_import"})


def error_statuses(
    *, token: bool, scope: str | None, body: bool, path_id: bool, upstream: bool, conflict: bool = False
) -> list[int]:
    statuses = {400, 422, 503}
    if conflict:
        statuses.add(409)
    if body:
        statuses |= {413, 415}
    if path_id:
        statuses.add(404)
    if token:
        statuses |= {401, 403, 429}
    if upstream or (scope is not None and scope in UPSTREAM_SCOPES):
        statuses.add(502)
    return sorted(statuses)


def _error_response(status: int, reference: str) -> dict[str, Any]:
    return {
        "description": ERROR_DESCRIPTIONS[status],
        "content": {"application/json": {"schema": {"$ref": reference}}},
    }


# --- /v1/ (django-ninja) ---------------------------------------------------------------------


class ErrorDocumentingSchema(OpenAPISchema):
    """ninja's OpenAPI document with each operation's error responses and the error schema."""

    def __init__(self, api: NinjaAPI, path_prefix: str) -> None:
        super().__init__(api, path_prefix)
        self["components"].setdefault("schemas", {})[ERROR_SCHEMA_NAME] = ERROR_SCHEMA

    def responses(self, operation: Operation) -> dict[int, Any]:
        result = super().responses(operation)
        scopes = [getattr(callback, "scope", None) for callback in operation.auth_callbacks]
        models: list[TModel] = list(operation.models)
        view = f"{operation.view_func.__module__}.{operation.view_func.__name__}"
        statuses = error_statuses(
            token=bool(operation.auth_callbacks),
            scope=next((scope for scope in scopes if scope), None),
            body=view in RAW_BODY_VIEWS or any(model.__ninja_param_source__ == "body" for model in models),
            path_id="{" in operation.path or view in BODY_LOOKUP_VIEWS,
            upstream=view in EMBEDDING_VIEWS,
            conflict=view in CONFLICT_VIEWS,
        )
        for status in statuses:
            result.setdefault(status, _error_response(status, f"#/components/schemas/{ERROR_SCHEMA_NAME}"))
        return result


class DocumentedNinjaAPI(NinjaAPI):
    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> OpenAPISchema:
        if path_prefix is None:
            path_prefix = self.get_root_path(path_params or {})
        return ErrorDocumentingSchema(api=self, path_prefix=path_prefix)


# --- /api/ (DRF) -------------------------------------------------------------------------------


class ErrorDocumentingAutoSchema(AutoSchema):
    """DRF's schema with each operation's error responses; every /api/ operation needs a token."""

    def map_field(self, field: Any) -> dict[str, Any]:
        if isinstance(field, serializers.BooleanField):
            # DRF matches the boolean by exact class: its subclasses (JsonBooleanField) became "string".
            return {"type": "boolean"}
        if isinstance(field, serializers.JSONField):
            return {"description": "Any JSON value."}  # DRF says "object"; lists are stored too
        if isinstance(field, serializers.SerializerMethodField):
            # DRF says "string" for every computed field; the method's return annotation says more.
            method = getattr(field.parent, field.method_name, None)
            returns = typing.get_type_hints(method).get("return") if method is not None else None
            return _json_schema_of(returns)
        return super().map_field(field)

    def map_serializer(self, serializer: Any) -> dict[str, Any]:
        result = super().map_serializer(serializer)
        # Write-only fields that to_representation reads back (Meta.read_back) are in answers too.
        for name in getattr(getattr(serializer, "Meta", None), "read_back", ()):
            result["properties"].get(name, {}).pop("writeOnly", None)
        return result

    def map_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        super().map_field_validators(field, schema)
        if isinstance(field, serializers.URLField):
            # Django's URL regex (\z, lookbehinds) is not an ECMA 262 pattern; "format: uri" says it.
            schema.pop("pattern", None)

    def get_components(self, path: str, method: str) -> dict[str, Any]:
        components = super().get_components(path, method)
        components[ERROR_SCHEMA_NAME] = ERROR_SCHEMA
        return components

    def get_responses(self, path: str, method: str) -> dict[str, Any]:
        responses = super().get_responses(path, method)
        statuses = error_statuses(
            token=True,
            scope=None,
            body=method in ("POST", "PUT", "PATCH"),
            path_id="{" in path,
            upstream=False,
        )
        for status in statuses:
            responses.setdefault(
                str(status), _error_response(status, f"#/components/schemas/{ERROR_SCHEMA_NAME}")
            )
        return responses


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}


def _json_schema_of(annotation: Any) -> dict[str, Any]:
    """The JSON schema of a simple return annotation (``int``, ``list[str]`` …); any value otherwise."""
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation], "readOnly": True}
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation) or (Any,)
        return {"type": "array", "items": _json_schema_of(item), "readOnly": True}
    return {"readOnly": True}
