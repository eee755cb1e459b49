"""CSV output of the resource API (``/api/…?format=csv`` or ``Accept: text/csv``), with the standard
library's ``csv``: one row per resource, one column per field.

A list's page (``{count, next, previous, results}``) gives its ``results``; a single resource is one
row; an error is one row of its fields. Nested values (lists, objects) are cells of compact JSON. A
cell that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab, carriage return
first) gets a leading ``'``: stored text comes from agents and upstreams.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from rest_framework.renderers import BaseRenderer

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    else:
        text = str(value)
    if text.startswith(FORMULA_STARTS) and not _is_number(text):
        return "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_rows(data: Any) -> list[Mapping[str, Any]]:
    """The rows ``data`` (a rendered response's data) stands for."""
    if isinstance(data, Mapping) and isinstance(data.get("results"), list) and "count" in data:
        return list(data["results"])
    if isinstance(data, list):
        return [row if isinstance(row, Mapping) else {"value": row} for row in data]
    if isinstance(data, Mapping):
        return [data]
    return [] if data is None else [{"value": data}]


class CsvRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        rows = csv_rows(data)
        header: list[str] = []
        for row in rows:  # the first row's fields in order, then any a later row adds
            header.extend(key for key in row if key not in header)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        if header:
            writer.writerow(header)
        for row in rows:
            writer.writerow([csv_cell(row.get(key)) for key in header])
        response = (renderer_context or {}).get("response")
        view = (renderer_context or {}).get("view")
        if response is not None and view is not None and response.status_code < 400:
            name = getattr(view, "basename", None) or "resources"
            response["Content-Disposition"] = f'inline; filename="{name}.csv"'
        return out.getvalue().encode(self.charset)
