"""The local judge's word lists and the stance reading, on text that has nothing to do with the knowledge
packs (cars, kitchens, gardens): a cue belongs in config/grounding/judge_words.json because it is general
English, so it must work on any subject."""

from __future__ import annotations

import time

import pytest

from apps.grounding.contradictions import contradiction_signals, name_tokens, number_word_value, opposed_words
from apps.grounding.judge_words import judge_words, opposite_pairs, stance_cues, word_base
from apps.grounding.stance import ENDORSE, REJECT, stance_agreement, stance_clash, stances

LISTS = ("reject_before", "reject_after", "endorse_before", "endorse_after")


@pytest.mark.parametrize("name", LISTS)
def test_each_stance_list_is_clean_lowercase_phrases_without_repeats(name: str) -> None:
    phrases = judge_words()["stance"][name]
    assert phrases, f"{name} is empty"
    assert all(phrase == phrase.strip().lower() and phrase for phrase in phrases)
    assert len(phrases) == len(set(phrases)), f"{name} repeats a phrase"


def test_no_phrase_is_both_a_rejection_and_an_endorsement() -> None:
    stance = judge_words()["stance"]
    rejecting = {*stance["reject_before"], *stance["reject_after"]}
    endorsing = {*stance["endorse_before"], *stance["endorse_after"]}
    assert not rejecting & endorsing


def test_cues_match_whole_words_only() -> None:
    cues = stance_cues()
    assert cues.reject_after.search("Avoid the ice") is not None
    assert cues.reject_after.search("an unavoidable delay") is None  # "avoid" inside a word
    assert cues.endorse_after.search("reusable bags") is None  # "use" inside a word


@pytest.mark.parametrize(
    ("sentence", "term", "side"),
    [
        ("Unleaded petrol must not be used in a diesel engine.", "petrol", REJECT),
        ("E10 is recommended for most cars built after 2011.", "e10", ENDORSE),
        ("Gardeners should water tomatoes at the base of the plant.", "tomato", ENDORSE),
        ("Avoid R12 refrigerant in new cooling systems.", "r12", REJECT),
        ("Use R134a rather than R12 in the cooling loop.", "r134a", ENDORSE),
        ("Use R134a rather than R12 in the cooling loop.", "r12", REJECT),
        ("Leaded fuel is banned in every country.", "lead", REJECT),
        ("Cast-iron pans are fine to use on an induction hob.", "cast-iron", ENDORSE),
    ],
)
def test_a_sentence_takes_a_side_on_what_it_names(sentence: str, term: str, side: str) -> None:
    found = stances(sentence)
    assert term in found, f"no stance on {term!r} in {sentence!r}: {found}"
    assert found[term].side == side


def test_a_bound_on_a_quantity_is_not_a_rejection_and_numbers_take_no_side() -> None:
    found = stances("Refunds must be paid no later than 30 days after the return.")
    assert "30" not in found
    assert all(stance.side != REJECT for stance in found.values())


def test_words_no_cue_reaches_have_no_stance() -> None:
    assert stances("The ferry leaves the harbour at noon.") == {}


def test_endorsing_what_the_other_text_rejects_is_a_named_clash() -> None:
    clash = stance_clash(
        "Drivers should fill a diesel car with E10 petrol.",
        "E10 petrol must not be used in diesel engines; it damages the injectors.",
    )
    assert clash is not None and clash.term == "e10"
    signal = clash.as_signal()
    assert signal["type"] == "stance" and "e10" in signal["claim"] and "must not" in signal["evidence"]


def test_the_same_name_for_another_purpose_is_no_clash() -> None:
    # Nothing but the name is shared: E10 in a lawnmower is not E10 in a diesel car.
    assert stance_clash("E10 is fine for a lawnmower.", "E10 must not be used in diesel engines.") is None


def test_another_name_in_the_same_place_is_no_clash() -> None:
    assert (
        stance_clash(
            "Diesel cars should be filled with B7 fuel.", "E10 petrol must not be used in diesel cars."
        )
        is None
    )


def test_taking_the_same_side_is_agreement_whatever_else_the_evidence_recommends() -> None:
    claim = "E5 and E10 are deprecated for classic cars and should no longer be sold."
    evidence = (
        "The regulator deprecates E5 and E10 for classic cars: stations must not sell them, "
        "and V-Power should be sold instead."
    )
    assert stance_agreement(claim, evidence)
    assert stance_clash(claim, evidence) is None


def test_opposite_sides_are_not_agreement() -> None:
    assert not stance_agreement("E10 should be used in diesel cars.", "E10 must not be used in diesel cars.")


def test_a_cue_inside_a_longer_one_is_part_of_it() -> None:
    # "not" inside "MUST NOT" is not a second, forward-reaching negation of what follows.
    found = stances("Drivers MUST NOT idle the engine, and E5 petrol should be used instead.")
    assert found["e5"].side == ENDORSE
    assert found["driver"].side == REJECT


def test_the_opposites_are_clean_pairs_of_lowercase_words_without_repeats() -> None:
    pairs = judge_words()["opposites"]["pairs"]
    assert all(
        len(pair) == 2 and all(word == word.strip().lower() and word for word in pair) for pair in pairs
    )
    assert all(word_base(left) != word_base(right) for left, right in pairs)
    unordered = [frozenset(pair) for pair in pairs]
    assert len(unordered) == len(set(unordered))


def test_wordnets_antonyms_are_read_with_the_list_and_repeat_none_of_it() -> None:
    own = judge_words()["opposites"]["pairs"]
    pairs = opposite_pairs()
    assert len(pairs) > len(own) + 3000  # WordNet 3.0's direct antonyms (scripts/wordnet_antonyms.py)
    assert all(word == word.strip().lower() and word for pair in pairs for word in pair)
    assert all(word_base(left) != word_base(right) for left, right in pairs)
    unordered = [frozenset(pair) for pair in pairs]
    assert len(unordered) == len(set(unordered))
    # Words the judge reads with rules of their own are not also antonyms ("pays off" is not "on").
    function_words = set(judge_words()["function_words"]["words"])
    assert not [pair for pair in pairs[len(own) :] if set(pair) & function_words]


@pytest.mark.parametrize(
    ("claim", "evidence", "opposed"),
    [
        # In whatever form either word appears.
        ("Pruning in spring increases the harvest.", "Pruning in spring reduced the harvest.",
         [("increases", "reduced")]),
        ("The heater is enabled at night.", "Disable the heater at night.", [("enabled", "disable")]),
        # A hyphenated opposite is its own word: "non-blocking" is not "blocking".
        ("The tap is non-blocking.", "The tap is blocking.", [("non-blocking", "blocking")]),
        # WordNet's antonyms, not in the judge's own list.
        ("Frost strengthens the old hedge.", "Frost weakens the old hedge.", [("strengthens", "weakens")]),
        ("The loan is paid on time.", "The loan is paid off.", []),
        # A text that says both words takes no side.
        ("Pruning increases the harvest.", "Pruning increases the harvest and reduces the frost damage.", []),
    ],
)  # fmt: skip
def test_a_word_whose_opposite_the_evidence_says_is_opposed(
    claim: str, evidence: str, opposed: list[tuple[str, str]]
) -> None:
    assert opposed_words(claim, evidence) == opposed


def test_an_opposite_word_where_the_evidence_says_the_rest_of_the_clause_contradicts() -> None:
    signals = contradiction_signals(
        "Pruning apple trees in spring increases their harvest.",
        "Orchard guide. Pruning apple trees in spring reduces their harvest, so prune them in winter.",
    )
    assert signals == [{"type": "opposite", "claim": "increases", "evidence": "reduces"}]


@pytest.mark.parametrize(
    "evidence",
    [
        # The opposite word is about something else: the clause that says the claim agrees with it.
        "Pruning apple trees in spring increases their harvest. A late frost reduces it.",
        # A negated clause is the negation checks' to read ("does not increase" is not "reduces").
        "Pruning apple trees in spring does not reduce their harvest.",
    ],
)
def test_an_opposite_word_elsewhere_or_under_a_negation_is_no_opposite(evidence: str) -> None:
    signals = contradiction_signals("Pruning apple trees in spring increases their harvest.", evidence)
    assert [signal for signal in signals if signal["type"] == "opposite"] == []


@pytest.mark.parametrize(
    ("claim", "evidence", "signals"),
    [
        # A number in words is read whole: "sixty-four bits" is 64 bits, not 4.
        ("The lock needs a key of sixty-four bits.", "The lock needs a key of 64 bits.", []),
        ("Over five hundred residents were asked.", "Over 500 residents were asked.", []),
        ("It lasts two thousand and twelve hours.", "It lasts 2012 hours.", []),
        (
            "The lock needs a key of sixty-five bits.",
            "The lock needs a key of 64 bits.",
            [{"type": "quantity", "claim": "sixty-five bits", "evidence": "64 bits"}],
        ),
        # A count named before its number ("the stitch count to 400").
        (
            "The new pattern sets the default stitch count for each row to 300.",
            "The new pattern raised the default stitch count to 400.",
            [{"type": "quantity", "claim": "300 stitch", "evidence": "400 stitch"}],
        ),
        # A unit of two words hyphenated with its number.
        (
            "Tenants must be told within 90 days.",
            "Tenants must be told within the same 60-calendar-day limit.",
            [{"type": "quantity", "claim": "90 days", "evidence": "60-calendar-day"}],
        ),
    ],
)
def test_numbers_written_in_words_are_read_whole(claim: str, evidence: str, signals: list[dict]) -> None:
    assert contradiction_signals(claim, evidence) == signals


def test_a_number_in_words_has_its_value() -> None:
    assert [
        number_word_value(text) for text in ("four", "sixty-four", "five hundred", "one hundred and one")
    ] == [4, 64, 500, 101]
    assert number_word_value("and") is None
    assert number_word_value("dozen") is None


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # A negated passive negates its subject: the evidence does not state oven spray plainly.
        (
            "Clean enamel ovens with baking soda, and not with oven spray.",
            "Oven spray should not be used on enamel; baking soda cleans enamel ovens safely.",
        ),
        # "X is prohibited by Y" negates X, not Y.
        (
            "Parking on the pavement is prohibited by the city traffic code unless a sign allows it.",
            "The city traffic code prohibits parking on the pavement unless a sign allows it.",
        ),
        # What the evidence does "without", it does not state.
        (
            "Bread dough rises poorly when the yeast is not activated first.",
            "Bread dough made without activating the yeast first rises poorly.",
        ),
        # A negated quantity bounds what is said ("nothing more"), it does not deny it.
        (
            "After the final coat of stain, the garden fence needs nothing more to protect it.",
            "After the final coat of stain the garden fence is protected; more coats only darken it.",
        ),
        # The evidence negates what the claim negates in another form of the word ("require", "required").
        (
            "The council does not require a parking permit for visitors who stay under an hour.",
            "The council requires visitors to buy a parking permit for the street; this is not required "
            "if, for example, they stay under an hour.",
        ),
        # "no need to" says what "not required" says.
        (
            "There is no need to buy a parking permit for visitors who stay under an hour.",
            "The council requires visitors to buy a parking permit for the street; this is not required "
            "if, for example, they stay under an hour.",
        ),
        # "exempt" says the rule does not apply.
        (
            "Every visitor must sign in at reception, though delivery drivers are exempt.",
            "Every visitor must sign in at reception; the rule does not apply to delivery drivers.",
        ),
    ],
)
def test_negations_in_other_forms_are_no_polarity_clash(claim: str, evidence: str) -> None:
    assert [signal for signal in contradiction_signals(claim, evidence) if signal["type"] == "negation"] == []


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # A prohibition drawn from a warning: the evidence describes the danger, the claim advises against it.
        (
            "Never leave a chip pan on a hot hob unattended, because the fire service warns the oil can "
            "ignite.",
            "The fire service warns that leaving a chip pan on a hot hob unattended can set the oil alight.",
        ),
        (
            "Do not feed bread to ducks in the park, since the warden says it makes them ill.",
            "The park warden says that feeding bread to ducks makes them ill.",
        ),
    ],
)
def test_a_prohibition_of_what_the_evidence_describes_is_no_polarity_clash(claim: str, evidence: str) -> None:
    assert [signal for signal in contradiction_signals(claim, evidence) if signal["type"] == "negation"] == []


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # What the evidence recommends, the claim may not prohibit.
        (
            "Never soak cast-iron pans in water before cleaning them.",
            "Soak cast-iron pans in water before cleaning them, the manufacturer recommends.",
        ),
        # A plain "never" states, it does not advise.
        (
            "The ferry never stops at the north pier on Sundays.",
            "The ferry stops at the north pier on Sundays and holidays.",
        ),
    ],
)
def test_a_prohibition_of_what_the_evidence_recommends_still_clashes(claim: str, evidence: str) -> None:
    assert contradiction_signals(claim, evidence) != []


def test_a_negated_claim_against_plain_evidence_is_still_a_polarity_clash() -> None:
    signals = contradiction_signals(
        "The induction hob does not heat cast-iron pans evenly.",
        "The induction hob heats cast-iron pans evenly and quickly.",
    )
    assert [signal["type"] for signal in signals] == ["negation"]


@pytest.mark.parametrize(
    ("claim", "evidence", "signals"),
    [
        # A change told the other way round, with a word or two of what changed between its ends.
        (
            "The team rose from seventh place to second in the league.",
            "The team slid from second place to seventh in the league.",
            [{"type": "opposite", "claim": "from seventh to second", "evidence": "from second to seventh"}],
        ),
        (
            "The bakery moved from third place in 2019 to first in the town ranking.",
            "The bakery fell from first place in 2019 to third in the town ranking.",
            [{"type": "opposite", "claim": "from third to first", "evidence": "from first to third"}],
        ),
        # The same change told the same way is no clash.
        (
            "The team climbed from seventh place to second in the league.",
            "The team rose from seventh place to second in the league.",
            [],
        ),
    ],
)
def test_a_change_told_the_other_way_round_is_opposed(claim: str, evidence: str, signals: list[dict]) -> None:
    assert contradiction_signals(claim, evidence) == signals


@pytest.mark.parametrize(
    ("claim", "signals"),
    [
        # An evidence that writes a requirement level in capitals (RFC 2119) means exactly that level.
        ("Every bicycle MUST carry a bell.", [{"type": "modal", "claim": "MUST", "evidence": "SHOULD"}]),
        ("Every bicycle must carry a bell.", [{"type": "modal", "claim": "must", "evidence": "SHOULD"}]),
        ("Every bicycle should carry a bell.", []),
    ],
)
def test_another_requirement_level_than_the_evidences_capitals_is_a_modal_clash(
    claim: str, signals: list[dict]
) -> None:
    assert contradiction_signals(claim, "Every bicycle SHOULD carry a bell.") == signals


def test_a_hyphenated_name_with_a_digit_is_one_name() -> None:
    """ "R-12" is a name, not the number 12: a sentence endorsing it clashes with one rejecting it."""
    assert name_tokens("Fridges once used R-12, UTF-8 and select_related, not 2.5 of them.") == {
        "r-12",
        "utf-8",
        "select_related",
        "2.5",
    }
    signals = contradiction_signals(
        "Cooling a new fridge with R-12 refrigerant is acceptable.",
        "Refrigerants such as R-12 or R-22 must not be used in new fridges.",
    )
    assert [signal["type"] for signal in signals] == ["stance"]


def test_a_requirement_level_is_compared_with_the_clause_that_says_the_same_thing() -> None:
    signals = contradiction_signals(
        "Under the Cycling Code 2024, every rental bicycle must include a bell.",
        "Rental bicycles are defined in the Cycling Code 2024 and cover city and mountain bicycles; a "
        "rental bicycle MAY include a bell.",
    )
    assert signals == [{"type": "modal", "claim": "must", "evidence": "MAY"}]


def test_reading_names_is_linear_in_a_long_hyphenated_run() -> None:
    """40,000 characters of "a-a-a-…" are read in milliseconds; the backtracking pattern this replaced
    took a third of a second for 4,000 and grew with the square of the length."""
    started = time.perf_counter()
    assert name_tokens("a-" * 20_000 + "SHA-1") == {"a-" * 20_000 + "sha-1"}
    assert time.perf_counter() - started < 1.0
