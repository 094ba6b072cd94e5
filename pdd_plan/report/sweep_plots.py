"""Which plots a sweep gets, from its rows (`pdd_plan.stages.sweeping.sweep.run`).

- `bathtub` when the mean hit rate is swept: BCR against it, a line per combination of
  the other keys' values;
- `pareto`: cost against TTFT P99 of every point's plan, the front through those that
  meet the SLA;
- `composition`: GPUs by role and type along the first key (other keys at their first
  value);
- `cost` and `bcr`: those metrics along the first key when its values are numbers, a line
  per value of the second key (others at their first value).
"""

from __future__ import annotations

from pdd_plan.plan.scenario_edit import ARCH_KEY, HIT_MEAN_KEY
from pdd_plan.report import plots
from pdd_plan.report.sweep_files import gpu_groups, group_label

SOLVED = ("optimal", "feasible", "evaluated")


def _ok(row: dict) -> bool:
    return row["status"] in SOLVED and row["metrics"] is not None


def _label(values: dict, keys: list[str]) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={values[k]:g}" if isinstance(values[k], float)
                     else f"{k.rsplit('.', 1)[-1]}={values[k]}" for k in keys)  # fmt: skip


def _along(rows: list[dict], keys: list[str], x_key: str, series_key: str | None) -> dict:
    """label -> rows along `x_key`, one label per value of `series_key`; every other key
    at its first value."""
    firsts = {k: rows[0]["values"][k] for k in keys}
    fixed = [k for k in keys if k not in (x_key, series_key)]
    out: dict[str, list[dict]] = {}
    for r in rows:
        if any(r["values"][k] != firsts[k] for k in fixed):
            continue
        label = _label(r["values"], [series_key]) if series_key else ""
        out.setdefault(label, []).append(r)
    return out


def _numeric(rows: list[dict], key: str) -> bool:
    return all(isinstance(r["values"][key], int | float) and not isinstance(r["values"][key], bool)
               for r in rows)  # fmt: skip


def bathtub_figure(rows: list[dict], keys: list[str], scenario_mean: float | None = None):
    """BCR against the mean hit rate, a line per combination of the other keys; when the
    only other key is the architecture and it takes pdd and idc_pd, their BCR ratio too."""
    others = [k for k in keys if k != HIT_MEAN_KEY]
    series: dict[str, list] = {}
    bcr: dict[tuple, float | None] = {}
    for r in rows:
        label = _label(r["values"], others) or "BCR"
        y = r["metrics"]["bcr_rps_per_usd_hour"] if _ok(r) else None
        series.setdefault(label, []).append((r["values"][HIT_MEAN_KEY], y))
        bcr[(r["values"].get(ARCH_KEY), r["values"][HIT_MEAN_KEY])] = y
    ratio = None
    if others == [ARCH_KEY] and {"pdd", "idc_pd"} <= {a for a, _ in bcr}:
        means = sorted({m for _, m in bcr})
        ratio = ("BCR PDD / BCR IDC-PD", [(m, _ratio(bcr.get(("pdd", m)), bcr.get(("idc_pd", m))))
                                          for m in means])  # fmt: skip
    return plots.bathtub(series, scenario_mean, ratio)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def pareto_figure(rows: list[dict], keys: list[str]):
    """Cost against TTFT P99, the front through the points whose plan meets the SLA (an
    `evaluate` sweep's point may miss it)."""
    points = [(r["metrics"]["ttft_s"]["p99"], r["metrics"]["cost_usd_per_hour"],
               _label(r["values"], keys), bool(r["metrics"]["sla_met"]))
              for r in rows if _ok(r)]  # fmt: skip
    return plots.pareto(points)


def composition_figure(rows: list[dict], keys: list[str]):
    x_key = keys[0]
    along = next(iter(_along(rows, keys, x_key, None).values()), [])
    groups = sorted({g for r in along for g in gpu_groups(r["plan"])})
    stacks = {group_label(g): [gpu_groups(r["plan"])[g] for r in along] for g in groups}
    labels = [f"{r['values'][x_key]:g}" if isinstance(r["values"][x_key], float)
              else str(r["values"][x_key]) for r in along]  # fmt: skip
    return plots.composition(labels, stacks, x_key)


def metric_figure(rows: list[dict], keys: list[str], metric: str, title: str):
    series_key = keys[1] if len(keys) > 1 else None
    series = {
        label: [(r["values"][keys[0]], r["metrics"][metric] if _ok(r) else None) for r in along]
        for label, along in _along(rows, keys, keys[0], series_key).items()
    }
    return plots.metric_lines(series, keys[0], title)


def sweep_figures(rows: list[dict], keys: list[str], scenario_mean: float | None = None) -> dict:
    """name -> Figure for every plot this sweep supports."""
    figures = {}
    if HIT_MEAN_KEY in keys:
        figures["bathtub"] = bathtub_figure(rows, keys, scenario_mean)
    figures["pareto"] = pareto_figure(rows, keys)
    figures["composition"] = composition_figure(rows, keys)
    if _numeric(rows, keys[0]):
        figures["cost"] = metric_figure(rows, keys, "cost_usd_per_hour", "cost ($/h)")
        figures["bcr"] = metric_figure(rows, keys, "bcr_rps_per_usd_hour", "BCR (req/s per $/h)")
    return figures
