"""Planning: an agent's intent → ordered tool steps, chosen from the registry by tags and scopes.

No tool name appears here. Each step asks for a *capability* (tags and scopes a
tool must all carry, plus tags it should preferably carry); the registry answers
with whichever published tool fits best, so renaming a tool in the manifest
renames it in every plan. Ties are broken by how many requested tags and scopes
a tool matches, then by name, so plans are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from apps.connectors.selectors import ToolSpec, published_tool_index
from apps.core.errors import ValidationFailed

FACT_SCOPES = ("facts", "properties")
TOP_ENTITIES = 3

# Statements of the top entity with their references: the provenance the SPARQL step adds.
PROVENANCE_SPARQL = (
    "SELECT ?property ?value ?reference WHERE { "
    "wd:$ENTITY ?claim ?statement . ?property wikibase:claim ?claim ; wikibase:statementProperty ?ps . "
    "?statement ?ps ?value . OPTIONAL { ?statement prov:wasDerivedFrom ?reference } } LIMIT 50"
)


@dataclass(frozen=True)
class Capability:
    purpose: str
    tags: frozenset[str]
    scopes: frozenset[str] = frozenset()
    preferred_tags: frozenset[str] = frozenset()
    optional: bool = False
    arguments: Callable[[str], dict[str, Any]] = lambda query: {"query": query}

    def fits(self, tool: ToolSpec) -> bool:
        return self.tags <= tool.tags and self.scopes <= tool.scopes

    def score(self, tool: ToolSpec) -> int:
        return len((self.tags | self.preferred_tags) & tool.tags) + len(self.scopes & tool.scopes)


def _from_step(step: int, *, top: int) -> dict[str, Any]:
    """A reference the agent resolves: the ids of the first ``top`` results of step ``step``."""
    return {"fromStep": step, "field": "id", "top": top}


def fact_query_capabilities(scope: str) -> list[Capability]:
    kind = "items" if scope == "facts" else "properties"
    return [
        Capability(
            purpose=f"Find the Wikidata {kind} the question is about (vector search).",
            tags=frozenset({"vector"}),
            scopes=frozenset({scope}),
            preferred_tags=frozenset({"wikidata", kind}),
        ),
        Capability(
            purpose=f"Read the claims of the top {TOP_ENTITIES} results.",
            tags=frozenset({"claims"}),
            preferred_tags=frozenset({"wikidata", "provenance"}),
            arguments=lambda query: {"entity_id": _from_step(1, top=TOP_ENTITIES)},
        ),
        Capability(
            purpose="Enrich the top result's statements with their references (provenance).",
            tags=frozenset({"sparql"}),
            preferred_tags=frozenset({"wikidata", "provenance"}),
            optional=True,
            arguments=lambda query: {
                "sparql": PROVENANCE_SPARQL,
                "bindings": {"$ENTITY": _from_step(1, top=1)},
            },
        ),
    ]


def literature_search_capabilities() -> list[Capability]:
    return [
        Capability(
            purpose="Search the scholarly literature for papers on the question.",
            tags=frozenset({"academic", "papers"}),
            preferred_tags=frozenset({"search"}),
            arguments=lambda query: {"query": query, "maxResults": 10},
        )
    ]


def plan_create(*, intent: str, query: str, scope: str | None = None) -> dict[str, Any]:
    """The ordered steps for ``intent``; ``ValidationFailed`` naming a missing tag or scope."""
    if intent == "fact_query":
        scope = scope or "facts"
        if scope not in FACT_SCOPES:
            raise ValidationFailed(
                f"scope must be one of {', '.join(FACT_SCOPES)} for fact_query, not {scope!r}.",
                details={"field": "scope", "allowed": list(FACT_SCOPES)},
            )
        capabilities = fact_query_capabilities(scope)
    elif intent == "literature_search":
        if scope is not None:
            raise ValidationFailed("scope applies to fact_query only.", details={"field": "scope"})
        capabilities = literature_search_capabilities()
    else:
        raise ValidationFailed(
            f"Unknown intent {intent!r}; use fact_query or literature_search.", details={"field": "intent"}
        )
    tools = published_tool_index()
    steps: list[dict[str, Any]] = []
    for capability in capabilities:
        tool = best_tool(capability, tools)
        if tool is None:
            if capability.optional:
                continue
            raise _missing(capability, tools)
        steps.append(
            {
                "order": len(steps) + 1,
                "tool": tool.name,
                "connector": tool.connector,
                "purpose": capability.purpose,
                "arguments": capability.arguments(query),
                "optional": capability.optional,
            }
        )
    return {"intent": intent, "query": query, "scope": scope, "steps": steps}


def best_tool(capability: Capability, tools: Iterable[ToolSpec]) -> ToolSpec | None:
    candidates = [tool for tool in tools if capability.fits(tool)]
    if not candidates:
        return None
    return min(candidates, key=lambda tool: (-capability.score(tool), tool.name))


def _missing(capability: Capability, tools: Iterable[ToolSpec]) -> ValidationFailed:
    known_tags = {tag for tool in tools for tag in tool.tags}
    known_scopes = {scope for tool in tools for scope in tool.scopes}
    missing_tags = sorted(capability.tags - known_tags)
    missing_scopes = sorted(capability.scopes - known_scopes)
    if missing_tags or missing_scopes:
        parts = [f"tag {tag!r}" for tag in missing_tags] + [f"scope {scope!r}" for scope in missing_scopes]
        reason = f"no enabled tool has {' or '.join(parts)}"
    else:
        reason = (
            f"no single enabled tool has all of tags {sorted(capability.tags)} "
            f"and scopes {sorted(capability.scopes)}"
        )
    return ValidationFailed(
        f"Cannot plan this step ({capability.purpose}): {reason}. Add or enable such a tool in the registry.",
        details={
            "purpose": capability.purpose,
            "requiredTags": sorted(capability.tags),
            "requiredScopes": sorted(capability.scopes),
            "missingTags": missing_tags,
            "missingScopes": missing_scopes,
        },
    )
