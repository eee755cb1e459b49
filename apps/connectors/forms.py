"""Forms of the connector admin: the manifest import (upload or paste, then apply)."""

from __future__ import annotations

from django import forms

from apps.connectors.models import RemoteTool, ToolAlias
from apps.connectors.services import TOOL_WRITABLE_FIELDS

MAX_MANIFEST_BYTES = 1024 * 1024


class ManifestUploadForm(forms.Form):
    """Step 1: a manifest file or pasted JSON (one of the two), read as UTF-8 text."""

    manifest_file = forms.FileField(
        label="Manifest file", required=False, help_text="A connectors.manifest.json file."
    )
    manifest_text = forms.CharField(
        label="…or paste the manifest",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 12, "cols": 100, "spellcheck": "false"}),
    )

    def clean(self) -> dict:
        cleaned = super().clean()
        upload = cleaned.get("manifest_file")
        text = cleaned.get("manifest_text") or ""
        if upload and text.strip():
            raise forms.ValidationError("Upload a file or paste the manifest, not both.")
        if upload:
            if upload.size > MAX_MANIFEST_BYTES:
                raise forms.ValidationError(f"The file is larger than {MAX_MANIFEST_BYTES} bytes.")
            try:
                text = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.") from None
        if not text.strip():
            raise forms.ValidationError("Upload a manifest file or paste its JSON.")
        cleaned["text"] = text
        return cleaned


class ManifestApplyForm(forms.Form):
    """Step 3: the previewed manifest, carried back verbatim and validated again."""

    manifest = forms.CharField(widget=forms.HiddenInput, strip=False)


class ToolAliasForm(forms.ModelForm):
    """An alias must not shadow a canonical name (the manifest refuses that too)."""

    class Meta:
        model = ToolAlias
        fields = ["name"]

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if RemoteTool.objects.filter(name=name).exists():
            raise forms.ValidationError(f"{name!r} is a canonical tool name and cannot be an alias.")
        return name


class RemoteToolForm(forms.ModelForm):
    """A canonical name must not be another tool's alias."""

    class Meta:
        model = RemoteTool
        # The admin passes its own field list; these are the operator-owned fields.
        fields = list(TOOL_WRITABLE_FIELDS)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        aliases = ToolAlias.objects.filter(name=name)
        if self.instance.pk:
            aliases = aliases.exclude(tool=self.instance)
        if aliases.exists():
            raise forms.ValidationError(f"{name!r} is already an alias of another tool.")
        return name
