"""Pagination of the resource API (``/api/``): ``?limit=&offset=``, each a whole number in a stated range.

DRF's ``LimitOffsetPagination`` reads both leniently: a value it cannot parse silently becomes the
default, and any number Python can hold reaches the SQL, where one past Postgres's bigint is a 500
(``bigint out of range``). Here a value outside the range is a 400 naming the parameter and the
range, and the OpenAPI document states the same range, so clients can see it before they ask.
"""

from __future__ import annotations

from typing import Any

from rest_framework.pagination import LimitOffsetPagination

from apps.core.filters import filter_whole_number

# The largest page one request may ask for: a few thousand rows at most per response.
MAX_LIMIT = 1000
# The largest offset Postgres takes (OFFSET is a bigint).
MAX_OFFSET = 2**63 - 1


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """``limit`` 1–1000 (default ``PAGE_SIZE``) and ``offset`` from 0, or a 400 saying so."""

    max_limit = MAX_LIMIT

    def get_limit(self, request: Any) -> int:
        limit = filter_whole_number(
            request.query_params, self.limit_query_param, minimum=1, maximum=MAX_LIMIT
        )
        return self.default_limit if limit is None else limit

    def get_offset(self, request: Any) -> int:
        offset = filter_whole_number(
            request.query_params, self.offset_query_param, minimum=0, maximum=MAX_OFFSET
        )
        return offset or 0

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        bounds = {
            self.limit_query_param: {"minimum": 1, "maximum": MAX_LIMIT, "default": self.default_limit},
            self.offset_query_param: {"minimum": 0, "maximum": MAX_OFFSET, "default": 0},
        }
        for parameter in parameters:
            parameter["schema"].update(bounds[parameter["name"]])
        return parameters
