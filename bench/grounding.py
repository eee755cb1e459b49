"""Grounding verification against the labelled claim sets (issue targets: accuracy ≥ 0.85, p95 < 50 ms
per claim on this machine).

Three sets in ``tests/data/`` (its README says how each was written): ``grounding_claims.jsonl``,
which the checker was developed on; ``grounding_claims_holdout.jsonl``, written blind to the checker
and studied afterwards; and ``grounding_claims_blind.jsonl``, written blind and only ever scored as a
whole — the honest figure. Each claim goes through ``claim_verify`` (routing, hybrid retrieval,
evidence sentences, contradiction signals, the stored verification) with its domain left for the
router to find, inside a transaction that is rolled back (the packs are loaded for good first, as
``make run`` loads them, if the database has none). Printed per set: accuracy (for the first set
also on its two halves), per-verdict precision and recall, the confusion matrix, routing accuracy;
then latency per claim on the first set (first pass, then warm).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction

from apps.grounding import services
from apps.grounding.models import GroundingSettings
from apps.knowledge import services as knowledge_services

CLAIMS = Path(settings.BASE_DIR) / "tests" / "data" / "grounding_claims.jsonl"
# Written later by someone who had not seen the checker's code or the first set; its misjudged claims
# were then studied, so it is a second development set, no longer a blind one.
HOLDOUT = Path(settings.BASE_DIR) / "tests" / "data" / "grounding_claims_holdout.jsonl"
# Written blind to the checker's code and to the other sets, and only ever scored as a whole: the honest
# figure. Never look at its misjudged claims to tune the checker.
BLIND = Path(settings.BASE_DIR) / "tests" / "data" / "grounding_claims_blind.jsonl"
VERDICTS = ("supported", "contradicted", "unverified")


class _Rollback(Exception):
    pass


def _load_packs() -> None:
    knowledge_services.knowledge_load_default_if_empty()
    services.grounding_agents_load_default()


def _accuracy(rows: list[tuple[dict, str]]) -> float:
    return sum(claim["verdict"] == got for claim, got in rows) / len(rows) if rows else 0.0


@dataclass
class Judged:
    results: list[tuple[dict, str]] = field(default_factory=list)  # (labelled claim, verdict given)
    confidences: list[float] = field(default_factory=list)
    routed: int = 0  # claims routed to their labelled domain
    timings: list[float] = field(default_factory=list)


def _judge_all(claims: list[dict]) -> Judged:
    judged = Judged()
    for claim in claims:
        started = time.perf_counter()
        verification = services.claim_verify(claim=claim["claim"])
        judged.timings.append(time.perf_counter() - started)
        judged.results.append((claim, verification.verdict))
        judged.confidences.append(verification.confidence)
        judged.routed += verification.domain is not None and verification.domain.name == claim["domain"]
    return judged


def _print_calibration(name: str, judged: Judged) -> None:
    """Whether the confidence means what it says: accuracy on each side of the review threshold (what
    operators are asked to review is below it), and the expected calibration error over tenths."""
    threshold = GroundingSettings.current().confidence_threshold
    right = [claim["verdict"] == got for claim, got in judged.results]
    sure = [ok for ok, confidence in zip(right, judged.confidences, strict=True) if confidence >= threshold]
    unsure = [ok for ok, confidence in zip(right, judged.confidences, strict=True) if confidence < threshold]
    tenths: dict[int, list[tuple[bool, float]]] = {}
    for ok, confidence in zip(right, judged.confidences, strict=True):
        tenths.setdefault(min(int(confidence * 10), 9), []).append((ok, confidence))
    error = sum(
        abs(sum(ok for ok, _ in rows) - sum(confidence for _, confidence in rows)) for rows in tenths.values()
    ) / len(right)
    print(
        f"{name}.calibration: accuracy {_share(sure):.3f} at confidence ≥ {threshold} (n={len(sure)}), "
        f"{_share(unsure):.3f} below it (n={len(unsure)}, sent to review); "
        f"expected calibration error {error:.3f}"
    )


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def _print_figures(name: str, judged: Judged) -> None:
    results, routed = judged.results, judged.routed
    print(f"{name}.claims: {len(results)}")
    print(f"{name}.accuracy: {_accuracy(results):.3f}")
    if name == "grounding":
        print(f"{name}.accuracy.even_lines(tuned on): {_accuracy(results[0::2]):.3f}")
        print(f"{name}.accuracy.odd_lines(held out): {_accuracy(results[1::2]):.3f}")
    print(f"{name}.routing_accuracy: {routed / len(results):.3f}")
    for verdict in VERDICTS:
        predicted = [c for c, got in results if got == verdict]
        actual = [c for c, _ in results if c["verdict"] == verdict]
        true = sum(c["verdict"] == verdict for c in predicted)
        precision = true / len(predicted) if predicted else 0.0
        recall = true / len(actual) if actual else 0.0
        print(f"{name}.{verdict}: precision {precision:.3f} recall {recall:.3f} (n={len(actual)})")
    matrix = Counter((c["verdict"], got) for c, got in results)
    print(f"{name}.confusion (expected → got): " + "; ".join(
        f"{e}→{g}: {matrix[(e, g)]}" for e in VERDICTS for g in VERDICTS
    ))  # fmt: skip
    for domain in sorted({c["domain"] for c, _ in results}):
        rows = [(c, got) for c, got in results if c["domain"] == domain]
        print(f"{name}.accuracy.{domain}: {_accuracy(rows):.3f} (n={len(rows)})")
    _print_calibration(name, judged)


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run(report) -> None:
    sets = {"grounding": _read(CLAIMS), "grounding.holdout": _read(HOLDOUT), "grounding.blind": _read(BLIND)}
    # The packs are loaded for good, as ``make run`` loads them: searched inside the transaction that
    # inserted them, the tables are full of dead row versions and every query is slower.
    _load_packs()
    try:
        with transaction.atomic():
            judged = {name: _judge_all(claims) for name, claims in sets.items()}
            warm = _judge_all(sets["grounding"]).timings
            raise _Rollback(judged, warm)
    except _Rollback as done:
        judged, warm = done.args
    for name, figures in judged.items():
        _print_figures(name, figures)
    every = [row for figures in judged.values() for row in figures.results]
    print(f"grounding.all_sets.accuracy: {_accuracy(every):.3f} (n={len(every)})")
    report("grounding.verify_per_claim_first_pass", judged["grounding"].timings)
    report("grounding.verify_per_claim_warm", warm)
