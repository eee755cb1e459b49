"""DRF serializers shared by the apps, and the base of the writable ones.

DRF reads scalars leniently: ``"true"``, ``"1"`` and ``1`` for a boolean, ``"5"`` for an integer,
``5`` for a string. That suits HTML forms, where every value is text, but the OpenAPI document
promises JSON types, so a JSON body with another type is refused (400, naming the field) rather than
guessed at. ``JsonModelSerializer`` maps model fields to these fields; forms (the browsable API)
keep DRF's reading.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.http import QueryDict
from rest_framework import serializers

from apps.core.models import Event


def _from_form(field: serializers.Field) -> bool:
    """Whether the data came from a form (every value text), not a JSON body."""
    return isinstance(getattr(field.root, "initial_data", None), QueryDict)


class JsonBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool) and not _from_form(self):
            self.fail("invalid", input=data)
        return super().to_internal_value(data)


class JsonIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        is_number = isinstance(data, int | float) and not isinstance(data, bool)
        if not is_number and not _from_form(self):
            self.fail("invalid")
        return super().to_internal_value(data)


class JsonFloatField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        is_number = isinstance(data, int | float) and not isinstance(data, bool)
        if not is_number and not _from_form(self):
            self.fail("invalid")
        return super().to_internal_value(data)


class _JsonText:
    """Text fields: a JSON number or boolean is not text (DRF would store ``5`` as ``"5"``)."""

    default_error_messages = {"not_text": "Not a valid string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) and not _from_form(self):  # type: ignore[arg-type]
            self.fail("not_text")  # type: ignore[attr-defined]
        return super().to_internal_value(data)  # type: ignore[misc]


class JsonCharField(_JsonText, serializers.CharField):
    pass


class JsonSlugField(_JsonText, serializers.SlugField):
    pass


class JsonURLField(_JsonText, serializers.URLField):
    pass


class JsonModelSerializer(serializers.ModelSerializer):
    """A model serializer whose booleans, numbers and strings take only their JSON type from a JSON
    body (the base of every writable /api/ serializer)."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.BooleanField: JsonBooleanField,
        models.IntegerField: JsonIntegerField,
        models.BigIntegerField: JsonIntegerField,
        models.SmallIntegerField: JsonIntegerField,
        models.PositiveIntegerField: JsonIntegerField,
        models.PositiveSmallIntegerField: JsonIntegerField,
        models.PositiveBigIntegerField: JsonIntegerField,
        models.FloatField: JsonFloatField,
        models.CharField: JsonCharField,
        models.TextField: JsonCharField,
        models.SlugField: JsonSlugField,
        models.URLField: JsonURLField,
    }


class EventSerializer(serializers.ModelSerializer):
    class Meta:
        model = Event
        fields = ["id", "name", "correlation_id", "payload", "created_at"]
