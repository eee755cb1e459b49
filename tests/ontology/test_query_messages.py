"""What ``ontology_query`` says about a query it cannot run (issue 26 item 6): a misspelt query form is
told the two forms served here, never the shared guard's list with CONSTRUCT and DESCRIBE in it."""

from __future__ import annotations

import pytest

from tests.ontology.test_query_and_propose import ontology, query  # noqa: F401 - a fixture used below

pytestmark = pytest.mark.django_db

START = "Start the query with SELECT (rows) or ASK (one boolean), after any PREFIX lines."


@pytest.mark.parametrize(
    ("sparql", "error", "hint"),
    [
        (
            "SELEC ?class WHERE { ?class rdfs:subClassOf cw:CWE74Injection }",
            "Only SELECT and ASK queries are served here; found SELEC.",
            f"Did you mean SELECT? {START}",
        ),
        (
            "ASKK { ?s ?p ?o }",
            "Only SELECT and ASK queries are served here; found ASKK.",
            f"Did you mean ASK? {START}",
        ),
        ("{ ?s ?p ?o }", "Only SELECT and ASK queries are served here; found no query form.", START),
    ],
)
def test_a_misspelt_query_form_names_only_the_forms_served(
    ontology: None,  # noqa: F811
    sparql: str,
    error: str,
    hint: str,
) -> None:
    answer = query(sparql)
    assert answer["success"] is False and answer["result"] is None
    assert answer["validation"] == {"valid": False, "errors": [error], "hints": [hint]}
    assert "CONSTRUCT" not in str(answer["validation"])


def test_construct_is_still_refused_with_its_own_reason(ontology: None) -> None:  # noqa: F811
    answer = query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    assert answer["validation"]["errors"] == ["CONSTRUCT queries are not served here; only SELECT and ASK."]


def test_an_update_still_points_to_propose(ontology: None) -> None:  # noqa: F811
    answer = query("INSERT DATA { cw:A rdfs:subClassOf cw:B }")
    assert answer["validation"]["errors"] == [
        "only read-only SPARQL queries are allowed; found the update keyword INSERT DATA; "
        "ontology changes go through ontology_propose."
    ]
