"""In/Out schemas of ``POST /ontology-agent/query`` and the MCP tool ``ontology_query`` (seed 003:
camelCase in, snake_case out)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from ninja import Field, Schema
from pydantic import model_validator

from apps.core.schemas import StrictSchema
from apps.ontology.cypher import CYPHER_MAX_LENGTH
from apps.ontology.sparql import QUERY_MAX_LENGTH, RESULT_MAX_BYTES, ROW_CAP

ONE_OF = (
    "Send exactly one of `cypher` (the seed's field: a read-only Cypher query such as "
    "MATCH (a)-[:subClassOf]->(b) RETURN a, b LIMIT 10) or `sparql` (a read-only SPARQL SELECT or ASK)."
)


class QueryIn(StrictSchema):
    cypher: str | None = Field(
        None,
        min_length=1,
        max_length=CYPHER_MAX_LENGTH,
        description="Seed 003's input: read-only Cypher over the ontology's classes, translated to SPARQL "
        "(shown as translated_sparql): MATCH (a)-[:subClassOf]->(b) WHERE a.label CONTAINS 'SQL' "
        "RETURN a, b LIMIT 10. Relationship types: subClassOf, disjointWith and the notes' relationships "
        "(`relates-to` or relatesTo, …); *1..5 for paths; properties iri, name, label. Exactly one of "
        "cypher and sparql.",
    )
    sparql: str | None = Field(
        None,
        min_length=1,
        max_length=QUERY_MAX_LENGTH,
        description="A read-only SPARQL SELECT or ASK query over the ontology and its OWL 2 RL inferences. "
        "The prefixes cw, prov, owl, rdfs, rdf, skos and xsd are declared for you. Exactly one of cypher "
        "and sparql.",
    )

    @model_validator(mode="after")
    def _one_of(self) -> QueryIn:
        if (self.cypher is None) == (self.sparql is None):
            raise ValueError(ONE_OF)
        return self


class QueryValidationOut(Schema):
    valid: bool
    errors: list[str] = Field(..., description="Why the query was refused or stopped; empty when it ran.")
    hints: list[str] = Field(..., description="Corrections (did you mean …) and notes (the LIMIT applied).")


class QueryResultOut(Schema):
    columns: list[str]
    rows: list[dict[str, Any]] = Field(
        ...,
        description="One object per solution, column → value (IRIs and literals as strings, numbers and "
        "booleans as JSON, unbound as null). ASK answers one row {ask: true|false}.",
    )
    row_count: int
    truncated: bool = Field(
        ...,
        description=f"True when more than {ROW_CAP} rows (or {RESULT_MAX_BYTES} bytes of rows) matched "
        "and only the first are here.",
    )


class QueryOut(Schema):
    success: bool = Field(..., description="The query was valid and ran within the time limit.")
    validation: QueryValidationOut
    query_type: str | None = Field(None, description="SELECT or ASK.")
    translated_sparql: str | None = Field(
        None,
        description="The SPARQL a cypher query was translated to and run as; null for sparql or a refusal.",
    )
    result: QueryResultOut | None = Field(
        None,
        description="Absent when refused or stopped at the time limit "
        f"({settings.ONTOLOGY_QUERY_TIME_LIMIT_SECONDS:g} s, ONTOLOGY_QUERY_TIME_LIMIT_SECONDS).",
    )
