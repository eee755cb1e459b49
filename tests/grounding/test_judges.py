"""Who decides a verdict, and how sure it may say it is: the calibration table, the examples of issue #15
and the README on the shipped packs, and the model judges (replayed from a local server) with the local
judge as their fallback."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from apps.grounding import calibration, services
from apps.grounding.calibration import Calibrated, basis_of, calibrated, calibration_fit, table_reload
from apps.grounding.models import Verdict, Verification
from apps.knowledge import services as knowledge_services
from tests.grounding.test_verify import pack  # noqa: F401  (the small pack fixture)
from tests.replay_server import ReplayServer

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


# --- The calibration table -------------------------------------------------------------------------------


@pytest.fixture
def table(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "calibration.json"
    with override_settings(GROUNDING_CALIBRATION=path):
        table_reload()
        yield path
    table_reload()


def _write_table(path: Path, bases: dict[str, dict[str, int]]) -> None:
    path.write_text(json.dumps({"bases": bases}), encoding="utf-8")
    table_reload()


def test_the_confidence_is_the_smoothed_share_of_the_basis_that_was_right(table: Path) -> None:
    _write_table(table, {"contradicted:exact": {"supported": 0, "contradicted": 7, "unverified": 0}})
    result = calibrated(basis="contradicted:exact", verdict=Verdict.CONTRADICTED)
    assert result == Calibrated(Verdict.CONTRADICTED, 8 / 10, seen=7, right=7)
    assert result.note("contradicted:exact") == (
        "7 of 7 calibration claims judged on this basis (contradicted:exact) were contradicted."
    )


def test_a_decisive_verdict_its_basis_did_not_earn_becomes_unverified(table: Path) -> None:
    _write_table(table, {"supported:stated": {"supported": 2, "contradicted": 4, "unverified": 5}})
    result = calibrated(basis="supported:stated", verdict=Verdict.SUPPORTED)
    assert result.verdict == Verdict.UNVERIFIED and result.demoted_from == Verdict.SUPPORTED
    assert result.probability == pytest.approx(6 / 14)
    assert "points to supported, but only 2 of 11" in result.note("supported:stated")


def test_a_basis_never_seen_gets_the_prior_and_cannot_be_decisive(table: Path) -> None:
    _write_table(table, {})
    result = calibrated(basis="contradicted:wording", verdict=Verdict.CONTRADICTED)
    assert result.verdict == Verdict.UNVERIFIED and result.probability == pytest.approx(1 / 3)
    assert "prior" in result.note("contradicted:wording")


def test_fitting_counts_the_true_verdicts_per_basis_and_writes_the_table(table: Path) -> None:
    claims = [
        {"claim": "a", "verdict": "supported"},
        {"claim": "b", "verdict": "contradicted"},
        {"claim": "c", "verdict": "supported"},
    ]
    fitted = calibration_fit(
        claims=claims, basis_for=lambda claim: "supported:stated", path=table, fitted_on="three.jsonl"
    )
    written = json.loads(table.read_text(encoding="utf-8"))
    assert written["bases"] == {"supported:stated": {"supported": 2, "contradicted": 1, "unverified": 0}}
    assert written["fitted_on"] == "three.jsonl" and written["claims"] == 3
    assert "supported:stated: 3 claims" in fitted.summary()
    # Right 2 times in 3 is (2 + 1) / (3 + 3) after smoothing: below the 0.8 a decisive verdict needs.
    assert calibrated(basis="supported:stated", verdict="supported").verdict == Verdict.UNVERIFIED
    with pytest.raises(ValueError, match="claim 1 has no verdict"):
        calibration_fit(claims=[{"claim": "x"}], basis_for=str, path=table, fitted_on="bad")


def test_the_shipped_table_counts_only_bases_the_judge_gives() -> None:
    table_reload()
    shipped = json.loads(Path(calibration.settings.GROUNDING_CALIBRATION).read_text(encoding="utf-8"))
    # Fitted on the six calibration sets written after the rules together, and on nothing the rules were
    # written against.
    assert shipped["fitted_on"] == " + ".join(
        f"grounding_claims_calibration{n}.jsonl" for n in (3, 4, 5, 6, 7, 8)
    )
    assert shipped["claims"] == 720
    possible = {
        *(
            basis_of(verdict=Verdict.CONTRADICTED, signal_type=k)
            for k in ("quantity", "negation", "modal", "stance", "swapped")
        ),
        basis_of(verdict=Verdict.SUPPORTED),
        *(
            basis_of(verdict=Verdict.UNVERIFIED, signal_type=k)
            for k in ("unrelated", "undecided", "covered", "unstated", "leaning")
        ),
        *(basis_of(verdict=v, source="wikidata") for v in (Verdict.SUPPORTED, Verdict.CONTRADICTED)),
    }
    assert set(shipped["bases"]) <= possible
    assert sum(sum(counts.values()) for counts in shipped["bases"].values()) == shipped["claims"]


# --- The examples, on the shipped packs ----------------------------------------------------------


@pytest.fixture
def shipped_packs() -> None:
    knowledge_services.knowledge_load_default_if_empty()
    services.grounding_agents_load_default()
    table_reload()


def test_hash_passwords_with_md5_is_never_supported_it_leans_contradicted_on_sec_022(
    shipped_packs: None,
) -> None:
    """Issue #24's first "Why": it came back supported (basis supported:close) resting on SEC-022. The
    imperative recommends MD5, SEC-022 says MD5 must not be used for passwords: a prohibited action
    recommended. Of the 24 calibration claims judged on that basis 17 were contradicted (7 supported):
    smoothed, (17 + 1) / (24 + 3) = 0.67, short of the 0.7 a decisive verdict needs, so it is not decided
    but leans, and the abstention's confidence is (0 + 1) / (24 + 3)."""
    result = services.verification_result(
        verification=services.claim_verify(claim="Hash passwords with MD5.")
    )
    assert result["verdict"] == Verdict.UNVERIFIED
    assert result["leaning"] == Verdict.CONTRADICTED
    assert result["judge"]["basis"] == "contradicted:prohibited"
    assert result["confidence"] == 0.037
    assert result["sources"][0]["entry_id"] == "SEC-022"
    assert result["leaningOn"] == (
        "stance: the claim says “Hash … md5”, SEC-022 says “md5 … must not” (Fast general-purpose hashes "
        "such as MD5 or SHA-1, and unsalted hashes, must not be used for passwords.)"
    )


def test_use_bcrypt_scrypt_or_argon2_is_stated_by_sec_022_part_by_part(shipped_packs: None) -> None:
    """The second "Why": SEC-022 states every part (the names, storing passwords, the recommendation).
    The calibration sets' claims on that basis were supported 34 times in 50, short of the 0.7 a decisive
    verdict needs, so it is unverified leaning supported on SEC-022 — never contradicted."""
    result = services.verification_result(
        verification=services.claim_verify(claim="Use bcrypt, scrypt or Argon2 to store passwords.")
    )
    assert (result["verdict"], result["leaning"]) == (Verdict.UNVERIFIED, Verdict.SUPPORTED)
    assert result["judge"]["basis"] == "supported:stated"
    assert result["sources"][0]["entry_id"] == "SEC-022"
    assert result["leaningOn"].startswith(
        "SEC-022 states every part of the claim (its numbers and names, what it asserts, its polarity and "
        "modality): The OWASP Password Storage Cheat Sheet recommends storing passwords"
    )


def test_an_abstention_rests_on_the_closest_evidence_of_any_domain(shipped_packs: None) -> None:
    """The claim is routed to security (the keywords "header", "server"), where nothing is near it; the
    technology entry TECH-025 says it in other words. Both domains abstain, and the abstention read on
    the closer evidence is the answer: leaning supported on TECH-025, not "nothing is about this"."""
    result = services.verification_result(
        verification=services.claim_verify(
            claim="A 401 Unauthorized response must carry a WWW-Authenticate header, whereas a 403 signals "
            "that the server got the request fine but declines to fulfil it."
        )
    )
    assert (result["verdict"], result["leaning"]) == (Verdict.UNVERIFIED, Verdict.SUPPORTED)
    assert result["judge"]["basis"] == "unverified:leaning"
    assert result["sources"][0]["entry_id"] == "TECH-025"


def test_session_cookies_secure_and_httponly_is_not_stated_by_any_entry(shipped_packs: None) -> None:
    """The third "Why": no entry recommends marking session cookies Secure and HttpOnly (SEC-028 says what
    the attributes do, TECH-035 what Django's defaults are), so it is unverified and leans nowhere."""
    result = services.verification_result(
        verification=services.claim_verify(claim="Session cookies should be marked Secure and HttpOnly.")
    )
    assert (result["verdict"], result["leaning"]) == (Verdict.UNVERIFIED, "none")
    assert "leaningOn" not in result


@pytest.mark.parametrize(
    "claim",
    [
        "Passwords should be hashed with MD5",  # the README's example
        "MD5 is an acceptable algorithm for storing user passwords.",
        "It is fine to store passwords as MD5 hashes.",
    ],
)
def test_recommending_md5_for_passwords_leans_contradicted_never_supported(
    shipped_packs: None, claim: str
) -> None:
    verification = services.claim_verify(claim=claim)
    assert (verification.verdict, verification.leaning) == (Verdict.UNVERIFIED, Verdict.CONTRADICTED)
    assert verification.basis == "contradicted:prohibited"
    assert verification.signals[0]["type"] == "stance" and "md5" in verification.signals[0]["claim"]
    assert "must not" in verification.rests_on and verification.sources[0]["entry_id"] == "SEC-022"


def test_a_number_that_differs_is_decided_and_leans_on_nothing(shipped_packs: None) -> None:
    result = services.verification_result(
        verification=services.claim_verify(
            claim="Under GDPR Article 33 a personal data breach must be notified within 48 hours."
        )
    )
    assert (result["verdict"], result["leaning"]) == (Verdict.CONTRADICTED, "none")
    assert result["judge"]["basis"] == "contradicted:exact" and "leaningOn" not in result


def test_a_decisive_verdict_needs_its_basis_right_eight_times_in_ten(table: Path) -> None:
    # 7 of 7 is (7 + 1) / (7 + 3) = 0.8 after smoothing: decided. 6 of 6 is 0.778: not; nor is 36 of 48
    # (0.725), which the review threshold (0.7) would have let through and which would pull the decisive
    # verdicts below issue #24's 0.90 together.
    _write_table(table, {"contradicted:exact": {"supported": 0, "contradicted": 7, "unverified": 0}})
    assert (
        calibrated(basis="contradicted:exact", verdict=Verdict.CONTRADICTED).verdict == Verdict.CONTRADICTED
    )
    for counts in ({"contradicted": 6}, {"contradicted": 36, "supported": 12}):
        _write_table(table, {"contradicted:exact": {"supported": 0, "unverified": 0, **counts}})
        result = calibrated(basis="contradicted:exact", verdict=Verdict.CONTRADICTED)
        assert (result.verdict, result.demoted_from) == (Verdict.UNVERIFIED, Verdict.CONTRADICTED)


def test_an_unearned_verdict_leans_to_it_on_its_sentence_an_earned_one_leans_on_nothing(table: Path) -> None:
    _write_table(
        table,
        {
            "supported:stated": {"supported": 5, "contradicted": 3, "unverified": 0},
            "contradicted:exact": {"supported": 0, "contradicted": 9, "unverified": 0},
        },
    )
    demoted = services._calibrated(
        services.Outcome(
            "c", "security", Verdict.SUPPORTED, 0.0, [], basis="supported:stated", leaning_on="E-1: s"
        )
    )
    assert (demoted.verdict, demoted.leaning, demoted.leaning_on) == (
        Verdict.UNVERIFIED,
        Verdict.SUPPORTED,
        "E-1: s",
    )
    assert demoted.confidence == round(1 / 11, 4)  # the share of the basis's claims that were unverified
    decided = services._calibrated(
        services.Outcome(
            "c", "security", Verdict.CONTRADICTED, 0.0, [], basis="contradicted:exact", leaning_on="E"
        )
    )
    assert (decided.verdict, decided.leaning, decided.leaning_on) == (Verdict.CONTRADICTED, "none", "")


# --- Model judges, and the local judge as their fallback ------------------------------------------------

MD5_CLAIM = "Passwords should be hashed with MD5 for speed."


@pytest.fixture
def tei() -> Iterator[ReplayServer]:
    # The small pack gives the model one evidence sentence: one pair in, one answer back.
    server = ReplayServer(FIXTURES / "nli", default="predict_contradiction_one_pair.json").start()
    with override_settings(
        GROUNDING_JUDGE="nli", GROUNDING_NLI_URL=server.root_url, GROUNDING_NLI_API_KEY=""
    ):
        yield server
    server.stop()


@pytest.fixture
def chat() -> Iterator[ReplayServer]:
    server = ReplayServer(FIXTURES / "llm", default="grounding_contradicted.json").start()
    with override_settings(GROUNDING_JUDGE="llm", LLM_URL=server.root_url + "/v1", LLM_API_KEY=""):
        yield server
    server.stop()


def test_the_nli_judge_decides_and_the_verification_says_so(pack: None, tei: ReplayServer) -> None:  # noqa: F811
    verification = services.claim_verify(claim=MD5_CLAIM)
    assert verification.judge == "nli" and verification.verdict == Verdict.CONTRADICTED
    assert verification.confidence == pytest.approx(0.9634)
    assert verification.judge_latency_ms is not None and verification.judge_latency_ms > 0
    assert verification.judge_details["premises"], "the label scores are kept"
    # The premise the model rested on comes first, and is what the verdict rests on.
    assert verification.sources[0]["entry_id"] in verification.rests_on or verification.rests_on
    assert "not calibrated" in verification.confidence_note
    sent = tei.received[-1].body
    assert all(pair[1] == MD5_CLAIM for pair in sent["inputs"]), "premise first, then the claim"
    result = services.verification_result(verification=verification)
    assert result["judge"]["name"] == "nli" and result["judge"]["latencyMs"] == verification.judge_latency_ms


def test_the_llm_judge_decides_with_the_evidence_it_names(pack: None, chat: ReplayServer) -> None:  # noqa: F811
    verification = services.claim_verify(claim=MD5_CLAIM)
    assert verification.judge == "llm" and verification.verdict == Verdict.CONTRADICTED
    assert verification.confidence == pytest.approx(0.97)
    assert verification.correction, "a contradiction carries the entry that corrects it"
    assert MD5_CLAIM in json.dumps(chat.received[-1].body)


def test_a_failing_judge_falls_back_to_the_local_one_and_says_why(pack: None, tei: ReplayServer) -> None:  # noqa: F811
    tei.default = "error_500_backend.json"
    verification = services.claim_verify(claim=MD5_CLAIM)
    assert verification.judge == "local"
    assert verification.judge_note.startswith("The nli judge failed (unavailable")
    assert "the local judge decided" in verification.judge_note
    assert verification.verdict in Verdict.values and verification.basis


def test_a_slow_judge_is_abandoned_at_the_deadline(pack: None, tei: ReplayServer) -> None:  # noqa: F811
    tei.delay = 3.0
    started = time.monotonic()
    with override_settings(GROUNDING_JUDGE_DEADLINE_SECONDS=0.5):
        verification = services.claim_verify(claim=MD5_CLAIM)
    assert time.monotonic() - started < 2.5
    assert verification.judge == "local" and "(timeout" in verification.judge_note


def test_a_claim_with_nothing_related_is_not_put_to_the_model(pack: None, tei: ReplayServer) -> None:  # noqa: F811
    verification = services.claim_verify(
        claim="The ferry to the island leaves the harbour every day at noon."
    )
    assert verification.judge == "local" and verification.verdict == Verdict.UNVERIFIED
    assert "Nothing in the knowledge base is close enough" in verification.judge_note
    assert tei.received == []


def test_the_verification_page_shows_who_decided_and_why(pack: None, tei: ReplayServer) -> None:  # noqa: F811
    verification = services.claim_verify(claim=MD5_CLAIM)
    staff = get_user_model().objects.create_superuser("operator", "op@example.com", "pw-123456789")
    client = Client()
    client.force_login(staff)
    page = client.get(f"/verifications/{verification.pk}")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Who decided" in text and "nli" in text and "Why not more confident" in text
    assert Verification.objects.filter(judge="nli").count() == 1


def test_the_api_says_who_decided(pack: None) -> None:  # noqa: F811
    from apps.core.services import api_token_create

    _, raw = api_token_create(name="judge-reader", scopes=["verify"])
    response = Client(headers={"Authorization": f"Bearer {raw}"}).post(
        "/v1/knowledge/verify", {"claim": MD5_CLAIM}, content_type="application/json"
    )
    assert response.status_code == 200
    judge = response.json()["judge"]
    assert judge["name"] == "local" and judge["basis"] and judge["restsOn"] and judge["confidenceNote"]


def test_the_api_and_the_page_show_the_leaning_and_its_sentence(shipped_packs: None) -> None:
    from apps.core.services import api_token_create

    _, raw = api_token_create(name="leaning-reader", scopes=["verify"])
    response = Client(headers={"Authorization": f"Bearer {raw}"}).post(
        "/v1/knowledge/verify", {"claim": "Hash passwords with MD5."}, content_type="application/json"
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["verdict"], body["leaning"]) == ("unverified", "contradicted")
    assert body["leaningOn"].startswith("stance: the claim says “Hash … md5”, SEC-022 says")
    staff = get_user_model().objects.create_superuser("leaner", "l@example.com", "pw-123456789")
    client = Client()
    client.force_login(staff)
    page = client.get(f"/verifications/{body['verificationId']}").content.decode()
    assert '<dt>Leaning</dt><dd class="leaning">contradicted — not decided' in page
