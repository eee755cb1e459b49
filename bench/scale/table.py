"""One way to print a figure table for ``python -m bench scale``: markdown, ready for the docs."""

from __future__ import annotations

from collections.abc import Sequence


def ms(seconds: float) -> str:
    """A duration in milliseconds with three significant figures."""
    value = seconds * 1000
    return f"{value:.3g} ms" if value < 100 else f"{value:.0f} ms"


def ratio(numerator: float, denominator: float) -> str:
    return f"{numerator / denominator:.2f}×" if denominator else "—"


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]], note: str = "") -> None:
    """Print ``rows`` under ``header`` as a markdown table headed ``### title``; ``note`` follows."""
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    if note:
        lines += ["", note]
    print("\n".join(lines) + "\n", flush=True)
