"""Infeasibility in words and as data: the elastic MILP's shortfalls (elastic.py) with
the scenario key that lifts each, and solve's attempts summarised by outcome."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdd_plan.plan.figures import up_fixed

RELAX = "; relax: "  # in a reason line, what follows: the relaxations shown to suffice


def tried_summary(attempts) -> str:
    """The attempts grouped by outcome, one clause each (not one per policy and cap)."""
    if not attempts:
        return "the MILP fits every limit; evaluate finds the SLA missed"
    groups: dict[str, list] = {}
    for a in attempts:
        groups.setdefault(a.outcome, []).append(a)
    parts = []
    for outcome, group in groups.items():
        thresholds = "/".join(f"{t:g}" for t in sorted({a.policy.rld_hit_threshold for a in group}))
        handoffs = "/".join(sorted({a.policy.handoff for a in group}))
        caps = [a.utilization_cap_frac for a in group]
        cap = f"cap {max(caps):.2f}"
        if min(caps) < max(caps):
            cap += f" down to {min(caps):.2f}"
        times = f"{len(group)} attempts" if len(group) > 1 else "1 attempt"
        parts.append(f"{outcome}: {times}, threshold {thresholds} {handoffs}, utilisation {cap}")
    return "; ".join(parts)


def shortfall_json(s) -> dict:
    """One elastic-MILP shortfall as `solve --format json` shows it: the limit, what is
    needed, what the scenario has, the unit, the change that lifts it, and (`set`) the
    MILP's figure for its key, which relax.py tries. Until shown to suffice, the figure is
    only the MILP's linear estimate: the relaxation says no more than that the limit must
    rise above what it is."""
    f = s.family
    out = {"limit": f.subject, "kind": f.family, "needs": s.needs, "has": s.limit,
           "unit": f.unit, "relaxation": relaxation(s)}  # fmt: skip
    setting = milp_setting(s)
    if setting is not None:
        out["set"] = dict([setting])
    return out


def milp_setting(s) -> tuple[str, float] | None:
    """The scenario key of a limit shortfall and the MILP's figure for it, rounded up."""
    f, needs = s.family, s.needs
    if f.family == "availability":
        dc, gpu = f.where
        return f"datacenters[{dc}].gpus[{gpu}].max_gpus", float(math.ceil(needs - 1e-9))
    if f.family == "power":
        return f"datacenters[{f.where[0]}].power_budget_kw", _number(up_fixed(needs, 1))
    if f.family == "budget":
        key = f"datacenters[{f.where[0]}]." if f.where else "objective."
        return f"{key}budget_usd_per_hour", _number(up_fixed(needs, 2))
    if f.subject == "WAN lines":
        return "wan.max_lines", float(math.ceil(needs - 1e-9))
    return None


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def relaxation(s) -> str:
    """The scenario key to change for one shortfall, before any check: above what the
    scenario has (proven: it has no plan), with the MILP's estimate of the figure."""
    f = s.family
    setting = milp_setting(s)
    if setting is not None:
        key, figure = setting
        return (f"{key} above {s.limit:,.10g} (the MILP's linear estimate: {figure:,.10g}; "
                "not shown to be enough)")  # fmt: skip
    if f.family == "line":
        return (f"line capacity above {s.limit:,.4g} {f.unit}: a larger tier in wan.tiers, or "
                "more wan.max_lines")  # fmt: skip
    return (
        f"{f.subject} above {s.limit:,.4g} {f.unit}: more GPUs or larger instance shapes "
        "where it may run"
    )


def limit_line(kind: str, limit: str, needs: float, has: float, unit: str,
               other: str = "has") -> str:  # fmt: skip
    """`limit`: what it needs against what it has, in its kind's words (one reason line;
    the elastic MILP's shortfalls too, with `other` "possible": its figure is what the
    linear capacities allow)."""
    if kind == "availability":
        return f"{limit}: needs {needs:,.0f} GPUs, {has:,.0f} available"
    if kind == "line" and unit == "lines":
        return f"{limit}: needs {needs:,.0f}, {has:,.0f} allowed (wan.max_lines)"
    if kind == "budget":
        return f"{limit}: needs ${needs:,.2f}/h, budget ${has:,.2f}/h"
    if kind == "power":
        return f"{limit}: needs {needs:,.1f} kW, budget {has:,.1f} kW"
    if kind == "cap":
        return f"{limit}: {needs:.3g}, cap {has:.3g}"
    suffix = f" {unit}" if unit else ""
    if kind == "sla":
        return f"{limit}: {needs:.3g}{suffix}, limit {has:.3g}{suffix}"
    if other == "has":
        return f"{limit}: needs {needs:,.4g}{suffix}, has {has:,.4g}{suffix}"
    return f"{limit}: needs {needs:,.4g}{suffix}, {has:,.4g}{suffix} {other}"


@dataclass(frozen=True)
class Miss:
    """One limit no plan meets, with its figures (plan/nearest.py, limits_used.py) and the
    scenario keys whose figures may lift it together (`settings`; relax.py tries them)."""

    limit: str
    needs: float
    has: float
    unit: str
    relaxation: str
    kind: str  # sla | cap | availability | power | budget | line | saturation | hbm | role
    settings: tuple[tuple[str, float], ...] = ()
    sufficient: bool = False  # the settings are shown to suffice (limits_used.py: the plan fits)

    def line(self) -> str:
        """The limit and by how much, as the one-line reason shows it."""
        return limit_line(self.kind, self.limit, self.needs, self.has, self.unit)

    def to_json(self) -> dict:
        out = {"limit": self.limit, "kind": self.kind, "needs": self.needs, "has": self.has,
               "unit": self.unit, "relaxation": self.relaxation}  # fmt: skip
        if self.settings:
            out["set"] = dict(self.settings)
        if self.sufficient:
            out["sufficient"] = True
        return out


def at_least(limit: str, needs: float, has: float, unit: str, kind: str, key: str,
             figure: str) -> Miss:  # fmt: skip
    """A floor: `key` must be at least `figure` (shown rounded up), which relax.py tries."""
    value = float(figure.replace(",", ""))
    return Miss(limit, needs, has, unit, f"{key} at least {figure}", kind, ((key, value),))


def enough(settings: dict, why: str) -> str:
    """A relaxation shown to suffice: the keys to set, their figures and how it was shown."""
    keys = ", ".join(f"{key} to {_figure(value)}" for key, value in settings.items())
    return f"set {keys} (enough: {why})"


def _figure(value: float) -> str:
    """The figure as set: already rounded to what it is shown at (figures.py), so printed
    whole (`.3g` would round 12,345.67 down)."""
    return f"{value:.10g}"


def line_of(shortfall: dict) -> str:
    """A shortfall's JSON (Miss.to_json, shortfall_json) as the reason line shows it."""
    return Miss(shortfall["limit"], shortfall["needs"], shortfall["has"], shortfall["unit"],
                shortfall["relaxation"], shortfall.get("kind", "")).line()  # fmt: skip
