"""``arxiv.search`` as a native tool of the gateway (``POST /v1/tools/call``, plans'
``literature_search``): the same validation and run as ``POST /v1/arxiv/search``."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from pydantic import ValidationError

from apps.arxiv import services
from apps.arxiv.schemas import SearchIn
from apps.connectors.adapters import register_adapter
from apps.core.errors import ValidationFailed, pydantic_errors_to_details


@register_adapter("arxiv.search", input_model=SearchIn)
def arxiv_search_tool(tool: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    services.arxiv_feature_check()
    try:
        payload = SearchIn.model_validate(arguments)
    except ValidationError as error:
        raise ValidationFailed(
            "Invalid arguments for arxiv.search; see details.",
            details=pydantic_errors_to_details(error.errors()),
        ) from error
    run = services.search_run_wait(
        run=services.search_submit(payload=payload), timeout=settings.ARXIV_WAIT_SECONDS
    )
    failure = services.search_run_error(run=run)
    if failure is not None:  # a tool call whose run failed is a failed call
        raise failure
    return services.search_run_outcome(run=run)
