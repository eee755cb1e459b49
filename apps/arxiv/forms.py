"""Forms of the /papers pages: filters over stored papers, and a live arXiv search.

The live search form checks what a browser can get wrong and hands a ``SearchIn`` to the
service, so the page and the API accept exactly the same searches.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from pydantic import ValidationError as PydanticValidationError

from apps.arxiv.schemas import SearchIn
from apps.core.forms import schema_errors_add

SORT_CHOICES = [
    ("submittedDate", "Newest submitted"),
    ("lastUpdatedDate", "Last updated"),
    ("relevance", "Relevance"),
]

# SearchIn's field names → this form's.
_FIELD_OF = {"dateFrom": "date_from", "dateTo": "date_to", "categories": "categories"}


class DateInput(forms.DateInput):
    input_type = "date"


class PaperFilterForm(forms.Form):
    """``GET /papers``: text over title, authors and abstract; a category; a published range."""

    q = forms.CharField(label="Search", required=False, max_length=200, strip=True)
    category = forms.CharField(label="Category", required=False, max_length=100, strip=True)
    published_from = forms.DateField(label="Published from", required=False, widget=DateInput)
    published_to = forms.DateField(label="Published to", required=False, widget=DateInput)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        start, end = cleaned.get("published_from"), cleaned.get("published_to")
        if start and end and start > end:
            self.add_error("published_to", "Must not be before the start date.")
        return cleaned

    def filters(self) -> dict[str, Any]:
        """The valid filters only: a bad field is reported and left out, the rest still apply."""
        cleaned = getattr(self, "cleaned_data", {})
        return {
            "text": cleaned.get("q") or "",
            "category": cleaned.get("category") or "",
            "published_from": cleaned.get("published_from"),
            "published_to": cleaned.get("published_to"),
        }


class LiveSearchForm(forms.Form):
    """``POST /papers/live``: one arXiv search, validated by the API's own ``SearchIn``."""

    query = forms.CharField(label="arXiv query", min_length=2, max_length=512, strip=True)
    categories = forms.CharField(
        label="Categories",
        required=False,
        max_length=500,
        help_text="Optional, separated by commas or spaces, e.g. cs.CL, cs.LG.",
    )
    date_from = forms.DateField(label="Submitted from", required=False, widget=DateInput)
    date_to = forms.DateField(label="Submitted to", required=False, widget=DateInput)
    max_results = forms.IntegerField(label="Results", min_value=1, max_value=50, initial=10)
    sort_by = forms.ChoiceField(label="Sort by", choices=SORT_CHOICES, initial="submittedDate")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            cleaned["payload"] = SearchIn(
                query=cleaned["query"],
                maxResults=cleaned["max_results"],
                sortBy=cleaned["sort_by"],
                categories=[item for item in re.split(r"[\s,]+", cleaned.get("categories") or "") if item],
                dateFrom=cleaned.get("date_from"),
                dateTo=cleaned.get("date_to"),
            )
        except PydanticValidationError as error:
            schema_errors_add(self, error, _FIELD_OF)
        return cleaned
