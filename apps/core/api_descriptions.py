"""The descriptions of ``/api/``'s views (``REST_FRAMEWORK["VIEW_DESCRIPTION_FUNCTION"]``).

The viewsets' docstrings are written for Python readers, in reStructuredText: ``?name=`` for a literal.
DRF shows a docstring as it is (no Markdown library is installed), so the browsable API showed the
backticks. Here a literal becomes ``<code>`` on the HTML page and Markdown's single backticks in text
(OPTIONS and the OpenAPI document's descriptions, which are CommonMark); paragraphs are kept, the
docstring's own line breaks are not.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.encoding import smart_str
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from rest_framework.utils import formatting

# ``literal`` (RST) and :role:`target` (Sphinx cross-references, shown as the target).
_LITERAL_RE = re.compile(r"``(.+?)``", re.DOTALL)
_ROLE_RE = re.compile(r":[a-z]+:`~?([^`]+)`")


def view_description(view: Any, html: bool = False) -> str | SafeString:
    """The view's ``description`` or docstring: ``<p>`` paragraphs with ``<code>`` for HTML, else text."""
    description = getattr(view, "description", None)
    if description is None:
        description = view.__class__.__doc__ or ""
    text = _ROLE_RE.sub(r"``\1``", formatting.dedent(smart_str(description)))
    paragraphs = [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]
    if not html:
        return "\n\n".join(_LITERAL_RE.sub(r"`\1`", paragraph) for paragraph in paragraphs)
    rendered = []
    for paragraph in paragraphs:
        pieces = _LITERAL_RE.split(paragraph)  # text, literal, text, literal, …
        rendered.append(
            "<p>"
            + "".join(
                escape(piece) if index % 2 == 0 else f"<code>{escape(piece)}</code>"
                for index, piece in enumerate(pieces)
            )
            + "</p>"
        )
    return mark_safe("".join(rendered))  # noqa: S308 - every piece is escaped above
