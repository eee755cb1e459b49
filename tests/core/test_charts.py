"""The shared SVG chart geometry: round scales, stacked columns and bars, their words."""

from __future__ import annotations

from apps.core.charts import Bar, Series, bar_chart, column_chart, nice_top, svg_number

OK, FAILED = Series("ok", "OK", "s-ok"), Series("failed", "failed", "s-error")


def test_scales_end_on_round_whole_steps() -> None:
    assert [nice_top(value, 4) for value in (0, 1, 3, 5, 31, 564, 1200, 18000)] == [
        4.0, 4.0, 4.0, 8.0, 40.0, 800.0, 2000.0, 20000.0,
    ]  # fmt: skip
    assert (svg_number(12.5), svg_number(3.0), svg_number(0.004)) == ("12.5", "3", "0")


def test_columns_stack_their_series_and_say_the_totals() -> None:
    chart = column_chart(
        categories=["10:00", "11:00"], series=[OK, FAILED], values={"ok": [3.0, 0.0], "failed": [1.0, 0.0]},
        title="Calls",
    )  # fmt: skip
    # The plot is 168 px high for a scale of 0–4: 3 calls are 126 px, 1 call 42 px, stacked upwards.
    assert [(r.css, r.y, r.height, r.title) for r in chart.rects] == [
        ("s-ok", "54", "126", "10:00: 3 OK"),
        ("s-error", "12", "42", "10:00: 1 failed"),
    ]
    assert [tick.label for tick in chart.y_ticks] == ["0", "1", "2", "3", "4"]
    assert chart.label == "Calls: OK 3, failed 1."


def test_bars_share_one_scale_and_stop_at_its_end() -> None:
    chart = bar_chart(
        bars=[Bar("arxiv", {"ok": 0.5}, "600 / 1,200"), Bar("<wd>", {"ok": 1.5}, "over")],
        series=[OK], title="Budget", scale_max=1.0,
    )  # fmt: skip
    assert [(row.label, [r.width for r in row.rects]) for row in chart.rows] == [
        ("arxiv", ["142"]),
        ("<wd>", ["284"]),
    ]
    assert chart.label == "Budget: arxiv 600 / 1,200; <wd> over."
