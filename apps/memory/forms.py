"""Forms of the memory pages: ``/memories``' question and filters, and the pin and forget buttons."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.memory.models import MemoryType
from apps.memory.selectors import BrowseFilters
from apps.memory.services import FORGET_MODES

PINNED_CHOICES = [("", "Any"), ("yes", "Pinned"), ("no", "Not pinned")]


class MemoryBrowseForm(forms.Form):
    """``GET /memories``: a question (ranked results) or none (the newest first), and the filters."""

    q = forms.CharField(label="Question", required=False, max_length=500, strip=True)
    domain = forms.CharField(label="Domain", required=False, max_length=64, strip=True)
    type = forms.ChoiceField(label="Type", required=False, choices=[("", "Any"), *MemoryType.choices])
    agent = forms.CharField(label="Agent", required=False, max_length=100, strip=True)
    token = forms.IntegerField(label="Token", required=False, min_value=1)
    pinned = forms.ChoiceField(label="Pinned", required=False, choices=PINNED_CHOICES)

    def clean_q(self) -> str:
        question = " ".join(self.cleaned_data["q"].split())
        if len(question) == 1:
            raise forms.ValidationError("Ask with at least 2 characters.")
        return question

    def question(self) -> str:
        return getattr(self, "cleaned_data", {}).get("q") or ""

    def filters(self) -> BrowseFilters:
        """The valid filters only: a bad field is reported and left out, the rest still apply."""
        cleaned: dict[str, Any] = getattr(self, "cleaned_data", {})
        pinned = cleaned.get("pinned") or ""
        return BrowseFilters(
            domain=cleaned.get("domain") or "",
            type=cleaned.get("type") or "",
            agent=cleaned.get("agent") or "",
            token_id=cleaned.get("token"),
            pinned={"yes": True, "no": False}.get(pinned),
        )


class PinForm(forms.Form):
    """``POST /memories/<id>/pin``: ``pinned`` is "true" (pin) or "false" (unpin)."""

    pinned = forms.TypedChoiceField(
        choices=[("true", "Pin"), ("false", "Unpin")], coerce=lambda value: value == "true"
    )
    next = forms.CharField(required=False, max_length=2000)


class ForgetForm(forms.Form):
    """``POST /memories/<id>/forget``: fade (decay to the floor, unpinned) or remove."""

    mode = forms.ChoiceField(choices=[(mode, mode) for mode in FORGET_MODES])
    next = forms.CharField(required=False, max_length=2000)
