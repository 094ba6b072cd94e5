"""Issue #14 item 14: no plot label prints over another. The labels' boxes are measured by
matplotlib itself, on figures built to crowd them (points a hair apart, equal minima, a
price case with no plan at either price)."""

from __future__ import annotations

import itertools

from pdd_plan.report import plots


def _boxes(fig) -> list[tuple[str, object]]:
    """(text, window box) of every text drawn in the axes (point labels, notes), with the
    legends' and the tick labels' boxes (named by what they are)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        out += [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts if t.get_text()]
        legend = ax.get_legend()
        if legend is not None:
            out.append(("<legend>", legend.get_window_extent(renderer)))
        out += [
            (f"<tick {t.get_text()}>", t.get_window_extent(renderer))
            for t in (*ax.get_xticklabels(), *ax.get_yticklabels())
            if t.get_text()
        ]
    return out


def _overlaps(fig) -> list[tuple[str, str]]:
    """Pairs that intersect, leaving out pairs of tick labels (matplotlib spaces those)."""
    bad = []
    for (a, box_a), (b, box_b) in itertools.combinations(_boxes(fig), 2):
        if a.startswith("<tick") and b.startswith("<tick"):
            continue
        if box_a.overlaps(box_b):
            bad.append((a, b))
    return bad


def test_pareto_labels_of_close_plans_do_not_overlap():
    # four plans within 5 % of TTFT and 2 % of cost, all on the front or highlighted
    points = [(1.0, 100.0, "this plan", True), (1.01, 99.5, "CDC-PD", True),
              (1.02, 99.0, "prefill -1", True), (1.03, 98.5, "main_decode -1", True),
              (2.0, 90.0, "line wave_10g +1", True), (0.9, 120.0, "IDC-PD", True)]  # fmt: skip
    fig = plots.pareto(points, "this plan")
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert {"this plan", "CDC-PD", "prefill -1", "main_decode -1"} <= set(labels)
    assert _overlaps(fig) == []


def test_bathtub_minima_at_the_same_point_do_not_overlap():
    same = [(0.3, 0.1), (0.5, 0.05), (0.7, 0.04), (0.9, 0.06)]
    fig = plots.bathtub({"PDD": same, "IDC-PD": [(x, y * 1.001) for x, y in same]}, 0.9,
                        ("BCR PDD / BCR IDC-PD", [(0.3, 1.0), (0.5, 0.9), (0.7, 1.1)]))  # fmt: skip
    assert sum(t.get_text().startswith("lowest") for ax in fig.axes for t in ax.texts) == 3
    assert _overlaps(fig) == []


def test_tornado_case_without_a_plan_at_either_price_has_one_note():
    fig = plots.tornado([("h100 in dc_a", None, None), ("line wave_10g", -0.05, 0.04)], "BCR",
                        "price x0.8", "price x1.2")  # fmt: skip
    notes = [t.get_text() for t in fig.axes[0].texts]
    assert notes == ["  price x0.8 and price x1.2: no plan"]
    assert _overlaps(fig) == []
