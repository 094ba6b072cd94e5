"""`solve --confidence P`: the calibration's held-out error bought as a sizing margin
(issue #23 item 6).

A profile from `calibrate observed` stores, per metric (TTFT, TPOT), the ratios observed
/ predicted of the figures it predicted with their point left out of the fit
(`held_out_ratio`). The margin of a metric at confidence P is the P quantile of those
ratios (linear between them; at most the largest one), never below 1: with it, the
predicted percentile times the margin is at least what was observed in a share P of the
held-out figures. The plan is sized so that the predicted TTFT and TPOT times their
margins meet the SLA, which is the same as the SLA limits divided by the margins. A
metric the profile holds no held-out figure of gets no margin, and the answer says so.
The plan without the margin is solved too: the answer names the margin and what it
costs (cost with and without).
"""

from __future__ import annotations

import csv
import dataclasses
import io
from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import InputError
from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.scenario import Scenario

METRICS = ("ttft", "tpot")


@dataclass(frozen=True)
class Margin:
    level: float  # P, the confidence
    factor: dict[str, float]  # metric -> the predicted latency's multiplier (>= 1)
    figures: dict[str, int]  # metric -> held-out figures its quantile is taken over
    profile: str

    def text(self) -> str:
        parts = [
            f"{m.upper()} x{self.factor[m]:.3g} ({self.figures[m]} held-out figures)"
            if self.figures[m] else f"{m.upper()} none (no held-out {m.upper()} figure)"
            for m in METRICS
        ]  # fmt: skip
        return (f"confidence {self.level:g}: predicted latencies scaled by the held-out "
                f"error's {self.level:g} quantile of profile {self.profile}: "
                + ", ".join(parts))  # fmt: skip


def margin(profile: EngineProfile, level: float) -> Margin:
    """The margin at confidence `level`; InputError (one line) for a profile with no
    held-out error."""
    ratios = dict(profile.held_out_ratio)
    if not ratios:
        raise InputError.single(
            "command line", "--confidence", f"{level:g} with engine profile {profile.name}, "
            "which holds no held-out error (held_out_ratio)",
            "a profile from `calibrate observed` on two or more operating points",
            "without --confidence the plan is sized on the model's prediction alone",
        )  # fmt: skip
    factor, figures = {}, {}
    for m in METRICS:
        values = np.asarray(ratios.get(m, ()), float)
        figures[m] = len(values)
        factor[m] = max(1.0, float(np.quantile(values, level))) if len(values) else 1.0
    return Margin(level, factor, figures, profile.name)


def with_margin(s: Scenario, m: Margin) -> Scenario:
    """`s` with its SLA limits divided by the margins (predicted x margin <= limit)."""
    sla = dataclasses.replace(
        s.sla,
        ttft_s={p: v / m.factor["ttft"] for p, v in s.sla.ttft_s.items()},
        tpot_s={p: v / m.factor["tpot"] for p, v in s.sla.tpot_s.items()},
    )
    return dataclasses.replace(s, sla=sla)


def _cost(result: dict) -> float | None:
    metrics = result.get("metrics") or {}
    return metrics.get("cost_usd_per_hour") if result.get("plan") else None


def confidence_json(m: Margin, with_margin_result: dict, without: dict) -> dict:
    """The answer's `confidence` section: the margin and its price."""
    cost, base = _cost(with_margin_result), _cost(without)
    extra = None if cost is None or base is None else cost - base
    return {
        "level": m.level,
        "profile": m.profile,
        "latency_factor": dict(m.factor),
        "held_out_figures": dict(m.figures),
        "cost_usd_per_hour": cost,
        "cost_without_margin_usd_per_hour": base,
        "margin_cost_usd_per_hour": extra,
        "margin_cost_frac": None if extra is None or not base else extra / base,
        "text": summary_line(m, cost, base),
    }


def summary_line(m: Margin, cost: float | None, base: float | None) -> str:
    """One line: which margin was bought and what it costs."""
    if cost is None:
        without = "none without it either" if base is None else f"${base:,.2f}/h without it"
        price = f"no plan meets the SLA with it ({without})"
    elif base is None:
        price = f"${cost:,.2f}/h with it (no plan without it to compare)"
    elif base:
        price = (f"${cost:,.2f}/h with it against ${base:,.2f}/h without "
                 f"({cost - base:+,.2f} $/h, {100 * (cost - base) / base:+.1f} %)")  # fmt: skip
    else:
        price = f"${cost:,.2f}/h with it, ${base:,.2f}/h without"
    return f"{m.text()}; {price}"


def bom_with_margin(bom: str, line: str) -> str:
    """The BOM CSV with the margin as a header fact after its title row."""
    if not bom:
        return bom
    head, _, rest = bom.partition("\n")
    width = len(next(csv.reader([head])))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(
        ["# confidence margin", line, *[""] * (width - 2)]
    )
    return f"{head}\n{out.getvalue()}{rest}"


def report_section(line: str) -> str:
    """The report's paragraph on the margin (its sensitivity cases are solved without it)."""
    return (
        "\n## Confidence margin\n\n"
        f"{line}.\n\nThe recommended plan is sized with this margin; this report's "
        "sensitivity cases and explanation are solved on the model's prediction alone.\n"
    )
