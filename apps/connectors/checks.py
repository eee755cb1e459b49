"""System checks of the connector registry's environment rule (``apps.connectors.environment``)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import DatabaseError

from apps.connectors.environment import PREFIX, allow_entries, endpoint_names, row_refusals


@register()
def connector_env_configuration_check(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Allow-list entries that cannot allow anything are configuration mistakes, named here: at
    runtime they are ignored, so a secret never becomes readable by a typo."""
    messages: list[CheckMessage] = []
    _, outside = allow_entries()
    if outside:
        messages.append(
            Error(
                f"CORTEX_CONNECTORS_ENV_ALLOW has entries outside {PREFIX}*: {', '.join(outside)}; "
                "they allow nothing.",
                hint=f"Name connector variables {PREFIX}…, e.g. {PREFIX}PERPLEXITY_API_KEY.",
                id="connectors.E001",
            )
        )
    _, secret = endpoint_names()
    if secret:
        messages.append(
            Error(
                "CORTEX_CONNECTORS_ENDPOINT_ENV has entries that hold secrets or CortexWeb's own settings: "
                f"{', '.join(secret)}; they allow nothing.",
                hint="List only variables that hold an endpoint URL, such as WIKIDATA_MCP_URL.",
                id="connectors.E002",
            )
        )
    return messages


@register(Tags.database)
def connector_rows_check(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Connectors saved before the rule (or by a raw update) that name a variable they may not read.

    A warning, not an error: ``migrate`` runs database checks, and the rows are refused when read
    anyway (``connector_env_read``). Runs with ``check --database default`` and ``migrate``.
    """
    if not kwargs.get("databases"):
        return []
    from apps.connectors.models import Connector

    try:
        rows = list(Connector.objects.values_list("slug", "endpoint_env", "auth_secret_env"))
    except DatabaseError:
        return []  # before the first migration: nothing to check
    messages: list[CheckMessage] = []
    for slug, endpoint_env, auth_secret_env in rows:
        messages.extend(
            Warning(
                refusal,
                hint="Its tool calls fail until it names a connector variable; fix it in the admin.",
                id="connectors.W001",
            )
            for refusal in row_refusals(slug, endpoint_env=endpoint_env, auth_secret_env=auth_secret_env)
        )
    return messages
