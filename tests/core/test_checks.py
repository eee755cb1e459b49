"""The system checks for CortexWeb's configuration."""

from __future__ import annotations

from apps.core.checks import cortex_configuration_check


def _ids(settings_obj) -> list[str]:
    return [message.id for message in cortex_configuration_check(None)]


def test_the_test_configuration_passes(settings) -> None:
    assert _ids(settings) == []


def test_an_unknown_trace_exporter_is_an_error_naming_the_choices(settings) -> None:
    settings.OTEL_TRACES_EXPORTER = "jaeger"
    messages = cortex_configuration_check(None)
    assert [m.id for m in messages] == ["cortex.E010"]
    assert "none, console, otlp" in messages[0].hint


def test_wikidata_endpoints_must_be_http_urls(settings) -> None:
    settings.WIKIDATA_SPARQL_URL = "query.wikidata.org/sparql"
    assert _ids(settings) == ["cortex.E011"]


def test_a_user_agent_without_contact_is_warned_about(settings) -> None:
    settings.CORTEX_USER_AGENT = "CortexWeb/0.1"
    assert _ids(settings) == ["cortex.W001"]


def test_an_unknown_grounding_judge_is_an_error_naming_the_choices(settings) -> None:
    settings.GROUNDING_JUDGE = "nil"
    messages = cortex_configuration_check(None)
    assert [m.id for m in messages] == ["cortex.E050"]
    assert "local, nli, llm" in messages[0].hint


def test_a_model_judge_needs_its_endpoint_and_a_positive_deadline(settings) -> None:
    settings.GROUNDING_JUDGE, settings.GROUNDING_NLI_URL = "nli", ""
    assert _ids(settings) == ["cortex.E051"]
    settings.GROUNDING_JUDGE, settings.LLM_URL = "llm", ""
    assert _ids(settings) == ["cortex.E052"]
    settings.GROUNDING_JUDGE, settings.GROUNDING_JUDGE_DEADLINE_SECONDS = "local", 0
    assert _ids(settings) == ["cortex.E053"]
