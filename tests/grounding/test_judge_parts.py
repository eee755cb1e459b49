"""The local judge's part-by-part reading (issue #24): what a sentence does with what it names
(modality), and which parts of a claim one evidence sentence states. On text that has nothing to do with
the knowledge packs (cars, gardens, kitchens), since the rules are general English."""

from __future__ import annotations

import pytest

from apps.grounding.stance import (
    ENDORSE,
    PERMIT,
    PROHIBIT,
    RECOMMEND,
    REQUIRE,
    STATE,
    Parts,
    claim_parts,
    imperative,
    modalities,
    modality_stated,
    stances,
)


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Hash passwords with MD5.", {RECOMMEND}),  # an imperative recommends
        ("Use winter tyres below seven degrees.", {RECOMMEND}),
        ("Drivers should check the tyre pressure monthly.", {RECOMMEND}),
        ("Cast-iron pans are fine on an induction hob.", {RECOMMEND}),
        ("Olive oil is acceptable for frying.", {RECOMMEND}),
        ("Unleaded petrol must not be used in a diesel engine.", {PROHIBIT}),
        ("Avoid R12 refrigerant in new cooling systems.", {PROHIBIT}),
        ("Never water tomatoes from above.", {PROHIBIT}),
        ("Every car must carry a warning triangle.", {REQUIRE}),
        ("A spare wheel is optional.", {PERMIT}),
        ("Diners may bring their own wine.", {PERMIT}),
        ("Hash functions are fast.", {STATE}),  # "Hash" is no command when a verb of being follows
        ("Tomatoes ripen in late summer.", {STATE}),
        ("Refunds must be paid no later than 30 days after the return.", {REQUIRE}),  # a bound, not a "no"
    ],
)
def test_modality_reads_what_a_sentence_does_with_what_it_names(sentence: str, expected: set[str]) -> None:
    assert modalities(sentence) == frozenset(expected)


def test_an_imperative_is_its_first_verb_of_advice_and_endorses_what_it_names() -> None:
    assert imperative("Hash passwords with MD5.") == "Hash"
    assert imperative("Hash functions are fast.") == ""
    assert imperative("Tomatoes need sun.") == ""
    assert stances("Hash passwords with MD5.")["md5"].side == ENDORSE


@pytest.mark.parametrize(
    ("claim", "evidence", "stated"),
    [
        ("Gardeners should keep tomatoes in the sun.", "Keep tomatoes in the sun all day.", True),
        ("Gardeners should water tomatoes at the base.", "Gardeners must water tomatoes at the base.", True),
        ("Gardeners must water tomatoes at the base.", "Gardeners should water tomatoes at the base.", False),
        ("Gardeners should water tomatoes at the base.", "Gardeners water tomatoes at the base.", False),
        ("Petrol must not be used in a diesel engine.", "Petrol is used in a diesel engine.", False),
        ("Diners may bring their own wine.", "Diners must bring their own wine.", False),
    ],
)
def test_a_claim_is_stated_only_by_evidence_with_its_modality(
    claim: str, evidence: str, stated: bool
) -> None:
    assert modality_stated(claim, evidence) is stated


def test_a_sentence_that_states_every_part_misses_nothing() -> None:
    parts = claim_parts(
        "Mechanics should use R134a in the cooling loop of a 2015 car.",
        "Mechanics should use R134a in the cooling loop of a 2015 car, never R12.",
        "",
    )
    assert parts.missing(0.66) == []


@pytest.mark.parametrize(
    ("claim", "evidence", "missing"),
    [
        # Numbers and names.
        (
            "Change the engine oil every 5000 miles.",
            "Change the engine oil every 10000 miles.",
            ["the numbers and names 5000", "“5000” where the evidence says “10000”"],
        ),
        (
            "The manual of the Tesla recommends charging to eighty percent.",
            "The manual of the car recommends charging to eighty percent.",
            ["the numbers and names Tesla", "“tesla” where the evidence says “car”"],
        ),
        (
            "Tomatoes are the number one crop of the allotment.",
            "Tomatoes are the third crop of the allotment.",
            ["the numbers and names one", "“number” where the evidence says “thir”"],
        ),
        # One word in another's place: the near copy that says something else.
        (
            "Tomatoes need full sun all day.",
            "Tomatoes need partial sun all day.",
            ["“full” where the evidence says “partial”"],
        ),
        # A word that ranks or bounds.
        (
            "Only diesel cars need AdBlue fluid.",
            "Diesel cars need AdBlue fluid.",
            ["the words that rank or bound it (only)"],
        ),
        # Polarity where it applies.
        (
            "Diesel engines do not need glow plugs.",
            "Diesel engines need glow plugs.",
            ["its polarity (one side negates)"],
        ),
        # Modality.
        (
            "Drivers must check the tyre pressure monthly.",
            "Drivers should check the tyre pressure monthly.",
            ["its modality (must/should/may/must not)"],
        ),
        # What is asserted: most of the claim's words are not in the sentence.
        (
            "Basil grows best beside tomatoes in warm greenhouses.",
            "Basil grows best in pots.",
            ["what it asserts (beside, greenhous, tomato, warm)"],
        ),
    ],
)
def test_each_part_the_sentence_does_not_state_is_named(
    claim: str, evidence: str, missing: list[str]
) -> None:
    assert claim_parts(claim, evidence, "").missing(0.66) == missing


def test_a_negation_about_something_else_is_not_a_polarity_clash() -> None:
    parts = claim_parts(
        "Cast-iron pans work on an induction hob.",
        "Cast-iron pans work on an induction hob, but aluminium pans do not.",
        "",
    )
    assert parts.polarity is True and parts.missing(0.66) == []
    assert isinstance(parts, Parts)


def test_a_plain_statement_taking_the_evidences_side_states_its_prohibition() -> None:
    parts = claim_parts(
        "The workshop guide bans R12 refrigerant.",
        "R12 refrigerant must not be used, says the workshop guide.",
        "",
    )
    assert parts.modality is True and parts.missing(0.66) == []
