"""Forms of the grounding pages and admin: the review queue's filters, a review, and the settings.

The review form only reads what the browser sent; ``services.verification_review`` decides what
a valid review is (an empty correction, a malformed entry id) and says why, so the page and any
other caller are refused with the same messages.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms

from apps.grounding.models import GroundingAgent, GroundingSettings, ReviewStatus, Verdict

ALL_STATUSES = "all"
REVIEW_ACTIONS = [("approve", "Approve"), ("reject", "Reject"), ("correct", "Correct")]


class DecimalInput(forms.NumberInput):
    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"step": "0.01", "min": "0", "max": "1", **(attrs or {})})


class ReviewFilterForm(forms.Form):
    """``GET /verifications``: the queue's filters. Without a ``status`` the queue shows what is pending."""

    verdict = forms.ChoiceField(label="Verdict", required=False, choices=[("", "Any"), *Verdict.choices])
    domain = forms.CharField(label="Domain", required=False, max_length=64, strip=True)
    status = forms.ChoiceField(
        label="Review status",
        required=False,
        choices=[*ReviewStatus.choices, (ALL_STATUSES, "Any status")],
    )
    min_confidence = forms.FloatField(
        label="Confidence from", required=False, min_value=0, max_value=1, widget=DecimalInput
    )
    max_confidence = forms.FloatField(
        label="Confidence to", required=False, min_value=0, max_value=1, widget=DecimalInput
    )
    q = forms.CharField(label="Claim contains", required=False, max_length=200, strip=True)

    def __init__(self, data: Any = None, **kwargs: Any) -> None:
        data = data.copy() if data is not None else {}
        if not data.get("status"):
            data["status"] = ReviewStatus.PENDING
        super().__init__(data, **kwargs)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        low, high = cleaned.get("min_confidence"), cleaned.get("max_confidence")
        if low is not None and high is not None and low > high:
            self.add_error("max_confidence", "Must not be below the lower bound.")
            cleaned.pop("max_confidence", None)
        return cleaned

    def filters(self) -> dict[str, Any]:
        """The valid filters only: a bad field is reported and left out, the rest still apply."""
        cleaned = getattr(self, "cleaned_data", {})
        status = cleaned.get("status") or ReviewStatus.PENDING
        if "status" in self.errors:
            status = ReviewStatus.PENDING
        return {
            "verdict": cleaned.get("verdict") or "",
            "domain": cleaned.get("domain") or "",
            "status": "" if status == ALL_STATUSES else status,
            "min_confidence": cleaned.get("min_confidence"),
            "max_confidence": cleaned.get("max_confidence"),
            "text": cleaned.get("q") or "",
        }


class ReviewForm(forms.Form):
    """``POST /verifications/<id>/review``: approve, reject, or correct (text, optional entry id), with the
    verdict the reviewer judges right."""

    # No initial decision: the reviewer picks one (a preselected "Approve" was saved by mistake).
    action = forms.ChoiceField(label="Decision", choices=REVIEW_ACTIONS, widget=forms.RadioSelect)
    verdict = forms.ChoiceField(
        label="Right verdict",
        required=False,
        choices=[("", "—"), *Verdict.choices],
        help_text="Required to reject or correct; approving keeps the judge's verdict.",
    )
    note = forms.CharField(label="Note", required=False, max_length=2000, strip=True)
    correction = forms.CharField(
        label="Corrected text",
        required=False,
        max_length=10_000,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )
    entry_id = forms.CharField(
        label="Knowledge entry to update or create",
        required=False,
        max_length=32,
        strip=True,
        help_text="Optional, e.g. SEC-031.",
    )

    def first_error(self) -> str:
        for name, errors in self.errors.items():
            label = self.fields[name].label if name in self.fields else ""
            return f"{label or name}: {errors[0]}" if name != "__all__" else errors[0]
        return ""


# --- Admin: lists edited one item per line ---------------------------------------------------


class LinesField(forms.CharField):
    """A list of strings edited one per line (blank lines dropped).

    Django's ``SimpleArrayField`` splits on commas, which breaks a regular expression such as
    ``\\d{1,3}``; one item per line never needs escaping.
    """

    widget = forms.Textarea(attrs={"rows": 6, "cols": 80, "spellcheck": "false"})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list | tuple):
            return [str(item).strip() for item in value if str(item).strip()]
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(initial or []) != self.to_python(data)


class GroundingSettingsForm(forms.ModelForm):
    trigger_patterns = LinesField(
        label="Trigger patterns",
        help_text="One phrase per line, matched literally (e.g. 'should be').",
    )
    claim_patterns = LinesField(
        label="Claim patterns",
        help_text="One regular expression per line; a sentence matching one is a claim to verify.",
    )

    class Meta:
        model = GroundingSettings
        fields = [
            "enabled",
            "injection_mode",
            "trigger_patterns",
            "claim_patterns",
            "min_claim_length",
            "confidence_threshold",
        ]

    def clean_claim_patterns(self) -> list[str]:
        patterns = self.cleaned_data["claim_patterns"]
        problems = []
        for pattern in patterns:
            try:
                re.compile(pattern, re.I)
            except re.error as error:
                problems.append(f"{pattern!r} is not a valid regular expression: {error}.")
        if problems:
            raise forms.ValidationError(problems)
        return patterns


class GroundingAgentForm(forms.ModelForm):
    verification_keywords = LinesField(
        label="Verification keywords", help_text="One per line; a claim naming one is routed to this agent."
    )
    applies_to_agents = LinesField(label="Applies to agents", help_text="One agent name per line.")

    class Meta:
        model = GroundingAgent
        fields = [
            "name",
            "domain",
            "description",
            "enabled",
            "verification_keywords",
            "applies_to_agents",
            "sources",
        ]
