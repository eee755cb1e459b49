"""``manage.py grounding verify|export-log|calibrate`` — the seed's verification CLI, and the fit of the
confidence calibration (docs/grounding.md).

These were ``manage.py knowledge verify|export-log`` before verification moved to this app.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.commands import ActionCommand
from apps.grounding import services


def verify_arguments(actions: Any) -> None:
    """The ``verify`` action's arguments; ``manage.py knowledge verify`` (the seed's verb) declares the
    same ones and calls this command, so both spellings answer alike."""
    verify = actions.add_parser("verify", help="Verify one claim (stored in the verification log).")
    verify.add_argument("claim")
    verify.add_argument("--domain")
    verify.add_argument(
        "--json",
        dest="as_json",
        action="store_true",
        help="Print the verification result as one JSON object.",
    )


class Command(ActionCommand):
    help = "Verify a claim against the knowledge base, export the verification log"

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        verify_arguments(actions)
        export = actions.add_parser("export-log", help="Write the verification log as JSON lines.")
        export.add_argument("--output", "-o", help="File to write (default: standard output).")
        calibrate = actions.add_parser(
            "calibrate",
            help="Fit the confidence calibration table (GROUNDING_CALIBRATION) on labelled claims "
            "the judge's rules were not developed on.",
        )
        calibrate.add_argument(
            "claims", nargs="+", help="Files of JSON lines of {claim, verdict} (tests/data/README.md)."
        )

    def _verify(self, claim: str, domain: str | None = None, as_json: bool = False, **_) -> None:
        verification = services.claim_verify(claim=claim, domain=domain)
        result = services.verification_result(verification=verification)
        if as_json:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
            return
        self.stdout.write(
            f"verdict: {result['verdict']} (confidence {result['confidence']:.2f}, domain {result['domain']})"
        )
        for source in result["sources"]:
            relevance = f"relevance {source['relevance']:.2f}"
            self.stdout.write(f"  source {source['entry_id']} ({relevance}): {source['content_excerpt']}")
        if result.get("correction"):
            self.stdout.write(f"correction: {result['correction']}")

    def _export_log(self, output: str | None = None, **_) -> None:
        lines = services.verification_log_lines()
        if output:
            with Path(output).open("w", encoding="utf-8") as handle:
                count = sum(1 for line in lines if handle.write(line + "\n"))
            self.stdout.write(f"{count} verifications written to {output}")
        else:
            for line in lines:
                self.stdout.write(line)

    def _calibrate(self, claims: list[str], **_) -> None:
        paths = [Path(name) for name in claims]
        for path in paths:
            if not path.is_file():
                raise CommandError(f"{path} is not a file: give the labelled claims (JSON lines).")
        self.stdout.write(services.calibration_refit(claims_paths=paths).summary())
