"""Charts the pages draw on the server as SVG geometry (no script, no library, nothing fetched, so
they render offline and under the Content-Security-Policy).

Two shapes serve every chart that counts things: **columns** over ordered categories (hours, days),
stacked by series, and horizontal **bars**, one row per thing, stacked by series. A chart is a picture
of a table the page shows next to it; its ``label`` says in words what it draws, for ``aria-label``.

Every number the templates put into an SVG attribute is formatted here (``svg_number``), so the
markup never depends on the template's number localisation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


def svg_number(value: float, places: int = 2) -> str:
    """``value`` for an SVG attribute: a dot decimal with at most ``places`` places, no trailing zeros."""
    return f"{value:.{places}f}".rstrip("0").rstrip(".") or "0"


def nice_top(value: float, ticks: int) -> float:
    """The top of a scale from 0 that shows ``value`` with ``ticks`` round steps: each step 1, 2 or
    5 × 10ⁿ and at least 1, so the tick labels of counts are whole numbers."""
    step = max(value / ticks, 1.0)
    power = 10 ** math.floor(math.log10(step))
    for multiple in (1.0, 2.0, 5.0, 10.0):
        if step <= multiple * power:
            return multiple * power * ticks
    return 10.0 * power * ticks  # not reached: step ≤ 10 × power


def count_label(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


@dataclass(frozen=True)
class PlotFrame:
    """The fields of ``plot_frame``: every chart with axes has them."""

    width: str
    height: str
    left: str
    right: str
    top: str
    bottom: str


def plot_frame(*, size: tuple[float, float], margins: tuple[float, float, float, float]) -> dict[str, str]:
    """A chart's ``(width, height)`` and its plot's edges, from the ``(left, right, top, bottom)``
    margins, formatted for the SVG attributes: the ``PlotFrame`` every chart with axes has."""
    (width, height), (left, right, top, bottom) = size, margins
    return {
        "width": svg_number(width),
        "height": svg_number(height),
        "left": svg_number(left),
        "right": svg_number(width - right),
        "top": svg_number(top),
        "bottom": svg_number(height - bottom),
    }


@dataclass(frozen=True)
class Tick:
    at: str  # x (on the x axis) or y (on the y axis)
    label: str


@dataclass(frozen=True)
class Series:
    """One stacked part of every column or bar: its key in the values, its name, its CSS class."""

    key: str
    label: str
    css: str


@dataclass(frozen=True)
class Rect:
    x: str
    y: str
    width: str
    height: str
    css: str
    title: str


# --- Columns over ordered categories ----------------------------------------------------------

COLUMNS_WIDTH = 560.0
COLUMNS_HEIGHT = 220.0
LEFT, RIGHT, TOP, BOTTOM = 48.0, 12.0, 12.0, 40.0
Y_TICK_COUNT = 4


@dataclass(frozen=True)
class ColumnChart(PlotFrame):
    rects: list[Rect]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    series: list[Series]
    label: str


def column_chart(
    *,
    categories: Sequence[str],
    series: Sequence[Series],
    values: Mapping[str, Sequence[float]],
    title: str,
    label_every: int = 1,
    tick_label: Callable[[str], str] = str,
) -> ColumnChart:
    """Stacked columns: ``values[series.key][i]`` is that series' part of category ``i``; every
    ``label_every``-th category is labelled on the x axis (``tick_label`` shortens it)."""
    plot_width = COLUMNS_WIDTH - LEFT - RIGHT
    plot_height = COLUMNS_HEIGHT - TOP - BOTTOM
    bottom = TOP + plot_height
    totals = [sum(values[s.key][i] for s in series) for i in range(len(categories))]
    top_value = nice_top(max(totals, default=0), Y_TICK_COUNT)
    slot = plot_width / max(len(categories), 1)
    column = slot * 0.7
    rects: list[Rect] = []
    for i, category in enumerate(categories):
        y = bottom
        for s in series:
            value = values[s.key][i]
            if value <= 0:
                continue
            height = plot_height * value / top_value
            y -= height
            rects.append(
                Rect(
                    x=svg_number(LEFT + slot * i + (slot - column) / 2),
                    y=svg_number(y),
                    width=svg_number(column),
                    height=svg_number(height),
                    css=s.css,
                    title=f"{category}: {count_label(value)} {s.label}",
                )
            )
    y_ticks = [
        Tick(svg_number(bottom - plot_height * k / Y_TICK_COUNT), count_label(top_value * k / Y_TICK_COUNT))
        for k in range(Y_TICK_COUNT + 1)
    ]
    x_ticks = [
        Tick(svg_number(LEFT + slot * (i + 0.5)), tick_label(category))
        for i, category in enumerate(categories)
        if i % label_every == 0
    ]
    described = ", ".join(
        f"{s.label} {count_label(sum(values[s.key]))}" for s in series
    )  # the totals: the table has each category
    return ColumnChart(
        **plot_frame(size=(COLUMNS_WIDTH, COLUMNS_HEIGHT), margins=(LEFT, RIGHT, TOP, BOTTOM)),
        rects=rects,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        series=list(series),
        label=f"{title}: {described}." if series else f"{title}.",
    )


# --- Horizontal bars, one row per thing --------------------------------------------------------

BARS_WIDTH = 560.0
LABEL_WIDTH = 180.0
VALUE_WIDTH = 96.0
ROW_HEIGHT = 26.0
BAR_HEIGHT = 16.0
AXIS_HEIGHT = 22.0
LABEL_CHARS = 26


@dataclass(frozen=True)
class BarRow:
    label: str  # shortened to fit; ``full_label`` is the whole name
    full_label: str
    text_y: str
    track_y: str
    rects: list[Rect]
    value_label: str
    value_x: str


@dataclass(frozen=True)
class BarChart:
    width: str
    height: str
    plot_left: str
    plot_right: str
    track_width: str
    bar_height: str
    axis_y: str
    rows: list[BarRow]
    x_ticks: list[Tick]
    series: list[Series]
    label: str


@dataclass(frozen=True)
class Bar:
    """One row's input: its name, each series' value and the text at the bar's end."""

    label: str
    values: Mapping[str, float]
    value_label: str


def bar_chart(
    *,
    bars: Sequence[Bar],
    series: Sequence[Series],
    title: str,
    scale_max: float | None = None,
    tick_label: Callable[[float], str] = count_label,
) -> BarChart:
    """Horizontal stacked bars on one scale from 0 to ``scale_max`` (default: a round number at or
    above the longest bar); a bar longer than the scale stops at the scale's end."""
    plot_left = LABEL_WIDTH
    plot_width = BARS_WIDTH - LABEL_WIDTH - VALUE_WIDTH
    longest = max((sum(bar.values.get(s.key, 0.0) for s in series) for bar in bars), default=0.0)
    top_value = scale_max if scale_max and scale_max > 0 else nice_top(longest, Y_TICK_COUNT)
    rows: list[BarRow] = []
    for index, bar in enumerate(bars):
        track_y = index * ROW_HEIGHT + (ROW_HEIGHT - BAR_HEIGHT) / 2
        x = plot_left
        rects = []
        for s in series:
            value = bar.values.get(s.key, 0.0)
            if value <= 0:
                continue
            width = min(plot_width * value / top_value, plot_left + plot_width - x)
            rects.append(
                Rect(
                    x=svg_number(x),
                    y=svg_number(track_y),
                    width=svg_number(width),
                    height=svg_number(BAR_HEIGHT),
                    css=s.css,
                    title=f"{bar.label}: {count_label(value)} {s.label}",
                )
            )
            x += width
        short = bar.label if len(bar.label) <= LABEL_CHARS else bar.label[: LABEL_CHARS - 1] + "…"
        rows.append(
            BarRow(
                label=short,
                full_label=bar.label,
                text_y=svg_number(track_y + BAR_HEIGHT - 3),
                track_y=svg_number(track_y),
                rects=rects,
                value_label=bar.value_label,
                value_x=svg_number(plot_left + plot_width + 6),
            )
        )
    axis_y = len(bars) * ROW_HEIGHT
    x_ticks = [
        Tick(svg_number(plot_left + plot_width * k / Y_TICK_COUNT), tick_label(top_value * k / Y_TICK_COUNT))
        for k in range(Y_TICK_COUNT + 1)
    ]
    described = "; ".join(f"{bar.label} {bar.value_label}" for bar in bars) or "nothing to show"
    return BarChart(
        width=svg_number(BARS_WIDTH),
        height=svg_number(axis_y + AXIS_HEIGHT),
        plot_left=svg_number(plot_left),
        plot_right=svg_number(plot_left + plot_width),
        track_width=svg_number(plot_width),
        bar_height=svg_number(BAR_HEIGHT),
        axis_y=svg_number(axis_y),
        rows=rows,
        x_ticks=x_ticks,
        series=list(series),
        label=f"{title}: {described}.",
    )
