"""Links for every id a page shows, built in one place (issue 16 §2).

``{% load cortex_links %}`` then ``{{ entry_id|entry_link }}``, ``{{ run_id|run_link }}``,
``{{ qid|wikidata_link }}``, ``{{ guid|statement_link }}`` and ``{% confidence_bar value threshold %}``.
Every piece of text goes through ``format_html`` (escaped); a value that is not an id of the expected
form is shown as plain (escaped) code, never as a link, so stored text cannot make a link anywhere.
"""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from apps.core.links import (
    ConfidenceBar,
    confidence_bar_geometry,
    wikidata_entity_url,
    wikidata_statement_url,
)
from apps.knowledge.models import ENTRY_ID_PATTERN

register = template.Library()

WIKIDATA_SOURCE_PREFIX = "wikidata:"  # grounding's sources: ``wikidata:<statement GUID>``
_ENTRY_ID_RE = re.compile(ENTRY_ID_PATTERN)
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


def _code(value: Any) -> SafeString:
    return format_html("<code>{}</code>", "" if value is None else value)


def _code_link(url: str, text: str, *, external: bool = False) -> SafeString:
    """``text`` as code, linked to ``url`` (another site's pages get ``rel="noopener noreferrer"``)."""
    if external:
        return format_html('<a href="{}" rel="noopener noreferrer"><code>{}</code></a>', url, text)
    return format_html('<a href="{}"><code>{}</code></a>', url, text)


@register.filter
def entry_link(entry_id: Any) -> SafeString:
    """A knowledge entry id as a link to its page (``/knowledge/SEC-001``). A verification's source
    may be a Wikidata statement instead (``wikidata:Q42$…``): that links to the statement."""
    text = str(entry_id or "")
    if text.startswith(WIKIDATA_SOURCE_PREFIX) and wikidata_statement_url(
        text[len(WIKIDATA_SOURCE_PREFIX) :]
    ):
        return statement_link(text[len(WIKIDATA_SOURCE_PREFIX) :])
    if not _ENTRY_ID_RE.match(text):
        return _code(text)
    return _code_link(reverse("knowledge:entry_detail", args=[text]), text)


@register.filter
def run_link(run_id: Any) -> SafeString:
    """A fact run id as a link to the run's page."""
    text = str(run_id or "")
    if not _UUID_RE.match(text):
        return _code(text)
    return _code_link(reverse("wikidata:run_detail", args=[text]), text)


@register.filter
def wikidata_link(entity_id: Any) -> SafeString:
    """A Wikidata id (Q42, P31, L7) as a link to its page on Wikidata."""
    text = str(entity_id or "")
    url = wikidata_entity_url(text)
    if not url:
        return _code(text)
    return _code_link(url, text, external=True)


@register.filter
def statement_link(claim_guid: Any) -> SafeString:
    """A statement GUID (``Q42$F078…``) as a link to the statement on its item's page."""
    text = str(claim_guid or "")
    url = wikidata_statement_url(text)
    if not url:
        return _code(text)
    return _code_link(url, text, external=True)


@register.inclusion_tag("core/partials/_confidence_bar.html")
def confidence_bar(value: Any, threshold: Any) -> dict[str, ConfidenceBar | None]:
    """A confidence as a labelled bar with the review threshold marked (text too, not colour only)."""
    return {"bar": confidence_bar_geometry(value, threshold)}
