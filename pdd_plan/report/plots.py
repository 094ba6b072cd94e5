"""Plots of sweeps and of the sizing report, as SVG text and PNG bytes.

matplotlib (Agg backend) is imported inside the functions, so commands that draw nothing
start without it. Every function takes plain numbers (what a sweep row or a report case
already carries) and returns a Figure; `render` turns it into files.

- `bathtub`: BCR against the mean prefix-hit rate, the published valley (~70 %) marked.
- `pareto`: cost against TTFT P99 of plans, the Pareto front of those that meet the SLA
  (no such plan both cheaper and faster) drawn as a step line, the others as crosses.
- `composition`: GPUs by role and type (stacked bars) as a swept value moves.
- `tornado`: the optimum's objective when each price moves down and up.
- `metric_lines`: a metric against a swept value, one line per value of a second key.
"""

from __future__ import annotations

import io
import math
import re

# BCR lowest around a 70 % hit rate: the bathtub of the PDD technical report (Infinigence,
# WAIC 2026), as its authors described it in interview
PUBLISHED_VALLEY_HIT_RATE = 0.70
_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {"svg.fonttype": "none", "svg.hashsalt": "pdd-plan", "font.size": 9,
         "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
         "grid.alpha": 0.3}
    )  # fmt: skip
    return plt


def _figure(width_in: float = 6.4, height_in: float = 3.6):
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(width_in, height_in), layout="constrained")
    return fig, ax


def _finite(v) -> bool:
    return v is not None and isinstance(v, int | float) and math.isfinite(v)


def _legend(ax) -> None:
    """A legend when something is labelled, right of the axes (inside, "best" placement
    avoids the lines but not the point labels); a note when nothing was drawn."""
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    if not ax.has_data():
        ax.text(0.5, 0.5, "no point has a plan", ha="center", va="center",
                transform=ax.transAxes)  # fmt: skip


def _axis_texts(fig) -> list:
    """The texts a point label must not cover: tick labels, axis labels, titles."""
    out = []
    for ax in fig.axes:
        out += [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label,
                ax.title]  # fmt: skip
    return out


LABEL_STEP_PT = 8.0  # a 7-point label's height and a point of space: one step clears a row
LABEL_TRIES = 16


def _declutter(fig, labels: list) -> None:
    """Each point label (an annotation in offset points) that would overlap one placed
    before it moves a row down, up, two rows down, ... until it is clear. Labels are left
    out of the layout, so moving one cannot move the axes under the others."""
    if not labels:
        return
    for label in labels:
        label.set_in_layout(False)
    fig.canvas.draw()  # the layout, fixed before the boxes are measured
    renderer = fig.canvas.get_renderer()
    placed = [t.get_window_extent(renderer) for t in _axis_texts(fig) if t.get_text()]
    for label in labels:
        x0, y0 = label.xyann
        for k in range(LABEL_TRIES):
            box = label.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
            rows = k // 2 + 1
            label.xyann = (x0, y0 + LABEL_STEP_PT * rows * (-1 if k % 2 == 0 else 1))
        placed.append(label.get_window_extent(renderer))


def render(fig, dpi: int = 110, png: bool = True) -> tuple[str, bytes | None]:
    """(SVG text without the XML prolog, DOCTYPE or metadata, ready to inline; PNG bytes,
    or None where `png` is False: the HTML report inlines the SVG alone, and drawing the
    PNG is about half the time). The figure is closed."""
    svg_buf, png_buf = io.StringIO(), io.BytesIO()
    fig.savefig(svg_buf, format="svg", metadata={"Date": None, "Creator": None})
    if png:
        fig.savefig(png_buf, format="png", dpi=dpi, metadata={"Software": None})
    _pyplot().close(fig)
    svg = svg_buf.getvalue()
    svg = re.sub(r"<\?xml[^>]*\?>\s*", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>\s*", "", svg)
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    return svg, png_buf.getvalue() if png else None


def _bcr_lines(ax, series: dict) -> list:
    """The lines, and their "lowest" labels (to declutter)."""
    labels = []
    for n, (label, points) in enumerate(series.items()):
        color = _COLORS[n % len(_COLORS)]
        ok = sorted((x, y) for x, y in points if _finite(y))
        bad = sorted(x for x, y in points if not _finite(y))
        if ok:
            ax.plot(*zip(*ok, strict=True), marker="o", color=color, label=label)
            x_min, y_min = min(ok, key=lambda p: p[1])
            labels.append(ax.annotate(f"lowest: {x_min:.0%}", (x_min, y_min), xytext=(0, -14),
                                      textcoords="offset points", ha="center", fontsize=7,
                                      color=color))  # fmt: skip
        if bad:
            ax.plot(bad, [0.0] * len(bad), "x", color=color, clip_on=False,
                    label=f"{label}: no plan (infeasible or failed)")  # fmt: skip
    return labels


def _hit_marks(ax, scenario_mean: float | None, labels: bool) -> None:
    ax.axvline(PUBLISHED_VALLEY_HIT_RATE, ls="--", color="grey", lw=1,
               label="published valley ~70 %" if labels else None)  # fmt: skip
    if scenario_mean is not None:
        ax.axvline(scenario_mean, ls=":", color="black", lw=1,
                   label=f"scenario mean {scenario_mean:.2f}" if labels else None)  # fmt: skip


def bathtub(
    series: dict[str, list[tuple[float, float | None]]],
    scenario_mean: float | None,
    ratio: tuple[str, list[tuple[float, float]]] | None = None,
):
    """`series`: label -> [(mean hit rate, BCR or None where no plan meets the SLA)];
    `ratio`: (label, [(mean hit rate, BCR of one architecture / BCR of another)]), drawn
    in a second panel below (the benefit the published bathtub describes)."""
    if ratio is None:
        fig, ax = _figure()
    else:
        fig, (ax, ax2) = _pyplot().subplots(2, 1, figsize=(6.4, 5.6), sharex=True,
                                            height_ratios=(3, 2), layout="constrained")  # fmt: skip
    labels = _bcr_lines(ax, series)
    _hit_marks(ax, scenario_mean, True)
    ax.set_ylabel("BCR (goodput req/s per $/h)")
    ax.set_title("BCR against the mean hit rate")
    ax.set_ylim(bottom=0)
    _legend(ax)
    if ratio is None:
        ax.set_xlabel("mean prefix-hit rate")
        _declutter(fig, labels)
        return fig
    label, points = ratio
    ok = sorted((x, y) for x, y in points if _finite(y))
    if ok:
        ax2.plot(*zip(*ok, strict=True), marker="s", color=_COLORS[2], label=label)
        x_min, y_min = min(ok, key=lambda p: p[1])
        labels.append(ax2.annotate(f"lowest: {x_min:.0%}", (x_min, y_min), xytext=(0, -14),
                                   textcoords="offset points", ha="center",
                                   fontsize=7))  # fmt: skip
    ax2.axhline(1.0, color="black", lw=0.8)
    _hit_marks(ax2, scenario_mean, False)
    ax2.set_xlabel("mean prefix-hit rate")
    ax2.set_ylabel("BCR ratio")
    _legend(ax2)
    _declutter(fig, labels)
    return fig


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both (lower TTFT and lower cost), by TTFT."""
    front: list[tuple[float, float]] = []
    for x, y in sorted(points):
        if not front or y < front[-1][1]:
            front.append((x, y))
    return front


def sla_front(points: list[tuple[float, float, str, bool]]) -> list[tuple[float, float]]:
    """The Pareto front of the plans that meet the SLA (`points`: TTFT P99 s, cost $/h,
    label, SLA met): a plan that misses it is no trade-off to buy, so it neither joins
    the front nor hides a plan behind it. The plot and the table behind it both ask this."""
    return pareto_front([(x, y) for x, y, _, met in points if met and _finite(x) and _finite(y)])


def pareto(points: list[tuple[float, float, str, bool]], highlight: str | None = None):
    """`points`: (TTFT P99 s, cost $/h, label, SLA met) of each plan; `highlight` labels
    the chosen one. The front runs through the plans that meet the SLA (`sla_front`); the
    others are crosses of their own colour."""
    fig, ax = _figure()
    drawn = [p for p in points if _finite(p[0]) and _finite(p[1])]
    for met, marker, color, name in (
        (True, "o", _COLORS[0], "plans that meet the SLA"),
        (False, "x", _COLORS[7], "plans that miss the SLA"),
    ):
        xy = [(x, y) for x, y, _, m in drawn if bool(m) == met]
        if xy:
            ax.scatter(*zip(*xy, strict=True), s=18, marker=marker, color=color, alpha=0.7,
                       label=name)  # fmt: skip
    front = sla_front(drawn)
    if front:
        ax.step(*zip(*front, strict=True), where="post", color=_COLORS[3],
                label="Pareto front (SLA met)")  # fmt: skip
        ax.plot(*zip(*front, strict=True), "o", color=_COLORS[3], ms=5)
    labels = []
    for x, y, label, met in drawn:
        if label == highlight:
            ax.plot([x], [y], "*", ms=14, color=_COLORS[1], label=label)
        if not met:  # named, so the table behind the plot finds it
            labels.append(ax.annotate(f"{label} (misses the SLA)", (x, y), xytext=(5, 4),
                                      textcoords="offset points", fontsize=7,
                                      color=_COLORS[7]))  # fmt: skip
        elif label == highlight or (x, y) in front:
            labels.append(ax.annotate(label, (x, y), xytext=(5, 4), textcoords="offset points",
                                      fontsize=7))  # fmt: skip
    ax.set_xlabel("TTFT P99 (s)")
    ax.set_ylabel("cost ($/h)")
    ax.set_title("Cost against TTFT P99 of the plans")
    _legend(ax)
    _declutter(fig, labels)
    return fig


def composition(x_labels: list[str], stacks: dict[str, list[float]], x_title: str):
    """Stacked bars: GPUs of each (role, type) label at each swept value."""
    fig, ax = _figure()
    bottom = [0.0] * len(x_labels)
    for n, (label, counts) in enumerate(stacks.items()):
        ax.bar(x_labels, counts, bottom=bottom, label=label, color=_COLORS[n % len(_COLORS)])
        bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    for i, total in enumerate(bottom):
        if total == 0:
            ax.text(i, 0, "no plan", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xlabel(x_title)
    ax.set_ylabel("GPUs")
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Plan composition: GPUs by role and type")
    _legend(ax)
    if len(x_labels) > 8:
        ax.tick_params(axis="x", labelrotation=45)
    return fig


def tornado(cases: list[tuple[str, float | None, float | None]], metric: str, low: str, high: str):
    """`cases`: (price, relative change of `metric` at the low price, at the high price),
    None where no plan meets the SLA; the widest bar on top."""
    fig, ax = _figure(6.4, 0.5 + 0.45 * max(1, len(cases)))

    def width(case):
        return max((abs(v) for v in case[1:] if _finite(v)), default=math.inf)

    ordered = sorted(cases, key=width)
    ys = range(len(ordered))
    for values, color, name in ((1, _COLORS[0], low), (2, _COLORS[1], high)):
        widths = [c[values] * 100 if _finite(c[values]) else 0.0 for c in ordered]
        ax.barh(list(ys), widths, color=color, alpha=0.8, label=name)
    for y, c in zip(ys, ordered, strict=True):  # one note a row: two would print over each other
        missing = [name for name, v in ((low, c[1]), (high, c[2])) if not _finite(v)]
        if missing:
            ax.text(0, y, f"  {' and '.join(missing)}: no plan", va="center", fontsize=7)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(list(ys), [c[0] for c in ordered])
    ax.set_xlabel(f"change of {metric} (%)")
    ax.set_title(f"Sensitivity of the optimum's {metric} to each price")
    _legend(ax)
    return fig


def metric_lines(series: dict[str, list[tuple[float, float | None]]], x_title: str, y_title: str):
    """`series`: label -> [(swept value, metric or None)]; a line per label."""
    fig, ax = _figure()
    for n, (label, points) in enumerate(series.items()):
        ok = sorted((x, y) for x, y in points if _finite(x) and _finite(y))
        if ok:
            ax.plot(
                *zip(*ok, strict=True), marker="o", color=_COLORS[n % len(_COLORS)], label=label
            )
    ax.set_xlabel(x_title)
    ax.set_ylabel(y_title)
    ax.set_title(f"{y_title} against {x_title}")
    _legend(ax)
    return fig


def draw(name: str, args: tuple, png: bool = True) -> tuple[str, bytes | None]:
    """`render` of the figure `name` (bathtub, composition, tornado, pareto) drawn from
    `args`: plain data, so a pool's worker can draw it (the same bytes as here)."""
    make = {"bathtub": bathtub, "composition": composition, "tornado": tornado,
            "pareto": pareto}[name]  # fmt: skip
    return render(make(*args), png=png)
