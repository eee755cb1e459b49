"""The starter ontology's notes, the loader and the graph with its OWL 2 RL closure."""

from __future__ import annotations

import pytest

from apps.core.errors import ValidationFailed
from apps.ontology import services
from apps.ontology.graph import ontology_graph, subclass_cycles
from apps.ontology.models import NAMESPACE, OntologyClass, OntologyState
from apps.ontology.notes import NoteError, note_parse, note_render

CW = NAMESPACE


def test_every_starter_note_parses_and_round_trips() -> None:
    notes = services.notes_read(services.notes_folder())
    assert len(notes) >= 80
    for note, _ in notes:
        assert note_parse(note_render(note)) == note
    by_iri = {note.iri for note, _ in notes}
    referenced = {iri for note, _ in notes for iri in [*note.parent_iris, *note.disjoint_iris]}
    referenced |= {rel["target"] for note, _ in notes for rel in note.relationships}
    assert {iri for iri in referenced if iri.startswith(CW)} <= by_iri
    assert subclass_cycles({note.iri: set(note.parent_iris) for note, _ in notes}) == []


HEAD = "- ### OntologyBlock\n  - term-id:: {term}\n  - preferred-term:: A\n  - definition:: d\n"
REST = (
    "  - owl-class:: cw:A\n  - physicality:: VirtualEntity\n  - role:: Object\n  - domain:: security\n"
    "  - quality-score:: {quality}\n  - authority-score:: 0.5\n  - maturity:: mature\n"
    "  - status:: complete\n  - source:: s\n"
)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("not a note", ""),
        ("- ### OntologyBlock\n  - term-id:: CW-SEC-0001\n", "preferred-term"),
        (HEAD.format(term="X") + REST.format(quality=0.5), "term-id"),
        (HEAD.format(term="CW-SEC-0001") + REST.format(quality=2), "quality-score"),
    ],
)
def test_a_broken_note_is_refused_naming_the_property(text: str, field: str) -> None:
    with pytest.raises(NoteError) as refused:
        note_parse(text)
    assert refused.value.field == field


@pytest.mark.django_db
def test_the_loader_stores_embeds_and_bumps_the_version_and_the_graph_infers() -> None:
    loaded = services.ontology_load_default_if_empty()
    assert loaded is not None and loaded.classes >= 80
    assert loaded.summary() == f"{loaded.classes} ontology classes (version 1)"
    assert services.ontology_load_default_if_empty() is None  # only when empty
    assert OntologyState.objects.get().version == 1
    assert not OntologyClass.objects.filter(embedding__isnull=True).exists()
    graph = ontology_graph()
    sqli = CW + "CWE89SqlInjection"
    assert graph.parents[sqli] == {CW + "CWE943ImproperNeutralizationInDataQueryLogic"}
    # CWE-89 → 943 → 74 → 707: the reasoner finds the grandparents; they are not asserted.
    assert {CW + "CWE74Injection", CW + "CWE707ImproperNeutralization"} <= graph.inferred_ancestors(sqli)
    assert graph.unsatisfiable == set()
    assert ontology_graph() is graph  # one build per version and process


def test_a_duplicated_term_id_is_refused() -> None:
    notes = services.notes_read(services.notes_folder())
    with pytest.raises(ValidationFailed):
        services.ontology_load(notes=[notes[0], notes[0]])
