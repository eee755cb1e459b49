"""Confidence that means something: how often a verdict reached on a given basis was right, on claims the
judge's rules were never developed on.

Every local verdict has a **basis**: the verdict and what it rests on, coarse enough that each is seen
many times — ``contradicted:exact`` (a number, identifier or complexity that differs),
``contradicted:prohibited`` (a prohibited or negated action the claim recommends or allows: modal,
stance), ``contradicted:swapped``, ``contradicted:wording`` (a negation or opposite term),
``supported:stated`` (one sentence states every part of the claim; similarity is never a basis),
``unverified:unrelated``, ``unverified:undecided``, ``unverified:covered`` (undecided, but the related
entries say most of what the claim asserts), ``unverified:unstated``, ``unverified:leaning``, and the
Wikidata ones. The calibration table counts, per basis, the true verdicts of the calibration claims judged
on it (``config/grounding/calibration.json``, written by ``manage.py grounding calibrate`` from the
calibration sets only).

The confidence of a verdict is then the share of its basis's claims that had that verdict, smoothed
towards a third each (add one to every count), so a basis seen twice cannot claim certainty; for an
abstention, how often a claim on its basis truly could not be decided. A decisive verdict whose basis
was not right at least 8 times in 10 (``DECISIVE_MIN_PROBABILITY``) is not given: the judge says
``unverified``, leaning to that verdict, and names the signal it found, because a wrong "supported" or
"contradicted" is worse than an honest "cannot tell". A basis the table has never seen gets the
prior of a third, which always sends the verdict to review.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from apps.grounding.models import Verdict

#: A supported/contradicted verdict is given only when its basis was right at least this often on the
#: calibration claims (smoothed). Issue #24 asks decisive verdicts to be right 9 times in 10 together: a
#: basis right only 7 times in 10 (the review threshold) would pull the mix below that, so a basis must
#: be right 8 times in 10 on its own. Below it, "unverified" leaning to the verdict, with the signal
#: named, is honest.
DECISIVE_MIN_PROBABILITY = 0.8
EXACT_SIGNALS = frozenset({"quantity", "identifier", "complexity", "superseded"})
#: A prohibited or negated action the claim recommends or allows ("may store" against "MUST NOT store",
#: "Hash passwords with MD5" against "MD5 … must not be used for passwords").
PROHIBITED_SIGNALS = frozenset({"modal", "stance"})
VERDICTS = tuple(Verdict.values)


@dataclass(frozen=True)
class Calibrated:
    verdict: str
    probability: float
    seen: int  # calibration claims judged on this basis
    right: int  # of which had this verdict
    demoted_from: str = ""  # the decisive verdict the basis did not earn
    demoted_right: int = 0  # how many calibration claims on this basis had that verdict

    def note(self, basis: str) -> str:
        """Why the confidence is what it is, in a sentence an operator can check."""
        if not self.seen:
            return f"No calibration claim was judged on this basis ({basis}), so the confidence is a prior."
        on_basis = f"of {self.seen} calibration claims judged on this basis ({basis})"
        if self.demoted_from:
            return (
                f"The evidence points to {self.demoted_from}, but only {self.demoted_right} {on_basis} were "
                f"{self.demoted_from}: too few to say so."
            )
        return f"{self.right} {on_basis} were {self.verdict}."


def basis_of(*, verdict: str, signal_type: str = "", source: str = "local") -> str:
    """The basis of a local or Wikidata verdict (see the module docstring)."""
    if source == "wikidata":
        return f"wikidata:{verdict}"
    if verdict == Verdict.CONTRADICTED:
        if signal_type in EXACT_SIGNALS:
            return "contradicted:exact"
        if signal_type in PROHIBITED_SIGNALS:
            return "contradicted:prohibited"
        return "contradicted:swapped" if signal_type == "swapped" else "contradicted:wording"
    if verdict == Verdict.SUPPORTED:
        # Similarity is never a basis: a supported verdict rests on a sentence that states every part.
        return "supported:stated"
    return f"unverified:{signal_type or 'unrelated'}"


@functools.cache
def _table() -> dict[str, Any]:
    path = Path(settings.GROUNDING_CALIBRATION)
    if not path.exists():
        return {"bases": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def table_reload() -> None:
    """Read the table again (after ``--calibrate`` wrote a new one, in the same process)."""
    _table.cache_clear()


def calibrated(*, basis: str, verdict: str) -> Calibrated:
    """The verdict to give and its confidence, for a verdict the judge reached on ``basis``."""
    counts = _table()["bases"].get(basis, {})
    seen = sum(int(counts.get(v, 0)) for v in VERDICTS)

    def probability(of: str) -> float:
        return (int(counts.get(of, 0)) + 1) / (seen + len(VERDICTS))

    if verdict != Verdict.UNVERIFIED and probability(verdict) < DECISIVE_MIN_PROBABILITY:
        unverified = Verdict.UNVERIFIED
        return Calibrated(
            unverified, probability(unverified), seen, int(counts.get(unverified, 0)),
            demoted_from=verdict, demoted_right=int(counts.get(verdict, 0)),
        )  # fmt: skip
    return Calibrated(verdict, probability(verdict), seen, int(counts.get(verdict, 0)))


def table_write(*, path: Path, counts: dict[str, dict[str, int]], fitted_on: str, claims: int) -> None:
    """Write a calibration table: per basis, how many calibration claims had each true verdict."""
    payload = {
        "_about": (
            "Per basis of the local judge, the true verdicts of the calibration claims judged on it. "
            "Written by `python -m bench grounding --calibrate`; read by apps/grounding/calibration.py."
        ),
        "fitted_on": fitted_on,
        "claims": claims,
        "bases": {basis: {v: counts[basis].get(v, 0) for v in VERDICTS} for basis in sorted(counts)},
    }
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    table_reload()


@dataclass(frozen=True)
class CalibrationFitted:
    path: Path
    claims: int
    bases: dict[str, dict[str, int]]

    def summary(self) -> str:
        lines = [f"calibration: {self.claims} claims → {self.path}"]
        for basis, counts in sorted(self.bases.items()):
            seen = sum(counts.values())
            shares = ", ".join(f"{v} {counts.get(v, 0)}" for v in VERDICTS)
            lines.append(f"  {basis}: {seen} claims ({shares})")
        return "\n".join(lines)


def calibration_fit(
    *, claims: Iterable[dict[str, Any]], basis_for: Callable[[str], str], path: Path, fitted_on: str
) -> CalibrationFitted:
    """Judge each labelled claim (``{"claim", "verdict"}``) with ``basis_for`` (the local judge, before
    calibration), count the true verdicts per basis, and write the table to ``path``."""
    counts: dict[str, dict[str, int]] = {}
    seen = 0
    for claim in claims:
        if claim.get("verdict") not in VERDICTS:
            raise ValueError(f"claim {seen + 1} has no verdict among {', '.join(VERDICTS)}")
        per_basis = counts.setdefault(basis_for(claim["claim"]), {})
        per_basis[claim["verdict"]] = per_basis.get(claim["verdict"], 0) + 1
        seen += 1
    table_write(path=path, counts=counts, fitted_on=fitted_on, claims=seen)
    return CalibrationFitted(path=path, claims=seen, bases=counts)
