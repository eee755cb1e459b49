"""Forms of the knowledge admin: importing a pack file into a domain."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from django import forms

from apps.knowledge.models import DOMAIN_NAME_PATTERN, KnowledgeDomain

MAX_PACK_BYTES = 5 * 1024 * 1024
PACK_SUFFIXES = {".json": "json", ".md": "markdown", ".markdown": "markdown"}


class EntryImportForm(forms.Form):
    """A JSON or Markdown pack, into an existing domain or a new one (one of the two)."""

    pack_file = forms.FileField(
        label="Knowledge file",
        help_text="A .json pack ({'entries': [...]} or a list) or a .md file with one heading per entry.",
    )
    domain = forms.ModelChoiceField(
        label="Domain",
        queryset=KnowledgeDomain.objects.order_by("name"),
        required=False,
        to_field_name="name",
    )
    new_domain = forms.CharField(
        label="…or a new domain",
        required=False,
        max_length=64,
        strip=True,
        help_text="Lowercase letters, digits, - and _ (e.g. security).",
    )
    source_name = forms.CharField(
        label="Source name",
        required=False,
        max_length=200,
        strip=True,
        help_text="Used when the pack names no source; defaults to the file name without its extension.",
    )

    def clean_new_domain(self) -> str:
        name = self.cleaned_data["new_domain"]
        if name and not re.match(DOMAIN_NAME_PATTERN, name):
            raise forms.ValidationError("Use lowercase letters, digits, - and _, starting with a letter.")
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        domain, new_domain = cleaned.get("domain"), cleaned.get("new_domain")
        if domain and new_domain:
            raise forms.ValidationError("Choose a domain or name a new one, not both.")
        if not domain and not new_domain and "new_domain" not in self.errors:
            raise forms.ValidationError("Choose a domain or name a new one.")
        cleaned["domain_name"] = domain.name if domain else new_domain
        upload = cleaned.get("pack_file")
        if upload:
            name = PurePath(upload.name or "").name
            suffix = PurePath(name).suffix.lower()
            if suffix not in PACK_SUFFIXES:
                self.add_error("pack_file", "Upload a .json, .md or .markdown file.")
                return cleaned
            if upload.size > MAX_PACK_BYTES:
                self.add_error("pack_file", f"The file is larger than {MAX_PACK_BYTES} bytes.")
                return cleaned
            try:
                cleaned["text"] = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                self.add_error("pack_file", "The file is not UTF-8 text.")
                return cleaned
            cleaned["format"] = PACK_SUFFIXES[suffix]
            cleaned["file_name"] = name
            cleaned["stem"] = PurePath(name).stem
        return cleaned


class KnowledgeSearchForm(forms.Form):
    """``GET /knowledge``: search text (hybrid search when given) and a domain filter."""

    q = forms.CharField(label="Search", required=False, max_length=200, strip=True)
    domain = forms.CharField(label="Domain", required=False, max_length=64, strip=True)

    def clean_q(self) -> str:
        text = " ".join(self.cleaned_data.get("q", "").split())
        if len(text) == 1:
            raise forms.ValidationError("Type at least 2 characters.")
        return text

    def clean_domain(self) -> str:
        name = self.cleaned_data.get("domain", "")
        if name and not re.match(DOMAIN_NAME_PATTERN, name):
            raise forms.ValidationError("Not a domain name (lowercase letters, digits, - and _).")
        return name

    def filters(self) -> dict[str, str]:
        """The valid filters only: a bad field is reported and left out."""
        cleaned = getattr(self, "cleaned_data", {})
        return {"text": cleaned.get("q") or "", "domain": cleaned.get("domain") or ""}
