"""The HTML report inlines each figure's SVG alone, so `report` draws no PNG
(`plots.render(..., png=False)`): the SVG must be the one drawn beside a PNG. And it draws
its figures in its pool's workers: a worker's SVG must be the one drawn here."""

from __future__ import annotations

import pytest

from pdd_plan.report import plots

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)


def bathtub_args() -> tuple:
    series = {"PDD": [(0.3, 1.0), (0.7, 0.8), (0.9, None), (0.95, 1.4)],
              "IDC-PD": [(0.3, 0.9), (0.7, 1.0), (0.95, 1.1)]}  # fmt: skip
    return series, 0.9, ("BCR PDD / BCR IDC-PD", [(0.3, 1.11), (0.7, 0.8)])


def pareto_args() -> tuple:
    points = [(1.2, 30.0, "this plan", True), (0.9, 34.0, "P +1", True),
              (2.0, 29.0, "D -1", True), (2.5, 25.0, "D -2", False)]  # fmt: skip
    return points, "this plan"


def bathtub():
    return plots.bathtub(*bathtub_args())


def pareto():
    return plots.pareto(*pareto_args())


def test_the_svg_without_the_png_is_the_svg_beside_it():
    for make in (bathtub, pareto):
        svg, png = plots.render(make())
        svg_alone, none = plots.render(make(), png=False)
        assert none is None and png.startswith(b"\x89PNG")
        assert svg_alone == svg and svg.lstrip().startswith("<svg")


def test_a_figure_drawn_in_a_pool_worker_is_the_one_drawn_here():
    """The report draws its figures in a worker forked with matplotlib loaded
    (report_pool.drawer, html_figures._drawn)."""
    from pdd_plan.stages.reporting import report_pool

    args = (bathtub_args(), pareto_args())
    here = [plots.draw("bathtub", args[0], False), plots.draw("pareto", args[1], False)]
    pool = report_pool.drawer()
    try:
        there = list(pool.map(plots.draw, ["bathtub", "pareto"], args, [False, False]))
    finally:
        pool.shutdown()
    assert there == here and here[0][0] != here[1][0]


class Failing:
    """A pool whose every worker dies."""

    def submit(self, fn, *args):
        from concurrent.futures import Future

        future = Future()
        future.set_exception(RuntimeError("worker died"))
        return future


def test_a_figure_whose_worker_died_is_drawn_here():
    from pdd_plan.report.html_figures import _drawn

    specs = [("bathtub", bathtub_args()), ("pareto", pareto_args())]
    assert _drawn(specs, False, Failing()) == _drawn(specs, False, None)
