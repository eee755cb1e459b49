"""Operator actions on the connector and tool pages: Sync, and "Try this tool".

``connector_sync_run`` runs the registry's sync (``gateway.connector_sync_once``, one at a time per
connector) and gathers what an operator needs from it: the sync's row (added, removed, renamed,
changed), the report, and the tools whose upstream change awaits approval in the admin.

"Try this tool": a form built from the tool's input schema, a dry run, then the call.

``trial_form`` builds a Django form from the tool's published input schema: string, number,
integer, boolean, enum and array-of-strings properties become fields (required ones marked, the
schema's descriptions as help text); any other property, and a schema the builder cannot read as an
object of properties, is a JSON textarea. ``trial_arguments`` turns a bound form into the call's
arguments and checks them exactly as the gateway will (the published schema, the tool's call shape,
the upstream's schema), naming the field each error belongs to. ``trial_dry_run`` says what the call
would do without calling anything; ``trial_call`` makes it through ``gateway.tool_call``, so it is
recorded as a ``ToolCall`` and waits for the connector's rate limit like any other call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

from apps.connectors import adapters, schema_refs
from apps.connectors.gateway import (
    SyncReport,
    connector_sync_once,
    connector_upstream,
    tool_arguments_check,
    tool_call,
)
from apps.connectors.models import (
    CallTransport,
    Connector,
    ConnectorSync,
    RemoteTool,
    SyncTrigger,
    ToolCall,
    Transport,
)
from apps.connectors.selectors import tool_input_schema
from apps.core.errors import ApplicationError, ValidationFailed
from apps.core.logging import current_correlation_id
from apps.core.models import UpstreamRequest

# The whole arguments object as JSON, when the schema is not an object of properties.
ARGUMENTS_FIELD = "arguments"
# Form fields that are not arguments (hidden state of the two-step form).
CONFIRM_FIELD = "confirm"
SIMPLE_TYPES = {"string", "number", "integer", "boolean"}


class JsonValueField(forms.CharField):
    """A JSON value typed as text; ``None`` when left empty."""

    widget = forms.Textarea(attrs={"rows": 4, "class": "json-input", "spellcheck": "false"})

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise forms.ValidationError(
                f"Not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
            ) from error


class StringListField(forms.CharField):
    """An array of strings, one per line (blank lines skipped); ``None`` when empty."""

    widget = forms.Textarea(attrs={"rows": 3})

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        items = [line.strip() for line in (text or "").splitlines() if line.strip()]
        return items or None


_BOOLEAN_CHOICES = [("", "—"), ("true", "true"), ("false", "false")]


def _boolean(value: str) -> bool:
    return value == "true"


def _simple_field(kind: Any, common: dict[str, Any]) -> tuple[forms.Field, str] | None:
    if kind == "string":
        return forms.CharField(strip=False, **common), "string"
    if kind == "integer":
        return forms.IntegerField(**common), "integer"
    if kind == "number":
        # Decimal keeps what was written: 3 is sent as an integer, 2.5 as a float.
        return forms.DecimalField(**common), "number"
    if kind == "boolean":
        # A select, not a checkbox: an optional boolean left unset is not the same as false.
        field = forms.TypedChoiceField(choices=_BOOLEAN_CHOICES, coerce=_boolean, empty_value=None, **common)
        return field, "boolean"
    return None


def _property_field(prop: dict[str, Any], *, required: bool) -> tuple[forms.Field, str]:
    """The form field for one property, and its kind (``json`` when the builder cannot render it)."""
    help_text = prop.get("description") if isinstance(prop.get("description"), str) else ""
    common: dict[str, Any] = {"required": required, "help_text": help_text}
    kind = prop.get("type")
    enum = prop.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(item, str) for item in enum):
        choices = [(item, item) for item in enum]
        return forms.ChoiceField(choices=([] if required else [("", "—")]) + choices, **common), "enum"
    simple = _simple_field(kind, common) if enum is None else None
    if simple is not None:
        return simple
    items = prop.get("items")
    if kind == "array" and isinstance(items, dict) and items.get("type") == "string" and "enum" not in items:
        help_text = f"{help_text} One per line.".strip()
        return StringListField(required=required, help_text=help_text), "list"
    return JsonValueField(required=required, help_text=f"{help_text} As JSON.".strip()), "json"


def _object_properties(schema: Any) -> tuple[dict[str, dict[str, Any]], set[str]] | None:
    """The schema's properties and required names, or ``None`` when it is not a plain object of properties
    (a combinator, a reference or a non-object at the top level: the whole arguments as JSON)."""
    if not isinstance(schema, dict) or not schema:
        return {}, set()
    if schema.get("type", "object") != "object" or any(
        key in schema for key in ("oneOf", "anyOf", "allOf", "$ref", "if", "not")
    ):
        return None
    properties = schema.get("properties", {})
    if not isinstance(properties, dict) or not all(isinstance(value, dict) for value in properties.values()):
        return None
    required = schema.get("required", [])
    return properties, {name for name in required if isinstance(name, str)} if isinstance(
        required, list
    ) else set()


def _json_number(value: Decimal) -> int | float:
    return int(value) if "." not in str(value) and value == value.to_integral_value() else float(value)


class TrialForm(forms.Form):
    """Arguments of one tool, as fields (``kinds``: each field's kind, for the template)."""

    def __init__(self, *args: Any, schema: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schema = schema
        self.kinds: dict[str, str] = {}
        read = _object_properties(schema)
        if read is None:
            self.fields[ARGUMENTS_FIELD] = JsonValueField(
                required=True, help_text="The arguments object, as JSON (this schema has no form)."
            )
            self.kinds[ARGUMENTS_FIELD] = "json"
            self.whole_json = True
            return
        self.whole_json = False
        properties, required = read
        # Required fields first (a stored schema's key order is Postgres's, not the author's).
        for name, prop in sorted(properties.items(), key=lambda item: item[0] not in required):
            self.fields[name], self.kinds[name] = _property_field(prop, required=name in required)
            self.fields[name].label = name

    def arguments(self) -> dict[str, Any] | Any:
        """The cleaned fields as the call's arguments (empty optional fields left out)."""
        if self.whole_json:
            return self.cleaned_data[ARGUMENTS_FIELD]
        arguments: dict[str, Any] = {}
        for name, value in self.cleaned_data.items():
            if value is None or value == "":
                continue
            arguments[name] = _json_number(value) if self.kinds[name] == "number" else value
        return arguments

    def add_path_errors(self, errors: list[dict[str, str]]) -> None:
        """Each ``{path, message}`` on the field its path starts with, the others on the form."""
        for item in errors:
            match = re.match(r"^\$\.([A-Za-z_][A-Za-z0-9_]*)|^\$\['([^']+)'\]", item["path"])
            name = (match.group(1) or match.group(2)) if match else None
            if name in self.fields and not self.whole_json:
                self.add_error(name, item["message"])
            elif self.whole_json:
                self.add_error(ARGUMENTS_FIELD, f"{item['path']}: {item['message']}")
            else:
                self.add_error(None, f"{item['path']}: {item['message']}")


def trial_form(tool: RemoteTool, data: Any = None) -> TrialForm:
    return TrialForm(data, schema=tool_input_schema(tool), prefix="arg")


# jsonschema's messages for these repeat the whole value; on a form field the count says more.
_COUNTED = {
    "maxItems": "At most {limit} items ({count} given).",
    "minItems": "At least {limit} items ({count} given).",
    "maxLength": "At most {limit} characters ({count} given).",
    "minLength": "At least {limit} characters ({count} given).",
}


def _message(error: Any) -> str:
    template = _COUNTED.get(error.validator)
    if template is None or not hasattr(error.instance, "__len__"):
        return str(error.message)
    return template.format(limit=error.validator_value, count=len(error.instance))


def _schema_errors(schema: Any, arguments: Any) -> list[dict[str, str]]:
    """``arguments`` against the published schema (the one the form was built from)."""
    if not isinstance(schema, dict) or not schema or schema_refs.schema_refusal(schema):
        return []
    try:
        validator = Draft202012Validator(schema, registry=schema_refs.LOCAL_REGISTRY)
        validator.check_schema(schema)
        return [
            {"path": error.json_path, "message": _message(error)}
            for error in validator.iter_errors(arguments)
        ]
    except (SchemaError, Unresolvable):
        return []  # a broken upstream schema: the gateway's own check decides


def _arguments_errors(tool: RemoteTool, schema: Any, arguments: Any) -> list[dict[str, str]]:
    """What the published schema, then the gateway (call shape, upstream schema), find wrong."""
    errors = _schema_errors(schema, arguments)
    if errors:
        return errors
    try:
        tool_arguments_check(tool, arguments)
    except ValidationFailed as failure:
        return list((failure.details or {}).get("errors") or []) or [
            {"path": "$", "message": failure.message}
        ]
    return []


def trial_arguments(tool: RemoteTool, form: TrialForm) -> dict[str, Any] | None:
    """The validated arguments, or ``None`` with the errors put on the form's fields."""
    if not form.is_valid():
        return None
    arguments = form.arguments()
    errors = _arguments_errors(tool, form.schema, arguments)
    if errors:
        form.add_path_errors(errors)
        return None
    return arguments


def confirmed_arguments(tool: RemoteTool, text: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The arguments a dry run showed, sent back with the confirmation: checked again, since the
    form could have been changed on the way (``None`` and what is wrong, in words)."""
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as error:
        return None, [f"The confirmed arguments are not valid JSON ({error.msg}); fill in the form again."]
    errors = _arguments_errors(tool, tool_input_schema(tool), arguments)
    if errors:
        return None, [f"{item['path']}: {item['message']}" for item in errors]
    return arguments, []


@dataclass
class DryRun:
    """What confirming would do; nothing was sent."""

    tool: str
    connector: str
    upstream_tool: str
    arguments: dict[str, Any]
    arguments_json: str
    upstream_requests: int  # the requests this call spends from the budget
    budget_upstream: str
    budget_per_hour: float | None
    interval_seconds: float | None
    burst: int
    sent_last_hour: int
    notes: list[str] = field(default_factory=list)


def trial_dry_run(tool: RemoteTool, arguments: dict[str, Any]) -> DryRun:
    connector = tool.connector
    shaped = adapters.arguments_shaped(tool.name, arguments) if isinstance(arguments, dict) else None
    requests = len(shaped.calls) if shaped is not None else 1
    upstream, per_hour = connector_upstream(connector)
    notes = []
    if connector.transport != Transport.MCP:
        notes.append("A native adapter: its HTTP clients' own limits apply, recorded under their upstreams.")
    if not connector.enabled:
        notes.append(f"Connector '{connector.slug}' is disabled: the call will be refused.")
    since = timezone.now() - timedelta(hours=1)
    sent = UpstreamRequest.objects.filter(upstream=upstream, created_at__gte=since).count()
    return DryRun(
        tool=tool.name,
        connector=connector.slug,
        upstream_tool=tool.upstream_call_name,
        arguments=arguments,
        arguments_json=json.dumps(arguments, indent=2, ensure_ascii=False, sort_keys=True),
        upstream_requests=requests,
        budget_upstream=upstream,
        budget_per_hour=per_hour,
        interval_seconds=connector.rate_limit_interval,
        burst=connector.rate_limit_burst,
        sent_last_hour=sent,
        notes=notes,
    )


@dataclass
class TrialOutcome:
    """A confirmed call: its answer or its error, and the ``ToolCall`` that recorded it."""

    result_json: str = ""
    upstream_tool: str = ""
    duration_ms: float | None = None
    error: str = ""
    error_code: str = ""
    tool_call: ToolCall | None = None
    tool_call_url: str = ""


def _recorded_call(tool: RemoteTool, correlation_id: str, before: int | None) -> ToolCall | None:
    """The row ``tool_call`` wrote for this request (its correlation id; else the newest after ``before``)."""
    calls = ToolCall.objects.filter(tool_name=tool.name, transport=CallTransport.PAGE)
    condition = Q(correlation_id=correlation_id) if correlation_id else Q(pk__gt=before or 0)
    return calls.filter(condition).order_by("-pk").first()


def trial_call(tool: RemoteTool, arguments: dict[str, Any]) -> TrialOutcome:
    """The call through the gateway (recorded, rate-limited); an ``ApplicationError`` is its error."""
    correlation_id = current_correlation_id() or ""
    before = ToolCall.objects.order_by("-pk").values_list("pk", flat=True).first()
    outcome = TrialOutcome()
    try:
        answer = tool_call(name=tool.name, arguments=arguments, transport=CallTransport.PAGE)
    except ApplicationError as error:
        outcome.error, outcome.error_code = error.message, error.code
    else:
        outcome.result_json = json.dumps(answer["result"], indent=2, ensure_ascii=False)
        outcome.upstream_tool = answer["upstreamTool"]
        outcome.duration_ms = answer["durationMs"]
    outcome.tool_call = _recorded_call(tool, correlation_id, before)
    if outcome.tool_call is not None:
        outcome.tool_call_url = reverse("admin:connectors_toolcall_change", args=[outcome.tool_call.pk])
    return outcome


# --- Sync --------------------------------------------------------------------------------------------


@dataclass
class SyncOutcome:
    """A sync started from the connector's page: its recorded row, the report, what awaits approval."""

    sync: ConnectorSync | None = None
    report: SyncReport | None = None
    pending: list[RemoteTool] = field(default_factory=list)
    error: str = ""


def connector_sync_run(*, connector: Connector) -> SyncOutcome:
    """Sync ``connector`` now; a refusal (a native connector) or an upstream failure is the outcome's
    error, the failed sync still recorded by the gateway."""
    outcome = SyncOutcome()
    before = connector.syncs.order_by("-pk").values_list("pk", flat=True).first() or 0
    try:
        outcome.report = connector_sync_once(slug=connector.slug, trigger=SyncTrigger.MANUAL)
    except ApplicationError as error:
        outcome.error = error.message
    outcome.sync = connector.syncs.filter(pk__gt=before).order_by("-pk").first()
    outcome.pending = list(connector.tools.exclude(pending_changes=[]).order_by("position", "name"))
    return outcome
