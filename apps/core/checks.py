"""System checks for the configuration CortexWeb needs."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Warning, register

from apps.core.auth import networks_parse
from apps.core.outbound import networks_parse as outbound_networks_parse
from apps.core.tracing import EXPORTERS


@register()
def cortex_configuration_check(app_configs: Any, **kwargs: Any) -> list:
    messages = []
    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        messages.append(
            Error(
                "CortexWeb needs PostgreSQL with pgvector.",
                hint="Set DATABASE_URL to postgres://…",
                id="cortex.E001",
            )
        )
    if not settings.REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
        messages.append(Error("REDIS_URL must be a redis:// URL.", id="cortex.E002"))
    user_agent = settings.CORTEX_USER_AGENT
    if "@" not in user_agent and "http" not in user_agent:
        messages.append(
            Warning(
                "CORTEX_USER_AGENT has no contact; Wikimedia rejects generic User-Agents.",
                hint="Include a URL or e-mail address, e.g. 'CortexWeb/0.1 (https://…; ops@…)'.",
                id="cortex.W001",
            )
        )
    if settings.CORTEX_MAX_BODY_BYTES <= 0:
        messages.append(Error("CORTEX_MAX_BODY_BYTES must be positive.", id="cortex.E003"))
    if settings.OTEL_TRACES_EXPORTER not in EXPORTERS:
        messages.append(
            Error(
                f"OTEL_TRACES_EXPORTER is {settings.OTEL_TRACES_EXPORTER!r}.",
                hint=f"Use one of {', '.join(EXPORTERS)}.",
                id="cortex.E010",
            )
        )
    for name in ("WIKIDATA_API_URL", "WIKIDATA_SPARQL_URL", "WIKIDATA_VECTOR_URL"):
        if not str(getattr(settings, name)).startswith(("http://", "https://")):
            messages.append(Error(f"{name} must be an http(s) URL.", id="cortex.E011"))
    _networks, invalid = networks_parse(settings.CORTEX_METRICS_ALLOW_NETWORKS)
    if invalid:
        messages.append(
            Error(
                f"CORTEX_METRICS_ALLOW_NETWORKS has entries that are not networks: {', '.join(invalid)}.",
                hint="Comma-separated CIDR networks or addresses, e.g. '127.0.0.0/8,::1/128,10.0.0.0/8'.",
                id="cortex.E030",
            )
        )
    for name in ("CORTEX_PAGE_SUBMISSIONS_PER_MINUTE", "CORTEX_PAGE_SUBMISSION_BURST"):
        if getattr(settings, name) < 0:
            messages.append(Error(f"{name} must be 0 or more.", id="cortex.E031"))
    _outbound, invalid_outbound = outbound_networks_parse(settings.CORTEX_OUTBOUND_ALLOW_NETWORKS)
    if invalid_outbound:
        messages.append(
            Error(
                "CORTEX_OUTBOUND_ALLOW_NETWORKS has entries that are not networks: "
                f"{', '.join(invalid_outbound)}.",
                hint="Comma-separated CIDR networks or addresses, e.g. '10.20.0.0/16,fd00:1::/64'.",
                id="cortex.E040",
            )
        )
    messages.extend(_grounding_judge_messages())
    return messages


def _grounding_judge_messages() -> list:
    """The grounding judge named must exist, and a model judge needs its endpoint (a typo in
    GROUNDING_JUDGE would otherwise fall back to the local judge on every claim, silently)."""
    from apps.core.llm import llm_configured
    from apps.grounding.model_judges import JUDGES, NLI_MODES, nli_configured

    judge = settings.GROUNDING_JUDGE
    if judge not in JUDGES:
        hint = f"Use one of {', '.join(JUDGES)}."
        return [Error(f"GROUNDING_JUDGE is {judge!r}.", hint=hint, id="cortex.E050")]
    messages = []
    if judge == "nli" and not nli_configured():
        messages.append(Error("GROUNDING_JUDGE is nli but GROUNDING_NLI_URL is not set.", id="cortex.E051"))
    if judge == "llm" and not llm_configured():
        messages.append(Error("GROUNDING_JUDGE is llm but LLM_URL is not set.", id="cortex.E052"))
    if settings.GROUNDING_JUDGE_DEADLINE_SECONDS <= 0:
        messages.append(Error("GROUNDING_JUDGE_DEADLINE_SECONDS must be positive.", id="cortex.E053"))
    if settings.GROUNDING_NLI_MODE not in NLI_MODES:  # a typo would silently mean "decide"
        hint = f"Use one of {', '.join(NLI_MODES)}."
        mode = settings.GROUNDING_NLI_MODE
        messages.append(Error(f"GROUNDING_NLI_MODE is {mode!r}.", hint=hint, id="cortex.E054"))
    return messages
