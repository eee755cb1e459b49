"""The consent form: DOT's, with the scopes the user chooses among those the client asked for."""

from __future__ import annotations

from typing import Any

from django import forms
from oauth2_provider.forms import AllowForm

from apps.oauth.services import OAUTH_SCOPES


class ConsentForm(AllowForm):
    """``scope`` (hidden) is what the client asked for; ``granted`` what the user ticks of it. The
    grant is their intersection, never wider than the request and never ``admin``."""

    granted = forms.MultipleChoiceField(
        choices=[(scope, scope) for scope in OAUTH_SCOPES],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Scopes to grant",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        requested = str(cleaned.get("scope", "")).split()
        granted = [
            scope for scope in requested if scope in cleaned.get("granted", []) and scope in OAUTH_SCOPES
        ]
        if cleaned.get("allow") and not granted:
            raise forms.ValidationError("Tick at least one scope to grant, or deny the request.")
        cleaned["scope"] = " ".join(granted)
        return cleaned
