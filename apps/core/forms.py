"""Pieces the page forms share: a form re-checked with its API schema reports the schema's errors."""

from __future__ import annotations

from collections.abc import Mapping

from django import forms
from pydantic import ValidationError


def schema_errors_add(form: forms.Form, error: ValidationError, field_of: Mapping[str, str]) -> None:
    """Each schema error on the form field it concerns (``field_of``: schema field → form field);
    an error of a field the form does not show becomes a form-wide error."""
    for problem in error.errors():
        location = str(problem["loc"][0]) if problem["loc"] else ""
        message = str(problem["msg"]).removeprefix("Value error, ")
        form.add_error(field_of.get(location), message)
