"""The one table of token scopes: for each, the label the API-token form shows (``TokenScope``'s
choices, so the admin form and ``manage.py tokens`` say the same) and what it allows, which
``manage.py security_docs`` writes into docs/security.md (``apps.core.security.SCOPES``).

Edit a scope here and nowhere else. ``tests/core/test_scope_table.py`` checks the table against what
is enforced: a scope the table calls reserved is needed by no operation, and every other one is
needed by at least one, so no label says "to come" of a scope that works.

Imports nothing from the project: ``apps.core.models`` reads it to build ``TokenScope``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    value: str
    summary: str  # after "<value>: " on the token form
    allows: str  # the docs' full text (Markdown)
    reserved: bool = False  # grants nothing: no operation needs it


SCOPE_TABLE: tuple[Scope, ...] = (
    Scope(
        "read",
        "stored data and local computation",
        "Read what is stored (runs, facts, papers' runs, events, the registry) and compute locally "
        "(knowledge search, embeddings, plans). Nothing it does reaches an upstream or writes a row "
        "someone must review.",
    ),
    Scope(
        "upstream",
        "start work that spends an upstream's budget (Wikidata, arXiv, tools)",
        "Start work that spends an upstream's budget: fact queries (Wikidata), arXiv searches and "
        "lookups, and calls of registry tools through the gateway (`POST /v1/tools/call`, MCP catalogue "
        "tools).",
    ),
    Scope(
        "verify",
        "create verifications (the review queue)",
        "Create verifications, the rows of the operators' review queue: verify a claim, ground a message. "
        "A claim about a named entity is also checked against Wikidata (one fact run per claim); that "
        "lookup is part of the verification.",
    ),
    Scope(
        "write",
        "agent memory (tell, update, pin, forget, import) and ontology proposals",
        "Write agent memory: `tell`, update, pin, forget (one or all) and import memories. A token only "
        "ever reads and writes its own memories (plus those an operator shared in a domain), whatever its "
        "scopes. Also propose ontology changes (`ontology_propose`, 20 a minute per token): proposals are "
        "only staged; an operator merges or rejects them in the admin.",
    ),
    Scope(
        "propose",
        "reserved, grants nothing (ontology proposals need write)",
        "Reserved: grants nothing. Ontology proposals need `write` (issue 14, as the seed asks).",
        reserved=True,
    ),
    Scope(
        "admin",
        "everything, including /api/ writes",
        "Everything: implies every other scope, and is the only scope that writes the registry through "
        "`/api/` (create, update and delete connectors and tools).",
    ),
)

SCOPE_LABELS: dict[str, str] = {scope.value: f"{scope.value}: {scope.summary}" for scope in SCOPE_TABLE}
