"""Which environment variables a connector may read: its endpoint and its secret, by reference only.

A connector names the variable holding its endpoint (``endpoint_env``) and the one holding its
secret (``auth_secret_env``); the values stay in the server's environment. Anyone who may write a
connector (an ``admin`` token, a staff user, a manifest) chooses those names, so without a rule
they could name ``DJANGO_SECRET_KEY`` and have it published as an endpoint or sent as a bearer
token to a server of their choosing. The rule:

* a connector reads only variables that start with :data:`PREFIX` and that
  ``CORTEX_CONNECTORS_ENV_ALLOW`` allows (exact names, or ``CORTEX_CONNECTOR_…*`` patterns;
  entries outside the prefix allow nothing);
* as an *endpoint* it may also read the variables ``CORTEX_CONNECTORS_ENDPOINT_ENV`` lists
  (``WIKIDATA_MCP_URL``, ``ARXIV_API_URL``): addresses, never secrets;
* the variables of CortexWeb's own secrets and infrastructure (:data:`DENIED_NAMES`,
  :data:`DENIED_PREFIXES`) and any name that says it holds a secret cannot be made endpoint
  variables by any configuration.

:func:`env_name_refusal` is the one check: the model's field validators (the admin, the resource
API's serializer, ``connector_save``), the manifest's semantic checks and the database system check
call it, and :func:`connector_env_read` calls it again before every read, so a row written before
the rule is refused rather than read.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

from apps.core.errors import UpstreamError
from apps.core.outbound import url_refusal

PREFIX = "CORTEX_CONNECTOR_"
ENV_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
_ALLOW_ENTRY_RE = re.compile(rf"^{PREFIX}[A-Z0-9_]*\*?$")

# CortexWeb's own secrets and the variables of its infrastructure (settings.py and the libraries it
# runs on): never a connector's, whatever the configuration says.
DENIED_NAMES = frozenset(
    {
        "SECRET_KEY",
        "DJANGO_SECRET_KEY",
        "CORTEX_SIGNING_KEY",
        "CORTEX_API_TOKEN",
        "DATABASE_URL",
        "REDIS_URL",
        "LLM_API_KEY",
        "EMBEDDINGS_API_KEY",
        "GROUNDING_NLI_API_KEY",
    }
)
DENIED_PREFIXES = (
    "DJANGO_",
    "DATABASE_",
    "REDIS_",
    "CELERY_",
    "LLM_",
    "EMBEDDINGS_",
    "GROUNDING_NLI_",
    "CORTEX_SIGNING_",
    "POSTGRES",
    "PG",
    "OTEL_EXPORTER_",
    "AWS_",
)
# A name with one of these words holds a secret: fine for auth.secretEnv under the prefix, never
# an endpoint variable outside it.
SECRET_WORDS = frozenset(
    {"SECRET", "PASSWORD", "PASSWD", "TOKEN", "KEY", "CREDENTIAL", "CREDENTIALS", "PRIVATE", "COOKIE"}
)


def _denied(name: str) -> bool:
    return name in DENIED_NAMES or name.startswith(DENIED_PREFIXES)


def _says_secret(name: str) -> bool:
    return bool(SECRET_WORDS.intersection(name.split("_")))


def allow_entries() -> tuple[list[str], list[str]]:
    """``CORTEX_CONNECTORS_ENV_ALLOW``'s entries under the prefix, and the others (which allow nothing)."""
    valid: list[str] = []
    invalid: list[str] = []
    for raw in getattr(settings, "CORTEX_CONNECTORS_ENV_ALLOW", ()) or ():
        entry = str(raw).strip()
        (valid if _ALLOW_ENTRY_RE.match(entry) else invalid).append(entry)
    return valid, invalid


def endpoint_names() -> tuple[list[str], list[str]]:
    """``CORTEX_CONNECTORS_ENDPOINT_ENV``'s usable names, and those that hold secrets (allowing nothing)."""
    valid: list[str] = []
    invalid: list[str] = []
    for raw in getattr(settings, "CORTEX_CONNECTORS_ENDPOINT_ENV", ()) or ():
        name = str(raw).strip()
        usable = ENV_NAME_RE.match(name) and not _denied(name) and not _says_secret(name)
        (valid if usable else invalid).append(name)
    return valid, invalid


def _allowed_by(entry: str, name: str) -> bool:
    if entry.endswith("*"):
        return name.startswith(entry[:-1]) and len(name) > len(PREFIX)
    return name == entry


def env_name_refusal(name: str, *, endpoint: bool) -> str | None:
    """Why a connector may not read variable ``name`` (as its endpoint, or as its secret); ``None``
    when it may. The reason names the prefix and what is allowed, never a value."""
    if not name:
        return None
    allowed, _ = allow_entries()
    hint = f"name a variable that starts with {PREFIX} (allowed: {', '.join(allowed) or 'nothing'})"
    if _denied(name):
        return f"{name!r} holds a secret or setting of CortexWeb itself, which no connector may read; {hint}."
    if ENV_NAME_RE.match(name) and name.startswith(PREFIX) and any(_allowed_by(e, name) for e in allowed):
        return None
    endpoints, _ = endpoint_names()
    if endpoint and name in endpoints:
        return None
    if endpoint and endpoints:
        hint += f", or one of the endpoint variables {', '.join(endpoints)}"
    return f"{name!r} is not a variable connectors may read; {hint}."


def _not_a_url(name: str, value: str) -> str | None:
    try:
        parts = urlsplit(value)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        valid = False
    return None if valid else f"{name} does not hold an http(s) URL."


def endpoint_value_refusal(name: str, value: str) -> str | None:
    """Why the endpoint ``value`` read from variable ``name`` is refused: not an http(s) URL, or
    an address the outbound rule refuses (as a stored endpoint would be). Never echoes the value:
    an address rule's reason names the host only."""
    refusal = _not_a_url(name, value)
    if refusal:
        return refusal
    address = url_refusal(value)
    return f"Endpoint in {name} refused: {address}" if address else None


def endpoint_env_refusal(name: str) -> str | None:
    """The save-time check of ``endpoint_env``: the name, then the value when the variable is set."""
    refusal = env_name_refusal(name, endpoint=True)
    if refusal or not name:
        return refusal
    value = os.environ.get(name, "")
    return endpoint_value_refusal(name, value) if value else None


def validate_endpoint_env(value: str) -> None:
    """Field validator of ``Connector.endpoint_env`` (forms, serializers and ``full_clean``)."""
    refusal = endpoint_env_refusal(value)
    if refusal:
        raise ValidationError(refusal, code="env_not_allowed")


def validate_auth_secret_env(value: str) -> None:
    """Field validator of ``Connector.auth_secret_env``."""
    refusal = env_name_refusal(value, endpoint=False)
    if refusal:
        raise ValidationError(refusal, code="env_not_allowed")


FIX_HINT = "Fix the connector in the admin or through /api/connectors/."


def _row_message(slug: str, refusal: str, *, endpoint: bool) -> str:
    return f"Connector {slug!r} may not read its {'endpoint' if endpoint else 'secret'} variable: {refusal}"


def row_refusals(slug: str, *, endpoint_env: str, auth_secret_env: str) -> list[str]:
    """Why a stored connector may not read its variables (the database system check)."""
    refusals = (
        (env_name_refusal(endpoint_env, endpoint=True), True),
        (env_name_refusal(auth_secret_env, endpoint=False), False),
    )
    return [_row_message(slug, refusal, endpoint=endpoint) for refusal, endpoint in refusals if refusal]


def connector_env_read(slug: str, name: str, *, endpoint: bool) -> str:
    """The value of variable ``name`` for connector ``slug`` ("" when unset), read only when the
    rule allows it: a row written before the rule gets a terminal ``UpstreamError`` naming the
    variable, and the variable is never read."""
    refusal = env_name_refusal(name, endpoint=endpoint)
    if refusal:
        key = "endpointEnv" if endpoint else "secretEnv"
        raise UpstreamError(
            f"{_row_message(slug, refusal, endpoint=endpoint)} {FIX_HINT}",
            details={"connector": slug, key: name, "retryable": False},
            retryable=False,
        )
    return os.environ.get(name, "") if name else ""


def connector_endpoint_in_effect(slug: str, *, endpoint: str, endpoint_env: str) -> str:
    """Where calls go: the endpoint variable's URL when it is set (checked: an http(s) URL; the
    address rule is applied again when connecting), else the stored endpoint."""
    value = connector_env_read(slug, endpoint_env, endpoint=True)
    if not value:
        return endpoint
    refusal = _not_a_url(endpoint_env, value)
    if refusal:
        raise UpstreamError(
            f"Connector {slug!r}: {refusal}",
            details={"connector": slug, "endpointEnv": endpoint_env, "retryable": False},
            retryable=False,
        )
    return value
