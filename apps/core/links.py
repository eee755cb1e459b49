"""Where ids point (issue 16 §2): Wikidata pages for entity ids and statement GUIDs, and the geometry
of the confidence bar. The template filters in ``apps.core.templatetags.cortex_links`` use these."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

WIKIDATA_WIKI = "https://www.wikidata.org/wiki/"
# Q items live in the main namespace, properties and lexemes in their own.
_NAMESPACES = {"Q": "", "P": "Property:", "L": "Lexeme:"}
_ENTITY_RE = re.compile(r"^([QPL])[1-9][0-9]*$")
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
_GUID_RE = re.compile(rf"^(?P<entity>[QPL][1-9][0-9]*)\$(?P<uuid>{_UUID})$")

BAR_WIDTH = 160
BAR_HEIGHT = 12


def wikidata_entity_url(entity_id: str) -> str:
    """``https://www.wikidata.org/wiki/Q42`` (``Property:P31``, ``Lexeme:L7``); ``""`` for anything else."""
    match = _ENTITY_RE.match(entity_id or "")
    if not match:
        return ""
    return f"{WIKIDATA_WIKI}{_NAMESPACES[match.group(1)]}{entity_id}"


def wikidata_statement_url(claim_guid: str) -> str:
    """The statement on its item's page: ``https://www.wikidata.org/wiki/Q42#Q42$F078…``.

    Wikibase gives each statement's HTML block the statement GUID itself as its ``id`` (``$``
    included; ``$`` is allowed in a URL fragment). The ``-`` form (``Q42-F078…``) is the RDF
    statement node of the Query Service, not an anchor on the page.
    """
    match = _GUID_RE.match(claim_guid or "")
    if not match:
        return ""
    entity_url = wikidata_entity_url(match["entity"])
    return f"{entity_url}#{claim_guid}"


@dataclass(frozen=True)
class ConfidenceBar:
    value: float
    threshold: float
    width: int
    height: int
    fill: str  # width of the filled part, in px of the viewBox
    mark: str  # x of the threshold mark
    below: bool
    label: str


def confidence_bar_geometry(value: Any, threshold: Any) -> ConfidenceBar | None:
    """The bar for ``value`` (0–1) with ``threshold`` marked; ``None`` when ``value`` is not a number."""
    try:
        confidence = min(max(float(value), 0.0), 1.0)
        limit = min(max(float(threshold), 0.0), 1.0)
    except (TypeError, ValueError):
        return None
    below = confidence < limit
    relation = "below" if below else "at or above"
    label = f"Confidence {confidence:.2f}, {relation} the review threshold {limit:.2f}"
    return ConfidenceBar(
        value=confidence,
        threshold=limit,
        width=BAR_WIDTH,
        height=BAR_HEIGHT,
        fill=f"{confidence * BAR_WIDTH:.1f}",
        mark=f"{limit * BAR_WIDTH:.1f}",
        below=below,
        label=label,
    )
