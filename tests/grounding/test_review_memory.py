"""Review memory (issue 24, item 3) and the review queue (item 4): a reviewed verdict is given again to
the same claim (same text, or a paraphrase with the same numbers, names, polarity and modality) by judge
``review``; changing or revoking the review changes later answers; reviews through
``POST /api/verifications/{id}/review/``; what waits in the queue, in which order and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from apps.grounding import review_memory, services
from apps.grounding.calibration import table_reload
from apps.grounding.models import GroundingSettings, ReviewMemory, ReviewStatus, Verdict, Verification
from apps.knowledge import services as knowledge_services
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parent.parent / "data"
MD5 = "Passwords should be hashed with MD5."


@pytest.fixture
def shipped_packs() -> None:
    knowledge_services.knowledge_load_default_if_empty()
    services.grounding_agents_load_default()
    table_reload()


@pytest.fixture
def rita() -> User:
    return make_user("rita", "grounding.review_verification")


def _pairs() -> list[dict]:
    return [
        json.loads(line) for line in (DATA / "review_memory_pairs.jsonl").read_text().splitlines() if line
    ]


# --- The threshold, measured ------------------------------------------------------------------------


def test_the_threshold_separates_the_measured_pairs() -> None:
    """``SAME_CLAIM_SIMILARITY`` lies between the paraphrases and the near-misses that the features do
    not already tell apart; together they match every paraphrase and no near-miss."""
    rows = []
    for pair in _pairs():
        similarity = review_memory.claim_similarity(pair["a"], pair["b"])
        same_features = review_memory.same_features(
            review_memory.claim_features(pair["a"]), pair["a"],
            review_memory.claim_features(pair["b"]), review_memory.normalized(pair["b"]),
        )  # fmt: skip
        rows.append((pair, similarity, same_features))
    paraphrases = [row for row in rows if row[0]["same"]]
    near_misses = [row for row in rows if not row[0]["same"]]
    assert (len(paraphrases), len(near_misses)) == (20, 20)
    lowest_paraphrase = min(similarity for _, similarity, _ in paraphrases)
    closest_left_to_similarity = max(similarity for _, similarity, same in near_misses if same)
    assert closest_left_to_similarity < review_memory.SAME_CLAIM_SIMILARITY <= lowest_paraphrase
    assert all(same for _, _, same in paraphrases)
    # Similarity alone would match these near-misses (a different number, a negation, no-store for
    # no-cache): the features turn them away.
    assert sum(similarity >= review_memory.SAME_CLAIM_SIMILARITY for _, similarity, _ in near_misses) == 12
    matched = [row for row in near_misses if row[2] and row[1] >= review_memory.SAME_CLAIM_SIMILARITY]
    assert matched == []


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("Hash passwords with MD5.", "hash passwords with md5", True),
        ("Django's select_related uses a JOIN.", "In Django, select_related uses a JOIN.", True),
        ("Keep records for 6 years.", "Keep records for six years.", True),
        ("Keep records for 6 years.", "Keep records for 10 years.", False),
        # Numbers in words are read whole: "five hundred" is 500, not 5 and 100.
        ("The hall seats 500 guests.", "The hall seats five hundred guests.", True),
        ("The hall seats 72 guests.", "The hall seats seventy-two guests.", True),
        ("The hall seats 500 guests.", "The hall seats five guests.", False),
        ("Water the lawn twice a week.", "Water the lawn 2 times a week.", True),
        ("Passwords should be hashed with MD5.", "Passwords should not be hashed with MD5.", False),
        ("Passwords must be hashed with bcrypt.", "Passwords may be hashed with bcrypt.", False),
        ("Use the no-cache directive.", "Use the no-store directive.", False),
        ("Call datetime.utcnow() for UTC.", "Call datetime.now() for UTC.", False),
    ],
)
def test_features_that_must_agree(first: str, second: str, same: bool) -> None:
    features = review_memory.claim_features(first)
    other = review_memory.claim_features(second)
    assert review_memory.same_features(features, first, other, review_memory.normalized(second)) is same


# --- Memory: hits, misses, changes -------------------------------------------------------------------


def test_a_reviewed_verdict_is_given_again_to_the_same_claim(shipped_packs: None, rita: User) -> None:
    first = services.claim_verify(claim=MD5)
    assert first.judge == "local" and first.verdict != Verdict.SUPPORTED
    services.verification_review(verification=first, reviewer=rita, action="reject", verdict="supported",
                                 note="for the test")  # fmt: skip
    memory = ReviewMemory.objects.get()
    assert (memory.verification_id, memory.verdict, memory.decision, memory.reviewer_name) == (
        first.pk,
        "supported",
        "reject",
        "rita",
    )

    again = services.claim_verify(claim="  passwords SHOULD be hashed with md5 ")
    assert (again.judge, again.basis, again.verdict, again.confidence) == (
        "review",
        "review:exact",
        "supported",
        0.99,
    )
    assert again.review_status == ReviewStatus.NOT_NEEDED and again.queue_reason == ""
    assert again.rests_on == (
        f"Review of verification #{first.pk} (reject) by rita on {memory.reviewed_at:%Y-%m-%d}: supported, "
        f"for the same claim: “{MD5}” Note: for the test"
    )
    assert again.judge_details["review"]["verificationId"] == first.pk
    assert again.judge_details["review"]["reviewer"] == "rita"

    paraphrase = services.claim_verify(claim="Passwords should be stored hashed with MD5.")
    assert (paraphrase.judge, paraphrase.basis, paraphrase.verdict) == (
        "review",
        "review:paraphrase",
        "supported",
    )
    assert paraphrase.confidence == 0.95
    assert paraphrase.judge_details["review"]["similarity"] >= review_memory.SAME_CLAIM_SIMILARITY

    # Not the same claim: negated, another number, another modality.
    for other in (
        "Passwords should not be hashed with MD5.",
        "Passwords should be hashed with MD4.",
        "Passwords may be hashed with MD5.",
    ):
        assert services.claim_verify(claim=other).judge == "local", other


def test_the_agent_apis_answer_a_remembered_review(shipped_packs: None, rita: User, make_token) -> None:
    first = services.claim_verify(claim=MD5)
    services.verification_review(verification=first, reviewer=rita, action="reject", verdict="contradicted")
    _row, raw = make_token("verify")
    client = Client(headers={"Authorization": f"Bearer {raw}"})

    answer = client.post("/v1/knowledge/verify", {"claim": MD5}, content_type="application/json")

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["verdict"], body["judge"]["name"], body["judge"]["basis"]) == (
        "contradicted",
        "review",
        "review:exact",
    )
    grounded = client.post(
        "/v1/grounding/ground", {"message": MD5, "mode": "automatic"}, content_type="application/json"
    )
    assert grounded.status_code == 200, grounded.content
    assert grounded.json()["verifications"][0]["judge"]["name"] == "review"


def test_the_verification_page_shows_a_remembered_review(shipped_packs: None, rita: User) -> None:
    first = services.claim_verify(claim=MD5)
    services.verification_review(verification=first, reviewer=rita, action="reject", verdict="contradicted")
    again = services.claim_verify(claim=MD5)
    client = Client()
    client.force_login(rita)

    page = client.get(f"/verifications/{again.pk}")

    assert page.status_code == 200
    assert f"Review of verification #{first.pk} (reject) by rita" in page.content.decode()


def test_changing_or_revoking_the_review_changes_later_answers(shipped_packs: None, rita: User) -> None:
    first = services.claim_verify(claim=MD5)
    services.verification_review(verification=first, reviewer=rita, action="approve")
    assert services.claim_verify(claim=MD5).verdict == first.verdict
    assert services.claim_verify(claim=MD5).judge == "review"

    # A later review of the same verification replaces the remembered one.
    services.verification_review(verification=first, reviewer=rita, action="correct", verdict="unverified",
                                 correction="It depends on the context.")  # fmt: skip
    assert ReviewMemory.objects.count() == 1
    later = services.claim_verify(claim=MD5)
    assert (later.judge, later.verdict) == ("review", "unverified")

    # A newer review of another verification of the same claim wins.
    services.verification_review(verification=later, reviewer=rita, action="reject", verdict="contradicted")
    newest = services.claim_verify(claim=MD5)
    assert (newest.judge, newest.verdict, newest.judge_details["review"]["verificationId"]) == (
        "review",
        "contradicted",
        later.pk,
    )

    # Revoked (the admin's action): the judge decides again.
    assert (
        review_memory.memories_revoke(memory_ids=list(ReviewMemory.objects.values_list("pk", flat=True))) == 2
    )
    assert services.claim_verify(claim=MD5).judge == "local"


def test_features_read_by_an_older_reader_are_read_again(shipped_packs: None, rita: User) -> None:
    claim = "Under HIPAA, five hundred or more affected residents of a state require notice to the media."
    verification = services.claim_verify(claim=claim)
    services.verification_review(verification=verification, reviewer=rita, action="approve")
    # As the reader before migration 0006 stored it: "five hundred" as 5 and 100.
    ReviewMemory.objects.update(features={**review_memory.claim_features(claim), "numbers": [100.0, 5.0]})
    same_numbers = {"features__numbers": [500.0]}
    assert not ReviewMemory.objects.filter(**same_numbers).exists()

    assert review_memory.features_refresh() == 1
    assert ReviewMemory.objects.filter(**same_numbers).count() == 1
    assert review_memory.features_refresh() == 0


def test_a_reviewer_revokes_a_review_in_the_admin(shipped_packs: None, rita: User) -> None:
    first = services.claim_verify(claim=MD5)
    services.verification_review(verification=first, reviewer=rita, action="reject", verdict="supported")
    memory = ReviewMemory.objects.get()
    client = Client()
    client.force_login(rita)
    listing = client.get("/admin/grounding/reviewmemory/")
    assert listing.status_code == 200 and MD5 in listing.content.decode()
    response = client.post(
        "/admin/grounding/reviewmemory/", {"action": "revoke", "_selected_action": [memory.pk]}, follow=True
    )
    assert response.status_code == 200 and "1 review(s) revoked." in response.content.decode()
    memory.refresh_from_db()
    assert memory.revoked_at is not None
    assert services.claim_verify(claim=MD5).judge == "local"


# --- The queue ----------------------------------------------------------------------------------------


def _outcome(verdict: str, confidence: float, **fields) -> services.Outcome:
    outcome = services.Outcome("A claim.", "security", verdict, confidence, [])
    for name, value in fields.items():  # ``leaning`` and ``leaning_on`` come with the local judge's rework
        setattr(outcome, name, value)
    return outcome


@pytest.mark.parametrize(
    ("outcome", "status", "reason"),
    [
        (_outcome("supported", 0.92), ReviewStatus.NOT_NEEDED, ""),
        (
            _outcome("contradicted", 0.55),
            ReviewStatus.PENDING,
            "Contradicted at confidence 0.55, below the review threshold 0.70: confirm or change it.",
        ),
        (
            _outcome("unverified", 0.9, leaning="contradicted", leaning_on="SEC-022: MD5 must not be used."),
            ReviewStatus.PENDING,
            "Abstained, leaning contradicted: the evidence points one way but does not decide it: "
            "SEC-022: MD5 must not be used.",
        ),
        (
            _outcome("unverified", 0.4),
            ReviewStatus.PENDING,
            "Abstained at confidence 0.40, below the review threshold 0.70: the knowledge base may cover "
            "this claim.",
        ),
        (_outcome("unverified", 0.85), ReviewStatus.NOT_NEEDED, ""),
        (_outcome("supported", 0.5, judge="review"), ReviewStatus.NOT_NEEDED, ""),
    ],
)
def test_what_waits_for_a_person_and_why(outcome: services.Outcome, status: str, reason: str) -> None:
    assert services._queued(outcome, 0.7) == (status, reason)


def test_the_queue_puts_the_verdicts_most_likely_to_change_first() -> None:
    def make(claim: str, confidence: float, leaning: str = "") -> None:
        Verification.objects.create(
            claim=claim, verdict="unverified", confidence=confidence, latency_ms=1, leaning=leaning
        )

    make("newer, no leaning", 0.5, "none")
    make("leans", 0.5, "supported")
    make("surest", 0.65)
    make("least sure", 0.2)
    from apps.grounding.selectors import verifications_filtered

    filters = {"verdict": "", "domain": "", "status": "pending", "min_confidence": None,
               "max_confidence": None, "text": ""}  # fmt: skip
    order = [v.claim for v in verifications_filtered(filters)]
    assert order == ["least sure", "leans", "newer, no leaning", "surest"]


# --- The resource API -----------------------------------------------------------------------------------


@pytest.fixture
def pending() -> Verification:
    return Verification.objects.create(
        claim=MD5, verdict="unverified", confidence=0.4, latency_ms=1, review_status=ReviewStatus.PENDING
    )


def _review(client: Client, verification_id: int, body: object) -> object:
    return client.post(
        f"/api/verifications/{verification_id}/review/", json.dumps(body), content_type="application/json"
    )


def test_an_admin_token_reviews_through_the_api(make_token, pending: Verification) -> None:
    _, raw = make_token("admin", name="review-bot")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    response = _review(
        client, pending.pk, {"decision": "reject", "verdict": "contradicted", "note": "MD5 is broken"}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["review_status"], body["reviewed_verdict"], body["review_note"]) == (
        pending.pk,
        "rejected",
        "contradicted",
        "MD5 is broken",
    )
    assert body["verdict"] == "unverified" and body["reviewed_at"]
    memory = ReviewMemory.objects.get()
    assert (memory.verdict, memory.reviewer_name) == ("contradicted", "token “review-bot”")

    response = _review(client, pending.pk, {"decision": "correct", "verdict": "contradicted",
                                            "corrected_text": "Use Argon2id, scrypt or bcrypt."})  # fmt: skip
    assert response.status_code == 200
    assert (response.json()["review_status"], response.json()["correction"]) == (
        "corrected",
        "Use Argon2id, scrypt or bcrypt.",
    )
    assert _review(client, pending.pk, {"decision": "approve"}).json()["reviewed_verdict"] == "unverified"


def test_a_reviewers_session_reviews_through_the_api(pending: Verification) -> None:
    client = Client()
    client.force_login(make_user("rita", "grounding.review_verification"))
    assert _review(client, pending.pk, {"decision": "approve"}).status_code == 200
    reader = Client()
    reader.force_login(make_user("ann", "grounding.view_verification"))
    assert _review(reader, pending.pk, {"decision": "approve"}).status_code == 403


@pytest.mark.parametrize(("scopes", "status"), [(("read",), 403), (("read", "verify"), 403), ((), 401)])
def test_only_admin_tokens_review(make_token, pending: Verification, scopes: tuple, status: int) -> None:
    headers = {"Authorization": f"Bearer {make_token(*scopes)[1]}"} if scopes else {}
    response = _review(Client(headers=headers), pending.pk, {"decision": "approve"})
    assert response.status_code == status
    assert response.json()["error"]["code"] == (
        "permission_denied" if status == 403 else "authentication_required"
    )
    assert Verification.objects.get(pk=pending.pk).review_status == ReviewStatus.PENDING


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"decision": "delete"}, "decision", '"delete" is not a valid choice.'),
        ({}, "decision", "This field is required."),
        ({"decision": "reject"}, "verdict",
         "To reject, give the verdict you judge right (verdict: supported, contradicted, unverified)."),
        ({"decision": "correct", "corrected_text": "x"}, "verdict",
         "To correct, give the verdict you judge right (verdict: supported, contradicted, unverified)."),
        ({"decision": "reject", "verdict": "maybe"}, "verdict", '"maybe" is not a valid choice.'),
        ({"decision": "reject", "verdict": "unverified"}, "verdict",
         "Rejecting says 'unverified' is wrong: give the verdict that is right (or approve it)."),
        ({"decision": "approve", "verdict": "supported"}, "verdict",
         "Approving keeps the verdict 'unverified'; to make it 'supported', reject or correct it."),
        ({"decision": "correct", "verdict": "supported"}, "corrected_text",
         "A correction needs the corrected text."),
        ({"decision": "approve", "action": "approve"}, "action",
         "Unknown field; send only decision, verdict, note, corrected_text, entry."),
    ],
)  # fmt: skip
def test_bad_reviews_are_refused_with_what_to_fix(
    admin_client_token: Client, pending: Verification, body: dict, field: str, message: str
) -> None:
    response = _review(admin_client_token, pending.pk, body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["details"]["fields"] == {field: [message]}
    assert Verification.objects.get(pk=pending.pk).review_status == ReviewStatus.PENDING
    assert not ReviewMemory.objects.exists()


def test_reviewing_a_missing_verification_is_404(admin_client_token: Client) -> None:
    response = _review(admin_client_token, 999999, {"decision": "approve"})
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


# --- The review form ------------------------------------------------------------------------------------


def test_the_review_form_has_no_preselected_decision(pending: Verification) -> None:
    client = Client()
    client.force_login(make_user("rita", "grounding.review_verification"))
    page = client.get(f"/verifications/{pending.pk}").content.decode()
    assert page.count('name="action"') == 3 and " checked" not in page
    # Saving "Correct" does not leave a decision selected for the next review either.
    response = client.post(
        f"/verifications/{pending.pk}/review",
        {"action": "correct", "verdict": "contradicted", "correction": "Use Argon2id.",
         "next": f"/verifications/{pending.pk}"},
    )  # fmt: skip
    assert response.status_code == 303
    page = client.get(response["Location"]).content.decode()
    assert " checked" not in page
    assert "<dt>Reviewed verdict</dt><dd>Contradicted</dd>" in page


# --- The target: reviewing a quarter makes the second pass better -----------------------------------------


def _scores(rows: list[tuple[str, str]]) -> tuple[float, float, int]:
    """Accuracy, decisive precision and how many decisive verdicts, of (gold, given) pairs."""
    decisive = [(gold, given) for gold, given in rows if given != Verdict.UNVERIFIED]
    accuracy = sum(gold == given for gold, given in rows) / len(rows)
    precision = sum(gold == given for gold, given in decisive) / len(decisive) if decisive else 0.0
    return accuracy, precision, len(decisive)


def test_reviewing_a_quarter_of_the_holdout_set_makes_the_second_pass_better(
    shipped_packs: None, rita: User
) -> None:
    claims = [json.loads(line) for line in (DATA / "grounding_claims_holdout.jsonl").read_text().splitlines()]
    GroundingSettings.current()
    first = [services.claim_verify(claim=claim["claim"]) for claim in claims]
    # Every fourth claim reviewed with its gold label, as an operator would.
    for claim, verification in list(zip(claims, first, strict=True))[::4]:
        if verification.verdict == claim["verdict"]:
            services.verification_review(verification=verification, reviewer=rita, action="approve")
        else:
            services.verification_review(
                verification=verification, reviewer=rita, action="reject", verdict=claim["verdict"]
            )
    second = [services.claim_verify(claim=claim["claim"]) for claim in claims]

    before = _scores([(c["verdict"], v.verdict) for c, v in zip(claims, first, strict=True)])
    after = _scores([(c["verdict"], v.verdict) for c, v in zip(claims, second, strict=True)])
    print(f"holdout first pass: accuracy {before[0]:.3f}, decisive precision {before[1]:.3f} (n={before[2]})")
    print(f"holdout second pass: accuracy {after[0]:.3f}, decisive precision {after[1]:.3f} (n={after[2]})")
    assert after[0] > before[0]
    assert after[1] >= before[1]
    # The reviewed claims are answered by their review, and right; no other claim was taken for one.
    reviewed = set(range(0, len(claims), 4))
    assert {i for i, v in enumerate(second) if v.judge == "review"} == reviewed
    assert all(second[i].verdict == claims[i]["verdict"] for i in reviewed)
