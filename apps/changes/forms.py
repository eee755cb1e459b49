"""The filters of ``GET /changes``."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.changes.selectors import ChangeFilters, tracked_models


class ChangeFilterForm(forms.Form):
    """Model, object, actor, dates and change set; a bad field is reported and left out."""

    model = forms.ChoiceField(label="What", required=False)
    object = forms.CharField(label="Object", required=False, max_length=255, strip=True)
    actor = forms.CharField(label="Who", required=False, max_length=255, strip=True)
    since = forms.DateField(label="From", required=False, input_formats=["%Y-%m-%d"])
    until = forms.DateField(label="To", required=False, input_formats=["%Y-%m-%d"])
    set = forms.CharField(label="Change set", required=False, max_length=255, strip=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model_field = self.fields["model"]
        assert isinstance(model_field, forms.ChoiceField)
        model_field.choices = [("", "Anything"), *tracked_models()]
        for name in ("since", "until"):
            self.fields[name].error_messages["invalid"] = "Give a date as YYYY-MM-DD."

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and until < since:
            self.add_error("until", f"The last day ({until}) is before the first ({since}).")
        if cleaned.get("object") and not cleaned.get("model"):
            self.add_error("object", "An object is looked up within a model: choose what it is too.")
        return cleaned

    def filters(self) -> ChangeFilters:
        cleaned: dict[str, Any] = getattr(self, "cleaned_data", {})
        return ChangeFilters(
            model=cleaned.get("model") or "",
            object_pk=cleaned.get("object") or "",
            actor=cleaned.get("actor") or "",
            since=cleaned.get("since"),
            until=cleaned.get("until"),
            change_set=cleaned.get("set") or "",
        )
