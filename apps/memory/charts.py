"""The memory pages' two small charts, drawn on the server as SVG geometry (no script, no library):

- a ranked memory's **relevance bar**: the four weighted components (weight × score) stacked left to
  right in ``COMPONENTS`` order, so the bar's length is the relevance (a relevance of 1 fills it);
- a memory's **decay outlook**: the temporal component over the next days, as the decay factor
  stands and as the lifecycle would decay it if no ask retrieved the memory.

Every number the templates put into an SVG attribute is formatted here, so the markup never depends
on the template's number localisation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from apps.core.charts import PlotFrame, Tick, plot_frame
from apps.core.charts import svg_number as _n
from apps.memory.selectors import COMPONENTS, OutlookPoint

BAR_WIDTH = 240.0
BAR_HEIGHT = 14.0


@dataclass(frozen=True)
class Segment:
    name: str
    x: str
    width: str
    score: float  # the component, 0 to 1
    weight: float
    contribution: float  # weight × score: its share of the relevance

    @property
    def title(self) -> str:
        return f"{self.name}: {self.score:.3f} × {self.weight:.2f} = {self.contribution:.3f}"


@dataclass(frozen=True)
class RelevanceBar:
    relevance: float
    segments: list[Segment]
    width: str = _n(BAR_WIDTH)
    height: str = _n(BAR_HEIGHT)

    @property
    def label(self) -> str:
        parts = ", ".join(segment.title for segment in self.segments)
        return f"Relevance {self.relevance:.3f} = {parts}"


def relevance_bar(*, components: Mapping[str, float], weights: Mapping[str, float]) -> RelevanceBar:
    """The stacked bar of one ranked memory (its relevance is the sum of the contributions)."""
    segments = []
    x = 0.0
    for name in COMPONENTS:
        contribution = weights[name] * components[name]
        width = max(contribution, 0.0) * BAR_WIDTH
        segments.append(Segment(name, _n(x), _n(width), components[name], weights[name], contribution))
        x += width
    return RelevanceBar(relevance=sum(segment.contribution for segment in segments), segments=segments)


# --- The decay outlook ---------------------------------------------------------------------------

CHART_WIDTH = 560.0
CHART_HEIGHT = 220.0
LEFT, RIGHT, TOP, BOTTOM = 52.0, 16.0, 12.0, 44.0
Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class DecayChart(PlotFrame):
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    x_title_x: str
    x_title_y: str
    y_title_x: str
    y_title_y: str
    temporal: str  # polyline points
    unretrieved: str
    expiry_x: str  # "" when the memory does not expire within the chart
    label: str


def decay_chart(
    *, points: Sequence[OutlookPoint], days: int, expires_in_days: float | None = None
) -> DecayChart:
    """The outlook's two curves on a 0–1 scale over ``days`` days (ticks every 5 days)."""
    plot_width = CHART_WIDTH - LEFT - RIGHT
    plot_height = CHART_HEIGHT - TOP - BOTTOM
    bottom = TOP + plot_height

    def x_at(day: float) -> float:
        return LEFT + plot_width * day / days

    def y_at(value: float) -> float:
        return bottom - plot_height * min(max(value, 0.0), 1.0)

    def line(values: Sequence[float]) -> str:
        return " ".join(f"{_n(x_at(p.days))},{_n(y_at(v))}" for p, v in zip(points, values, strict=True))

    step = 5 if days >= 10 else 1
    x_ticks = [Tick(_n(x_at(day)), str(day)) for day in range(0, days + 1, step)]
    y_ticks = [Tick(_n(y_at(value)), f"{value:g}") for value in Y_TICKS]
    expiry_x = ""
    if expires_in_days is not None and 0.0 <= expires_in_days <= days:
        expiry_x = _n(x_at(expires_in_days))
    first, last = points[0], points[-1]
    label = (
        f"Temporal component over the next {days} days: {first.temporal:.3f} now, "
        f"{last.temporal:.3f} in {days} days as the decay factor stands, "
        f"{last.unretrieved:.3g} if never retrieved."
    )
    return DecayChart(
        **plot_frame(size=(CHART_WIDTH, CHART_HEIGHT), margins=(LEFT, RIGHT, TOP, BOTTOM)),
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        x_title_x=_n(LEFT + plot_width / 2),
        x_title_y=_n(CHART_HEIGHT - 6),
        y_title_x=_n(14),
        y_title_y=_n(TOP + plot_height / 2),
        temporal=line([p.temporal for p in points]),
        unretrieved=line([p.unretrieved for p in points]),
        expiry_x=expiry_x,
        label=label,
    )
