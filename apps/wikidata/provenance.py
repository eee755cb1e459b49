"""PROV-O export of a fact run (rdflib): to be written."""

from __future__ import annotations

from typing import Literal

from apps.wikidata.models import FactRun


def fact_run_prov(*, run: FactRun, fmt: Literal["turtle", "json-ld"]) -> str:
    raise NotImplementedError
