"""Forms of the /facts pages: ask a factual question, and search the stored facts.

The question form checks what a browser can get wrong and validates the result with the API's
own ``FactQueryIn``, so the page and ``POST /v1/facts/query`` accept exactly the same questions.
"""

from __future__ import annotations

from typing import Any

from django import forms
from pydantic import ValidationError as PydanticValidationError

from apps.core.forms import schema_errors_add
from apps.wikidata.schemas import FactQueryIn

SCOPE_CHOICES = [("facts", "Facts about items"), ("properties", "Properties")]

# FactQueryIn's field names → this form's.
_FIELD_OF = {"query": "query", "topK": "top_k", "scope": "scope", "includeSparql": "include_sparql"}


class FactQueryForm(forms.Form):
    """``POST /facts``: one question, run on the worker like the API's."""

    query = forms.CharField(
        label="Question",
        min_length=2,
        max_length=512,
        strip=True,
        help_text="e.g. When was Douglas Adams born?",
    )
    top_k = forms.IntegerField(label="Results", min_value=1, max_value=20, initial=5)
    scope = forms.ChoiceField(label="Scope", choices=SCOPE_CHOICES, initial="facts")
    include_sparql = forms.BooleanField(label="Include SPARQL provenance", required=False, initial=True)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            cleaned["payload"] = FactQueryIn(
                query=cleaned["query"],
                topK=cleaned["top_k"],
                scope=cleaned["scope"],
                includeSparql=cleaned.get("include_sparql", False),
            )
        except PydanticValidationError as error:
            schema_errors_add(self, error, _FIELD_OF)
        return cleaned


class FactSearchForm(forms.Form):
    """``GET /facts?q=``: stored facts by text, QID, PID or statement GUID."""

    q = forms.CharField(label="Search stored facts", required=False, max_length=200, strip=True)

    def text(self) -> str:
        return (getattr(self, "cleaned_data", {}) or {}).get("q") or ""
