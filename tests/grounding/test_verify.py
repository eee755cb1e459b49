"""Verifying claims: contradiction signals, verdicts against a small pack, the API, the CLI and
the verification log."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from apps.grounding import services
from apps.grounding.contradictions import contradiction_signals, negated, unstated_details
from apps.grounding.models import GroundingMessage, GroundingSettings, ReviewStatus, Verification
from apps.knowledge import services as knowledge_services
from apps.knowledge.services import ParsedPack, _validated

pytestmark = pytest.mark.django_db

GDPR_33 = (
    "The controller must notify the supervisory authority of a personal data breach without undue delay "
    "and, where feasible, not later than 72 hours after becoming aware of it."
)
PACK = {
    "security": [
        {"id": "SEC-001", "topic": "Password storage", "source": "OWASP Password Storage Cheat Sheet",
         "content": "Passwords must be stored with a slow, salted hash such as Argon2id, scrypt or bcrypt. "
                    "Fast hashes such as MD5 or SHA-1 must never be used for passwords."},
        {"id": "SEC-002", "topic": "TLS versions", "source": "RFC 8996",
         "content": "TLS 1.0 and TLS 1.1 are deprecated by RFC 8996 and must not be used."},
    ],
    "compliance": [
        {"id": "COMP-001", "topic": "GDPR breach notification", "source": "GDPR Art. 33", "content": GDPR_33},
    ],
    "performance": [
        {"id": "PERF-001", "topic": "Binary search", "source": "Knuth",
         "content": "Binary search on a sorted array takes O(log n) comparisons in the worst case."},
    ],
}  # fmt: skip


@pytest.fixture
def pack(settings) -> None:
    for domain, entries in PACK.items():
        knowledge_services.entries_import(
            domain_name=domain,
            pack=_validated([(e, "$", {}) for e in entries], {}),
            source_name=domain,
            location="test",
        )
    settings.CORTEX_GROUNDING_AGENTS = Path(settings.BASE_DIR) / "config" / "grounding" / "agents.json"
    services.grounding_agents_load_default()


@pytest.fixture
def earned(settings, tmp_path: Path) -> None:
    """A calibration table in which every decisive basis was right 9 times in 9: the judge's own verdicts
    stand, so a test of what happens after a verdict (correction, injection, output) is not about the
    shipped table (``test_judges.py`` tests that)."""
    from apps.grounding.calibration import table_reload

    decisive = ("contradicted:exact", "contradicted:prohibited", "contradicted:wording", "supported:stated")
    bases = {
        basis: {
            verdict: 9 if basis.startswith(verdict) else 0
            for verdict in ("supported", "contradicted", "unverified")
        }
        for basis in decisive
    }
    settings.GROUNDING_CALIBRATION = tmp_path / "calibration.json"
    settings.GROUNDING_CALIBRATION.write_text(json.dumps({"bases": bases}), encoding="utf-8")
    table_reload()
    yield
    table_reload()


@pytest.mark.parametrize(
    ("claim", "evidence", "kind"),
    [
        ("Breaches must be reported within 48 hours.", GDPR_33, "quantity"),
        ("Passwords may be stored with MD5.", "Passwords must never be stored with MD5.", "modal"),
        (
            "bcrypt hashes every byte of a password.",
            "bcrypt does not hash every byte of a password.",
            "negation",
        ),
        (
            "RFC 8996 still allows servers to negotiate TLS 1.1.",
            "Under RFC 8996, implementations MUST NOT negotiate TLS 1.0 or TLS 1.1.",
            "modal",
        ),
        (
            "HTTP/2 is currently specified by RFC 7540.",
            "HTTP/2 is specified in RFC 9113, which obsoletes RFC 7540.",
            "superseded",
        ),
        (
            "A SOC 2 report is a certification issued by the AICPA.",
            "A SOC 2 report is an attestation report; it contains an opinion, not a certification.",
            "negation",
        ),
        # What the claim negates, the evidence states (its own "not" is about something else).
        (
            "JSON exchanged between open systems may use any encoding, since UTF-8 is not required.",
            "RFC 8259 requires JSON text exchanged between systems that are not part of a closed ecosystem "
            "to be encoded in UTF-8.",
            "negation",
        ),
        ("POST is idempotent.", "POST is not idempotent.", "opposite"),
        ("Binary search is O(n).", "Binary search is O(log n).", "complexity"),
        ("TLS 1.3 is defined in RFC 5246.", "TLS 1.3 is defined in RFC 8446.", "identifier"),
        ("Controllers may notify the authority.", "Controllers must notify the authority.", "modal"),
        (
            "Only 10 types of identifiers are removed.",
            "Safe Harbor removes 18 specified types of identifiers.",
            "quantity",
        ),
        (
            "Quicksort is O(n log n) in the worst case.",
            "Quicksort is O(n log n) on average but O(n^2) in the worst case.",
            "complexity",
        ),
        # A change told the other way round.
        (
            "The bakery changed its oven setting from gas to fan.",
            "The bakery changed its oven from fan to gas.",
            "opposite",
        ),
        # A count in words is a count.
        (
            "A raised bed takes four seedlings in spring.",
            "A raised bed takes 6 seedlings in spring.",
            "quantity",
        ),
        # A "not" with a negative verb affirms: "does not stop" against "stops".
        (
            "The garage door sensor does not stop the door from closing on an obstacle.",
            "The garage door sensor stops the door from closing on an obstacle.",
            "negation",
        ),
    ],
)
def test_explicit_disagreements_are_signalled(claim: str, evidence: str, kind: str) -> None:
    assert [signal["type"] for signal in contradiction_signals(claim, evidence)] == [kind]


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("Breaches must be reported to the supervisory authority within three days.", GDPR_33),
        ("Controllers have 72 hours to notify the authority of a breach.", GDPR_33),
        ("Never store passwords with MD5.", "Passwords must never be stored with MD5."),
        (
            "Quicksort degrades to O(n^2) in its worst case, even though it averages O(n log n).",
            "Quicksort is O(n log n) on average but O(n^2) in the worst case.",
        ),
        ("Access control is first.", "Access control is first. Users cannot act outside their permissions."),
        # The evidence negates the same thing in another clause.
        (
            "Servers must not negotiate TLS 1.0 anymore.",
            "RFC 8996 deprecates TLS 1.0 and TLS 1.1: implementations MUST NOT negotiate these versions.",
        ),
        ("Developers may use Argon2id for passwords.", "MD5 must not be used for passwords."),
        # A contrast denies its second term, and "rather than" does too.
        (
            "HIPAA makes encryption of ePHI an addressable specification, not a required one.",
            "Encryption of ePHI is an addressable implementation specification rather than a required one.",
        ),
        ("RFC 9113 obsoletes RFC 7540.", "HTTP/2 is specified in RFC 9113, which obsoletes RFC 7540."),
        # A negative verb says what a "not" says ("bypasses" / "does not use", "outside" / "not part of").
        ("The rinse cycle bypasses the heater entirely.", "The rinse cycle does not use the heater at all."),
        (
            "Parcels sent outside the delivery zone must carry a customs form.",
            "Parcels sent to addresses that are not part of the delivery zone must carry a customs form.",
        ),
        # "nothing" negates; a negative word written as a name is a name ("Not Modified", "403 Forbidden").
        (
            "If nothing changed, the bakery reuses yesterday's list.",
            "If the stock has not changed, the bakery reuses yesterday's list (a Not Modified slip).",
        ),
        (
            "A 403 slip means the clerk understood the order and refuses it.",
            "A 403 Forbidden slip means the clerk understood the order but refuses to fill it.",
        ),
        # A number with thousands groups is one number ("1,209,600 seconds" was read as "209,600 seconds").
        (
            "The session cookie lasts two weeks, which is 1,209,600 seconds.",
            "The session cookie lasts 1209600 seconds, which is two weeks.",
        ),
        # "fails to" says what "does not" says.
        (
            "The gate fails to check that a parcel was really sent by its owner.",
            "The gate does not check that a parcel was really sent by its owner.",
        ),
        # The evidence negates what the claim negates, though the claim's first negated word is stated
        # elsewhere ("covered members").
        (
            "The discount does not cover deliveries made to a school for lunches.",
            "The discount applies to covered members' orders; it does not apply to deliveries made to a "
            "school for lunches.",
        ),
        # A count's noun may be the word after the next ("100 requests per second" counts requests).
        (
            "A bakery serving 100 customers an hour, each staying 0.2 hours, has about twenty customers in.",
            "For example 100 customers per hour staying 0.2 hours each means 20 customers in the shop.",
        ),
    ],
)
def test_agreement_in_other_words_is_not_a_contradiction(claim: str, evidence: str) -> None:
    assert contradiction_signals(claim, evidence) == []


DJANGO_HASHERS = (
    "By default Django stores passwords with PBKDF2PasswordHasher (PBKDF2 with a SHA-256 hash); "
    "Argon2PasswordHasher is also supported and requires the argon2-cffi package."
)


def test_two_names_described_in_each_others_words_are_a_swap() -> None:
    swapped = contradiction_signals(
        "Django hashes passwords with Argon2PasswordHasher by default, and PBKDF2 requires an extra package.",
        DJANGO_HASHERS,
    )
    assert [signal["type"] for signal in swapped] == ["swapped"]
    assert "PBKDF2PasswordHasher" in swapped[0]["evidence"]
    right = "Django hashes with PBKDF2PasswordHasher by default; Argon2PasswordHasher requires a package."
    assert contradiction_signals(right, DJANGO_HASHERS) == []


def test_a_bare_version_belongs_to_the_product_the_claim_names() -> None:
    evidence = "The match statement for structural pattern matching was added in Python 3.10 (PEP 634)."
    wrong = contradiction_signals("Python first shipped the match statement in version 3.8.", evidence)
    assert wrong == [{"type": "identifier", "claim": "python 3.8", "evidence": "python 3.10"}]
    assert contradiction_signals("Python shipped the match statement in version 3.10.", evidence) == []


@pytest.mark.parametrize(
    ("claim", "evidence", "unstated"),
    [
        (
            "RFC 9562 also defines UUID version 8.",
            "RFC 9562 defines UUID versions: version 4 and version 7.",
            ["8"],
        ),
        (
            "PostgreSQL BRIN indexes are small.",
            "CREATE INDEX in PostgreSQL builds a B-tree index by default.",
            ["BRIN"],
        ),
        # The same number in words, the same quantity in other units, part of a longer name: all stated.
        ("Records are kept for 6 years.", "Records are kept for six years.", []),
        ("Notify within 3 days.", "Notify within 72 hours.", []),
        ("PBKDF2 with HMAC-SHA256 needs 600,000 iterations.", "PBKDF2-HMAC-SHA256: 600,000 iterations.", []),
    ],
)
def test_numbers_and_names_the_evidence_does_not_state(
    claim: str, evidence: str, unstated: list[str]
) -> None:
    assert unstated_details(claim, evidence) == unstated


def test_a_close_claim_that_adds_an_unstated_detail_is_unverified(pack: None) -> None:
    agents = services._agents()
    stated = services.claim_judge(
        claim="RFC 8996 deprecates TLS 1.0 and TLS 1.1.", domain=None, agents=agents
    )
    # Stated part by part (whether the shipped calibration lets it be decisive is test_judges.py's matter).
    assert stated.basis == "supported:stated" and stated.leaning in ("none", "supported")
    outcome = services.claim_judge(
        claim="RFC 8996 deprecates TLS 1.0 and TLS 1.1 along with SSL 3.0.", domain=None, agents=agents
    )
    assert outcome.verdict == "unverified"
    assert outcome.signals == [{"type": "unstated", "claim": "SSL, 3.0", "evidence": "(not stated)"}]


def test_a_wrong_claim_is_contradicted_with_a_correction(pack: None, earned: None) -> None:
    verification = services.claim_verify(claim="Passwords should be hashed with MD5 before they are stored.")
    assert verification.verdict == "contradicted" and not verification.verified
    assert verification.domain.name == "security"  # routed by the agent's keywords ("password", "hash")
    assert verification.sources[0]["entry_id"] == "SEC-001"
    assert "Argon2id" in verification.correction
    assert verification.signals and verification.latency_ms > 0


def test_a_changed_number_is_contradicted(pack: None) -> None:
    verification = services.claim_verify(
        claim="Under GDPR a personal data breach must be notified within 24 hours."
    )
    assert verification.verdict == "contradicted"
    assert verification.signals[0]["type"] == "quantity" and verification.sources[0]["entry_id"] == "COMP-001"


def test_a_paraphrase_is_supported(pack: None, earned: None) -> None:
    verification = services.claim_verify(
        claim="According to GDPR, the controller has to notify the supervisory authority of a personal data "
        "breach within 72 hours of becoming aware of it."
    )
    assert verification.verdict == "supported" and verification.verified
    result = services.verification_result(verification=verification)
    assert set(result) >= {
        "claim",
        "verified",
        "confidence",
        "sources",
        "related_entries",
        "verdict",
        "domain",
    }
    assert "correction" not in result


def test_a_claim_the_knowledge_does_not_cover_is_unverified(pack: None) -> None:
    verification = services.claim_verify(claim="Kubernetes pods must declare CPU limits in every namespace.")
    assert verification.verdict == "unverified" and verification.correction == ""


def test_unsure_verdicts_wait_for_review_and_sure_ones_do_not(pack: None) -> None:
    config = GroundingSettings.current()
    config.confidence_threshold = 1.0
    config.save()
    assert services.claim_verify(claim="Binary search takes O(n) time.").review_status == ReviewStatus.PENDING
    config.confidence_threshold = 0.0
    config.save()
    assert (
        services.claim_verify(claim="Binary search takes O(n) time.").review_status == ReviewStatus.NOT_NEEDED
    )


def test_the_verify_api_answers_the_seed_shape(pack: None, verify_client: Client) -> None:
    response = verify_client.post(
        "/v1/knowledge/verify",
        {"claim": "TLS 1.1 is fine to use for new services."},
        content_type="application/json",
    )
    assert response.status_code == 200
    body = response.json()
    assert body["verdict"] in ("contradicted", "unverified") and body["domain"] == "security"
    assert body["sources"][0]["entry_id"] == "SEC-002"
    assert Verification.objects.filter(pk=body["verificationId"]).exists()


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        ({"claim": ""}, 422, "claim is empty"),
        ({"claim": "   "}, 422, "claim is empty"),
        ({"claim": "x" * 3000}, 422, "claim"),
        ({"claim": "Passwords must be hashed.", "domain": "astrology"}, 404, "Unknown knowledge domain"),
        ({"claim": "Passwords must be hashed.", "extra": 1}, 422, "extra"),
    ],
)
def test_bad_verify_input_is_a_4xx_that_says_what_to_fix(
    pack: None, verify_client: Client, body: dict, status: int, text: str
) -> None:
    response = verify_client.post("/v1/knowledge/verify", body, content_type="application/json")
    assert response.status_code == status
    assert text in json.dumps(response.json())
    assert Verification.objects.count() == 0


def test_grounding_a_message_checks_its_claims_and_injects_knowledge(
    pack: None, earned: None, verify_client: Client
) -> None:
    message = (
        "Hi! Here is the plan. Passwords should be hashed with MD5 for speed. "
        # States every part of COMP-001's sentence (a looser paraphrase would only lean to supported).
        "According to GDPR, the controller must notify the supervisory authority of a personal data breach "
        "within 72 hours of becoming aware of it. "
        "Thanks."
    )
    response = verify_client.post(
        "/v1/grounding/ground", {"message": message, "messageId": "msg-1"}, content_type="application/json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["type"] == "grounding" and body["original_message_id"] == "msg-1"
    verdicts = [v["verdict"] for v in body["verifications"]]
    assert verdicts == ["contradicted", "supported"]
    assert {k["topic"] for k in body["injected_knowledge"]} == {
        "Password storage",
        "GDPR breach notification",
    }
    assert "2 claim(s) checked" in body["summary"] and "Corrections:" in body["summary"]
    assert GroundingMessage.objects.get(pk=body["id"]).verifications.count() == 2


def test_on_detection_grounds_only_messages_with_a_trigger(pack: None) -> None:
    quiet = services.message_ground(message="Passwords are hashed with MD5 here.", mode="on_detection")
    assert quiet.verifications.count() == 0 and quiet.summary == "No verifiable claims found."
    loud = services.message_ground(message="Passwords must be hashed with MD5 here.", mode="on_detection")
    assert loud.verifications.count() == 1


def test_bad_ground_input(verify_client: Client) -> None:
    big = verify_client.post(
        "/v1/grounding/ground", {"message": "a" * 100_000}, content_type="application/json"
    )
    assert big.status_code == 422 and "message" in json.dumps(big.json())
    empty = verify_client.post("/v1/grounding/ground", {"message": " "}, content_type="application/json")
    assert empty.status_code == 422 and "empty" in empty.json()["error"]["message"]
    mode = verify_client.post(
        "/v1/grounding/ground", {"message": "hello there", "mode": "always"}, content_type="application/json"
    )
    assert mode.status_code == 422


def test_cli_verify_prints_the_verdict_or_one_json_object(pack: None, earned: None) -> None:
    out = StringIO()
    call_command("grounding", "verify", "Passwords should be stored using MD5.", stdout=out)
    assert out.getvalue().startswith("verdict: contradicted") and "correction:" in out.getvalue()
    out = StringIO()
    call_command(
        "grounding", "verify", "Binary search is O(log n).", "--domain", "performance", "--json", stdout=out
    )
    result = json.loads(out.getvalue())
    assert result["claim"] == "Binary search is O(log n)." and result["domain"] == "performance"
    with pytest.raises(CommandError, match="claim is empty"):
        call_command("grounding", "verify", "  ")


def test_the_verification_log_exports_as_json_lines(pack: None, tmp_path: Path) -> None:
    services.claim_verify(claim="Passwords should be stored using MD5.")
    services.claim_verify(claim="Binary search is O(log n).")
    target = tmp_path / "log.jsonl"
    out = StringIO()
    call_command("grounding", "export-log", "--output", str(target), stdout=out)
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert [line["claim"] for line in lines] == [
        "Passwords should be stored using MD5.",
        "Binary search is O(log n).",
    ]
    assert {"verdict", "confidence", "sources", "createdAt", "reviewStatus", "latencyMs"} <= set(lines[0])
    assert "2 verifications written" in out.getvalue()


def test_the_parsed_pack_helper_is_the_importers() -> None:
    assert isinstance(_validated([(PACK["performance"][0], "$", {})], {}), ParsedPack)


def test_another_identifier_is_a_contradiction_only_for_what_the_evidence_says(pack: None) -> None:
    """Another RFC for what the entry says of RFC 8996 contradicts it; a claim of what another RFC says
    about the same versions is about something the entry does not cover (issue #24: "a different
    number/identifier for the same thing")."""
    agents = services._agents()
    same_thing = services.claim_judge_local(
        claim="TLS 1.0 and TLS 1.1 are deprecated by RFC 7525 and must not be used.",
        domain=None,
        agents=agents,
    )
    assert same_thing.signals[0] == {"type": "identifier", "claim": "rfc 7525", "evidence": "rfc 8996"}
    assert same_thing.basis == "contradicted:exact"
    other_thing = services.claim_judge_local(
        claim="RFC 7525 describes how TLS 1.0 and TLS 1.1 deployments choose their cipher suites.",
        domain=None,
        agents=agents,
    )
    # It does present deprecated versions as current: that is the disagreement, not the RFC's number.
    assert [signal["type"] for signal in other_thing.signals] == ["superseded"]


def test_an_alternative_denied_at_the_end_does_not_negate_the_statement() -> None:
    assert not negated("Slice the bread with the serrated knife, and not with the paring knife.")
    assert not negated("Send the form by post, not by email.")
    assert negated("The serrated knife does not slice bread.")
    assert negated("The knife is sharp and not safe.")  # an adjective after "not" is negated


def test_a_claim_one_clause_of_a_long_sentence_says_is_close_to_it(settings) -> None:
    """A sentence that joins several rules is far from a claim about one of them as a whole (0.56 here);
    its clause that says the claim is close (0.94), so a claim that adds a number the entry does not give
    is told what is not stated, instead of "neither says the same nor disagrees"."""
    knowledge_services.entries_import(
        domain_name="gardening",
        pack=_validated(
            [
                (
                    {"id": "GARD-001", "topic": "Watering guidance", "source": "Garden handbook",
                     "content": "Raised beds must be at least 30 centimetres deep, bark mulch should be "
                                "at most 5 centimetres thick, gravel paths should not be narrower than 60 "
                                "centimetres, compost heaps need a shady corner, fruit cages should use "
                                "netting with a 2 centimetre mesh, and gardeners should not wet tomato "
                                "foliage after dusk unless the night stays warm."},
                    "$",
                    {},
                )
            ],
            {},
        ),
        source_name="gardening",
        location="test",
    )  # fmt: skip
    outcome = services.claim_judge_local(
        claim="Do not wet tomato foliage after dusk unless the night stays above 15 degrees.",
        domain="gardening",
        agents=services._agents(),
    )
    assert outcome.basis == "unverified:unstated", outcome.rests_on
    assert outcome.rests_on.startswith("The closest evidence (GARD-001) does not state 15"), outcome.rests_on
    # The evidence shown is still the whole sentence, which the claim is read against part by part.
    assert outcome.evidence[0].sentence.startswith("Raised beds must be at least 30 centimetres deep")


def test_a_negation_in_another_sentence_of_the_entry_is_no_contradiction() -> None:
    """The "not" of an entry's other sentence is about something else: a negation clashes only where the
    claim is said, in the sentence closest to it (a disagreeing number may sit in the next sentence)."""
    entry = (
        "K08:2021 Pot and Plate Glaze Failures is a new category in the Kitchen Top 10 2021 about pots and "
        "plates that do not resist glaze cracks, such as bowls, jugs and plates fired without checking the "
        "glaze. Cracked Pots from 2017 is now part of it."
    )
    claim = (
        "Cracked Pots, a category from the 2017 list, was folded into K08:2021, the new category about "
        "failures of pot and plate glaze."
    )
    # Read against the whole entry, the first sentence's "do not resist" is the other polarity.
    assert [signal["type"] for signal in contradiction_signals(claim, entry)] == ["negation"]
    knowledge_services.entries_import(
        domain_name="crockery",
        pack=_validated(
            [({"id": "CROC-001", "topic": "Crockery categories", "source": "Kitchen handbook",
               "content": entry}, "$", {})],
            {},
        ),
        source_name="crockery",
        location="test",
    )  # fmt: skip
    outcome = services.claim_judge_local(claim=claim, domain="crockery", agents=services._agents())
    assert outcome.evidence[0].sentence == "Cracked Pots from 2017 is now part of it."
    assert not outcome.basis.startswith("contradicted"), outcome.rests_on
    assert [signal for signal in outcome.signals if signal["type"] == "negation"] == []


def test_a_wrong_identifier_in_the_predicate_contradicts_a_close_entry_that_says_half_the_claim() -> None:
    """An identifier the claim gives its subject ("… is set out in Section 17") is what it says of that
    subject: against a close entry that gives another, in other words for the rest, it is a wrong
    identifier. One the claim opens with is its subject: an entry on another section is about
    something else unless it says what the claim asserts."""
    knowledge_services.entries_import(
        domain_name="gardening",
        pack=_validated(
            [({"id": "GARD-002", "topic": "Blight warnings", "source": "Garden handbook",
               "content": "The tomato blight warning scheme is described in Section 42 of the garden "
                          "handbook, which recommends copper sprays against early blight."}, "$", {})],
            {},
        ),
        source_name="gardening",
        location="test",
    )  # fmt: skip
    agents = services._agents()
    predicate = services.claim_judge_local(
        claim="The blight warning scheme for tomatoes is laid down in Section 17 of the garden handbook, "
        "which names copper sprays as the advised remedy.",
        domain="gardening",
        agents=agents,
    )
    assert predicate.basis == "contradicted:exact", predicate.rests_on
    assert predicate.signals[0] == {"type": "identifier", "claim": "section 17", "evidence": "section 42"}
    subject = services.claim_judge_local(
        claim="Section 17 of the garden handbook sets out the tomato blight warning scheme and advises "
        "burning the infected plants.",
        domain="gardening",
        agents=agents,
    )
    assert subject.verdict == "unverified", subject.rests_on
