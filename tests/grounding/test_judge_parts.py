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
    _ranks,
    asserted_share,
    claim_parts,
    imperative,
    misplaced_numbers,
    modalities,
    modality_stated,
    stances,
    unbound_parts,
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


# A sentence that sets two things side by side holds every word of a claim that mixes them up: the claim is
# not stated by it (issue #24: "gzip … RFC 1952 and Brotli … RFC 7932" did "state" "Brotli … RFC 1952").
@pytest.mark.parametrize(
    ("claim", "evidence", "unbound"),
    [
        # Numbers given to the other thing: a contrast, a list after a colon, two tiers, a new name.
        (
            "A diesel engine needs four litres of oil.",
            "A diesel engine takes two litres of oil, versus four litres for a petrol engine.",
            [
                "the numbers 4 for this (the evidence gives them to another thing)",
                "four of this (the evidence says it of the other side)",
            ],
        ),
        (
            "The guide considers a lawn height of 8 centimetres the minimum for clover.",
            "The guide gives minimum heights: rye with 4 cm and a spread of 8; "
            "clover with a height of 10 cm.",
            ["the numbers 8 for this (the evidence gives them to another thing)"],
        ),
        (
            "The large box holds 20 kilograms or 2 litres, whichever is more.",
            "The large box holds 20 kilograms or 4 litres, whichever is more; "
            "the small box holds 10 kilograms or 2 litres.",
            ["the numbers 2, 20 for this (the evidence gives them to another thing)"],
        ),
        (
            "Basil, which cooks call the king of herbs, is listed in catalogue 1952.",
            "Kitchen gardens mix herbs and vegetables in raised beds; "
            "parsley is listed in catalogue 1952 and Basil, called the king of herbs by cooks, "
            "in catalogue 7932.",
            ["the numbers 1952 for this (the evidence gives them to another thing)"],
        ),
        # Words from the other side of a contrast.
        (
            "Under the loan scheme, the borrower's tools are covered by the insurance.",
            "A workshop lends tools either with the rental scheme, which covers the borrower's tools "
            "under its insurance, or with the loan scheme, which leaves them out of it.",
            ["loan of this (the evidence says it of the other side)"],
        ),
        (
            "Winter tyres are a required fitting for taxis.",
            "Winter tyres are a recommended fitting for taxis rather than a required one.",
            ["required of this (the evidence says it of the other side)"],
        ),
        # Words the evidence says only of another clause, where the clause that says the claim names
        # something else: the claim puts one clause's word in the other's place.
        (
            "By default the bakery bakes its loaves with the RyeMaster.",
            "By default the bakery bakes its loaves with the WheatGold; the RyeMaster is also stocked "
            "and used for rolls.",
            ["RyeMaster of this (the evidence says it of another thing it names)"],
        ),
        # Stated: the subject the first clause names for all, a list item, what the claim itself denies.
        (
            "Fiat and Volvo are recalled under notice 7110, so owners should book a check.",
            "Notice 7110 recalls Ford, Kia, Opel and Seat for brakes, and recalls Fiat, Volvo and the brake "
            "models for airbags, meaning owners should book a check.",
            [],
        ),
        (
            "For bread flour the bakery's guide calls for 600,000 grains per loaf.",
            "The bakery's guide gives minimum amounts: rye with 19 grams, 2 spoons and a pinch; and bread "
            "flour with 600,000 grains per loaf.",
            [],
        ),
        (
            "A warranty card is a promise by the maker, so it is not an insurance.",
            "A warranty card is a written promise issued by the maker; "
            "it contains a promise, not an insurance.",
            [],
        ),
        ("Parsley and chives grow in shade.", "Parsley and chives grow in shade and need water daily.", []),
    ],
)
def test_parts_given_to_another_thing_are_not_stated(claim: str, evidence: str, unbound: list[str]) -> None:
    assert unbound_parts(claim, evidence) == unbound


@pytest.mark.parametrize(
    ("claim", "evidence", "misplaced"),
    [
        # The piece that says what the claim says holds another number.
        (
            "The bakery started selling rye bread in 1998.",
            "The bakery opened in 1998 and started selling rye bread in 2004.",
            ["1998 for this (the evidence gives it 2004)"],
        ),
        # Ranks are numbers too.
        (
            "In the village show, the prize pumpkin from Ash Farm came second.",
            "In the village show the marrow came first, the prize pumpkin from Ash Farm came third "
            "and the leek grown by Tom came second.",
            ["rank 2 for this (the evidence gives it rank 3)"],
        ),
        # Each number where the evidence puts it; a thousands comma does not cut a number in two.
        (
            "The bakery opened in 1998 and has sold rye bread since 2004.",
            "The bakery opened in 1998 and started selling rye bread in 2004.",
            [],
        ),
        (
            "The tank holds 1,500 litres, which lasts ten days.",
            "The tank holds 1,500 litres, which lasts ten days, and the pump moves 20 litres a minute.",
            [],
        ),
    ],
)
def test_a_number_the_evidence_gives_to_another_thing_is_misplaced(
    claim: str, evidence: str, misplaced: list[str]
) -> None:
    assert misplaced_numbers(claim, evidence) == misplaced


def test_a_sentence_that_says_the_opposite_word_does_not_state_the_claim() -> None:
    # Words apart, so that no neighbouring words show one in the place of the other.
    parts = claim_parts(
        "Pruning in spring increases the harvest of apple trees.",
        "For apple trees, the harvest is what pruning in spring reduces.",
        "Orchards.",
    )
    assert parts.substituted == ("“increases” where the evidence says the opposite, “reduces”",)
    assert parts.missing(0.66) == ["“increases” where the evidence says the opposite, “reduces”"]


def test_the_share_of_a_claim_a_text_says_reads_a_hyphen_as_a_space() -> None:
    assert asserted_share("Tomatoes are frost tender plants.", "Tomatoes are frost-tender plants.") == 1.0
    assert asserted_share("Frost-tender tomatoes need a greenhouse.", "Tomatoes are frost tender.") == 0.75


@pytest.mark.parametrize(
    ("text", "ranks"),
    [
        ("The marrow came second and the leek 3rd.", {"#2", "#3"}),
        ("The second pump fills a cup in 1 second.", {"#2"}),
        # After a number or "per", "each", "a", "second" is a unit of time.
        ("The pump moves 2 litres per second, or 0.1 second a cup, a litre each second.", set()),
    ],
)
def test_second_is_a_rank_unless_it_is_a_unit_of_time(text: str, ranks: set[str]) -> None:
    assert _ranks(text) == ranks


def test_a_number_in_words_is_stated_whole() -> None:
    # "five hundred" is 500, stated by "500"; not "five" and "hundred", neither of which it states.
    parts = claim_parts(
        "A coach with five hundred seats or more needs two drivers.",
        "A coach with more than 500 seats needs two drivers.",
        "",
    )
    assert parts.details == ()
    other = claim_parts("A coach with six hundred seats needs a driver.", "A coach with 500 seats.", "")
    assert other.details == ("six hundred",)
