"""Review memory (issue 24): a second pass over a claim set after an operator reviewed a quarter of it.

For each labelled set: every claim through ``claim_verify``; every fourth claim reviewed with its gold
label through ``verification_review`` (approved when the judge was right, else rejected with the
gold verdict); every claim again. Printed per set: accuracy and decisive precision of both passes, how
many second-pass answers came from judge ``review`` and how many of those were right; then p50/p95 of
the review-memory lookup alone (the cost every claim pays before a judge runs) with those reviews in
memory. Inside a transaction that is rolled back. The sets are only scored as a whole: nothing is
fitted to them.
"""

from __future__ import annotations

import time

from django.contrib.auth.models import User
from django.db import transaction

from apps.grounding import review_memory, services
from apps.grounding.models import GroundingSettings, ReviewMemory
from bench.grounding import BLIND, BLIND3, BLIND4, HOLDOUT, _load_packs, _read


class _Rollback(Exception):
    pass


def _scores(rows: list[tuple[str, str]]) -> str:
    decisive = [(gold, given) for gold, given in rows if given != "unverified"]
    accuracy = sum(gold == given for gold, given in rows) / len(rows)
    precision = sum(gold == given for gold, given in decisive) / len(decisive) if decisive else 0.0
    return f"accuracy {accuracy:.3f}, decisive precision {precision:.3f} (n={len(decisive)} of {len(rows)})"


def _two_passes(name: str, claims: list[dict], reviewer: User) -> list[float]:
    first = [services.claim_verify(claim=claim["claim"]) for claim in claims]
    for claim, verification in list(zip(claims, first, strict=True))[::4]:
        right = verification.verdict == claim["verdict"]
        services.verification_review(
            verification=verification, reviewer=reviewer, action="approve" if right else "reject",
            verdict="" if right else claim["verdict"],
        )  # fmt: skip
    timings = []
    for claim in claims:
        started = time.perf_counter()
        review_memory.recalled(claim=claim["claim"])
        timings.append(time.perf_counter() - started)
    second = [services.claim_verify(claim=claim["claim"]) for claim in claims]
    gold = [claim["verdict"] for claim in claims]
    by_review = [(g, v.verdict) for g, v in zip(gold, second, strict=True) if v.judge == "review"]
    print(f"{name}.first_pass: {_scores([(g, v.verdict) for g, v in zip(gold, first, strict=True)])}")
    print(f"{name}.second_pass: {_scores([(g, v.verdict) for g, v in zip(gold, second, strict=True)])}")
    print(
        f"{name}.answered_by_review: {len(by_review)} of {len(claims)} "
        f"({sum(g == v for g, v in by_review)} right; {len(range(0, len(claims), 4))} reviewed)"
    )
    return timings


def run(report) -> None:
    sets = {
        "grounding.holdout": HOLDOUT,
        "grounding.blind2": BLIND,
        "grounding.blind3": BLIND3,
        "grounding.blind4": BLIND4,
    }
    _load_packs()
    GroundingSettings.current()
    try:
        with transaction.atomic():
            reviewer = User.objects.create_user("bench-reviewer")
            timings: dict[str, list[float]] = {}
            for name, path in sets.items():
                timings[name] = _two_passes(f"{name}.review_memory", _read(path), reviewer)
                # Each set on its own: the next starts with no reviews in memory.
                ReviewMemory.objects.all().delete()
            raise _Rollback(timings)
    except _Rollback as done:
        (timings,) = done.args
    for name, samples in timings.items():
        report(f"{name}.review_memory_lookup", samples)
