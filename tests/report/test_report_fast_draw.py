"""The HTML report inlines each figure's SVG alone, so `report` draws no PNG
(`plots.render(..., png=False)`): the SVG must be the one drawn beside a PNG."""

from __future__ import annotations

from pdd_plan.report import plots


def bathtub():
    series = {"PDD": [(0.3, 1.0), (0.7, 0.8), (0.9, None), (0.95, 1.4)],
              "IDC-PD": [(0.3, 0.9), (0.7, 1.0), (0.95, 1.1)]}  # fmt: skip
    return plots.bathtub(series, 0.9, ("BCR PDD / BCR IDC-PD", [(0.3, 1.11), (0.7, 0.8)]))


def pareto():
    return plots.pareto([(1.2, 30.0, "this plan"), (0.9, 34.0, "P +1"), (2.0, 29.0, "D -1")],
                        "this plan")  # fmt: skip


def test_the_svg_without_the_png_is_the_svg_beside_it():
    for make in (bathtub, pareto):
        svg, png = plots.render(make())
        svg_alone, none = plots.render(make(), png=False)
        assert none is None and png.startswith(b"\x89PNG")
        assert svg_alone == svg and svg.lstrip().startswith("<svg")
