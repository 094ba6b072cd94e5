"""`pdd-plan simulate SCENARIO --schedule`: the schedule `pdd-plan schedule` makes for the
scenario's load curve, replayed period boundary by period boundary (sim/replay.py), with
its instances ordered at each boundary arriving `lag` late."""

from __future__ import annotations

import dataclasses

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.evaluate import prepare
from pdd_plan.model.metrics import json_safe
from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.model.workload.load_curve import iso_utc
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.plan.schedule import period_scenario
from pdd_plan.sim.replay import Boundary, replay_boundary
from pdd_plan.stages.solving.schedule_service import curve_scenario, schedule_scenario

WARM_S = 120.0  # the previous period's rate and counts before the boundary


def replay_schedule(scenario, catalog: Catalog | None = None, lag_s: float = 600.0,
                    settle_s: float = 300.0, seed: int = 0, ahead: bool = False,
                    resolution=DEFAULT_RESOLUTION, time_limit_s: float = 60.0) -> dict:  # fmt: skip
    """The schedule's JSON with each period's replay (`replay`) and a summary. `ahead`:
    instances ordered a lag before their period (run from its start, paid from the
    order: `replay.order_ahead_usd_per_month`)."""
    catalog = catalog or Catalog()
    result, files = schedule_scenario(scenario, None, catalog, resolution, time_limit_s)
    if files is None:
        return result
    r = files.run
    if r.structure.architecture == "colocated":
        raise InputError.single(
            str(scenario), "", "a schedule of colocated instances",
            "a disaggregated schedule to replay (a colocated instance's prefill and decode "
            "share one clock, which the replay's windows do not split)",
        )  # fmt: skip
    s = curve_scenario(scenario, catalog)
    done: dict = {}
    periods = r.curve.periods
    rows = []
    for t, period in enumerate(periods):
        b = Boundary(_counts(r.deployments[t - 1]), _counts(r.deployments[t]),
                     periods[t - 1].planned_rate_per_s, period.planned_rate_per_s)  # fmt: skip
        key = (tuple(b.before.items()), tuple(b.after.items()), b.rate_before_per_s,
               b.rate_after_per_s, period.workload_key())  # fmt: skip
        if key not in done:
            ps = period_scenario(s, period)
            widest = _widest(r.deployments[t - 1], r.deployments[t])
            setup = prepare(ps, widest, catalog.model_for(ps), catalog.gpus, catalog.lines,
                            resolution)  # fmt: skip
            done[key] = replay_boundary(setup, b, lag_s, settle_s, WARM_S, seed, ahead)
        rows.append(_row(t, period, r.curve, b, done[key]))
    result["replay"] = {
        "lag_s": lag_s, "settle_s": settle_s, "warm_s": WARM_S, "seed": seed,
        "ordered_ahead": ahead,
        "order_ahead_usd_per_month": order_ahead_usd_per_month(r, lag_s) if ahead else 0.0,
        "scale_down": "at the end of in-flight work (dropped instances take nothing new)",
        "periods": rows,
        "sla_met_periods": sum(1 for x in rows if x["sla_met"]),
    }  # fmt: skip
    return json_safe(result)


def order_ahead_usd_per_month(r, lag_s: float) -> float:
    """What running each period's added instances a lag early costs, on demand, a month."""
    per_cycle = 0.0
    for role in r.roles:
        for t, n in enumerate(role.needs):
            added = max(0, n - role.needs[t - 1])
            per_cycle += added * lag_s / 3600 * role.prices.on_demand_usd_per_hour
    return per_cycle * HOURS_PER_MONTH / r.curve.horizon_hours


def _counts(deployment) -> dict[str, int]:
    return {g.role: g.count for g in deployment.instances}


def _widest(before, after):
    """The period's deployment with each role at the larger of the two counts."""
    most = {g.role: max(g.count, _counts(before)[g.role]) for g in after.instances}
    return dataclasses.replace(after, instances=tuple(
        dataclasses.replace(g, count=most[g.role]) for g in after.instances))  # fmt: skip


def _row(t: int, period, curve, b: Boundary, run) -> dict:
    row = {"period": t, "start_h": period.start_s / 3600}
    if curve.origin_unix_s is not None:
        row["start"] = iso_utc(curve.origin_unix_s + period.start_s)
    row.update(arrival_rate_per_s=period.arrival_rate_per_s, counts_before=b.before,
               counts_after=b.after, requests=run.requests, window_s=run.window_s,
               ttft_s=run.ttft_s, tpot_s=run.tpot_s, checks=run.checks,
               sla_met=run.sla_met)  # fmt: skip
    return row
