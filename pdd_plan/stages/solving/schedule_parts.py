"""The parts of `schedule`'s answer (schedule_service.py): each period's row with its
predicted latency, the cost and its split, the peak-sizing baseline and the saving, the
capacity classes used, the committed bill of materials."""

from __future__ import annotations

import dataclasses

from pdd_plan.errors import InfeasibleError, SaturatedError
from pdd_plan.model.evaluate import meets_sla, prepare, snapshot
from pdd_plan.model.metrics import json_safe
from pdd_plan.model.setup import cost_items
from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.model.workload.load_curve import iso_utc
from pdd_plan.plan.schedule import period_scenario
from pdd_plan.report.bom import bom_csv

NAN3 = {"p50": float("nan"), "p90": float("nan"), "p99": float("nan")}


def periods_json(s, r, catalog, resolution) -> list[dict]:
    """One row a period: needs and split per role, cost, predicted latency, SLA."""
    model, seen, rows = catalog.model_for(s), {}, []
    for t, (period, d) in enumerate(zip(r.curve.periods, r.deployments, strict=True)):
        key = (period.workload_key(), d.instances)
        if key not in seen:
            seen[key] = _predicted(period_scenario(s, period), d, model, catalog, resolution)
        row = {"period": t, "start_h": period.start_s / 3600}
        if r.curve.origin_unix_s is not None:
            row["start"] = iso_utc(r.curve.origin_unix_s + period.start_s)
        row.update(duration_h=period.hours, arrival_rate_per_s=period.arrival_rate_per_s)
        row["roles"] = [_role_row(p, t) for p in r.roles]
        row["cost_usd_per_hour"] = period_usd_per_hour(r, t)
        rows.append({**row, **seen[key]})
    return rows


def _role_row(p, t: int) -> dict:
    sp = p.split
    return {"role": p.role, "datacenter": p.datacenter, "gpu": p.gpu,
            "gpus_per_instance": p.gpus_per_instance, "needed": p.needs[t],
            "reserved": sp.reserved, "on_demand": sp.on_demand[t], "spot": sp.spot[t]}  # fmt: skip


def period_usd_per_hour(r, t: int) -> float:
    """What the plan pays an hour in period t: the reserved base (always), the period's
    on-demand and spot instances, the committed lines and cache."""
    out = r.committed_usd_per_hour
    for p in r.roles:
        sp, pr = p.split, p.prices
        out += sp.reserved * pr.reserved_usd_per_hour + sp.on_demand[t] * pr.on_demand_usd_per_hour
        if sp.spot[t]:
            out += sp.spot[t] * pr.spot_usd_per_hour
    return out


def _predicted(s, deployment, model, catalog, resolution) -> dict:
    """The period's latency percentiles (its main hit-rate mix) and whether it meets the
    SLA under every mix it is planned for, at its needs (spot's losses covered)."""
    setups = [
        prepare(s, deployment, model, catalog.gpus, catalog.lines, resolution, h)
        for h in (s.workload.prefix_hit_rate, *s.workload.hit_rate_alternatives.values())
    ]
    rate = s.workload.arrival_rate_per_s
    try:
        snap = snapshot(setups[0], rate)
    except SaturatedError:
        return {"ttft_s": dict(NAN3), "tpot_s": dict(NAN3), "sla_met": False}
    return json_safe(
        {
            "ttft_s": dict(snap.ttft_s),
            "tpot_s": dict(snap.tpot_s),
            "utilization_frac": dict(snap.utilization_frac),
            "sla_met": all(meets_sla(x, rate) for x in setups),
        }
    )


def cost_json(r) -> dict:
    """The cycle's cost, a month's (730 h of cycles), and its split by class."""
    hours = [p.hours for p in r.curve.periods]
    horizon = sum(hours)
    split = {"reserved": 0.0, "on_demand": 0.0, "spot": 0.0,
             "committed_lines_and_cache": r.committed_usd_per_hour * horizon}  # fmt: skip
    for p in r.roles:
        sp, pr = p.split, p.prices
        split["reserved"] += horizon * sp.reserved * pr.reserved_usd_per_hour
        split["on_demand"] += sum(h * o * pr.on_demand_usd_per_hour
                                  for h, o in zip(hours, sp.on_demand, strict=True))  # fmt: skip
        if pr.spot is not None:
            split["spot"] += sum(h * k * pr.spot_usd_per_hour
                                 for h, k in zip(hours, sp.spot, strict=True))  # fmt: skip
    months = HOURS_PER_MONTH / horizon
    return {
        "cycle_hours": horizon,
        "per_cycle_usd": r.cost_usd,
        "mean_usd_per_hour": r.cost_usd / horizon,
        "per_month_usd": r.cost_usd * months,
        "split_per_month_usd": {k: v * months for k, v in split.items()},
    }


def baseline_json(s, r, catalog, resolution, time_limit_s) -> dict:
    """Sizing for the peak instead: the single-rate plan `solve` gives at min cost for the
    busiest period's workload, bought all reserved, and all on demand, for every hour of
    the cycle; and what the schedule saves against each."""
    from pdd_plan.stages.solving.solve_service import solve_choosing

    peak = max(r.curve.periods, key=lambda p: p.arrival_rate_per_s)
    s_peak = period_scenario(s, peak)
    try:
        solved, files = solve_choosing(s_peak, catalog, resolution, time_limit_s)
    except InfeasibleError as exc:
        return {"peak_rate_per_s": peak.arrival_rate_per_s, "plan": None, "reason": str(exc)}
    run = files.run if files is not None else None
    if solved.get("plan") is None or run is None or run.deployment is None:
        return {"peak_rate_per_s": peak.arrival_rate_per_s, "plan": None,
                "reason": f"no single-rate plan at the peak ({solved['status']})"}  # fmt: skip
    hourly = baseline_usd_per_hour(s_peak, run.deployment, catalog)
    months = HOURS_PER_MONTH / r.curve.horizon_hours
    mine = r.cost_usd * months
    out = {"peak_rate_per_s": peak.arrival_rate_per_s, "plan": solved["plan"],
           "status": solved["status"], "usd_per_hour": hourly, "per_month_usd": {},
           "savings_per_month_usd": {}, "savings_frac": {}}  # fmt: skip
    for kind, usd in hourly.items():
        month = usd * HOURS_PER_MONTH
        out["per_month_usd"][kind] = month
        out["savings_per_month_usd"][kind] = month - mine
        out["savings_frac"][kind] = (month - mine) / month if month else 0.0
    return out


def baseline_usd_per_hour(s, deployment, catalog) -> dict:
    """The peak plan's $/h bought on demand, and reserved (GPU rental at each offer's
    reserved fraction; power, lines and cache as they are)."""
    classes = s.costs.capacity_classes
    items = cost_items(s, deployment, catalog.gpus, catalog.lines)
    on_demand = sum(i.usd_per_hour for i in items)
    reserved = sum(
        i.usd_per_hour * (classes.offer(i.datacenter, i.item).reserved_price_frac
                          if i.kind in ("gpu_rental", "spare_gpus") else 1.0)
        for i in items
    )  # fmt: skip
    return {"all_reserved": reserved, "all_on_demand": on_demand}


def classes_json(s, r) -> dict:
    """The terms each role was bought on, with where they come from."""
    c = s.costs.capacity_classes
    out = {"reserved": {"price_frac": c.reserved_price_frac, "term_years": c.reserved_term_years,
                        "basis": c.reserved_basis}, "spot": None, "by_role": []}  # fmt: skip
    if c.spot is not None:
        out["spot"] = dataclasses.asdict(c.spot)
    for p in r.roles:
        offer = c.offer(p.datacenter, p.gpu)
        out["by_role"].append({
            "role": p.role, "datacenter": p.datacenter, "gpu": p.gpu,
            "on_demand_usd_per_instance_hour": p.prices.on_demand_usd_per_hour,
            "reserved_usd_per_instance_hour": p.prices.reserved_usd_per_hour,
            "spot_usd_per_instance_hour": p.prices.spot_usd_per_hour,
            "reserved_price_frac": offer.reserved_price_frac,
            "spot_down_frac": None if offer.spot is None else offer.spot.down_frac,
        })  # fmt: skip
    return out


def committed_bom(plan: dict, s, r, catalog) -> str:
    """The bill of materials of the committed base (reserved instances, lines, cache),
    priced at each offer's reserved price."""
    classes = s.costs.capacity_classes
    datacenters = tuple(
        dataclasses.replace(dc, gpus=tuple(
            dataclasses.replace(o, price_usd_per_gpu_hour=o.price_usd_per_gpu_hour
                                * classes.offer(dc.id, o.gpu).reserved_price_frac)
            for o in dc.gpus))
        for dc in s.datacenters
    )  # fmt: skip
    reserved = dataclasses.replace(s, name=f"{s.name} (committed base, reserved prices)",
                                   datacenters=datacenters)  # fmt: skip
    return bom_csv(plan, reserved, catalog)


NO_STRUCTURE = (
    "no structure (architecture, GPU types and shapes per role, lines) meets the SLA in "
    "every period of the curve"
)


def no_plan_reason(r, s, catalog, resolution, time_limit_s) -> str:
    """Why no schedule: where the busiest period alone has no plan either, its shortfall
    as `solve` names it (the limit and by how much)."""
    if r.status != "infeasible":
        return f"no plan found before the {r.stopped_by or 'time limit'}; nothing proven"
    from pdd_plan.stages.solving.infeasible import answer
    from pdd_plan.stages.solving.solve_service import solve_choosing

    peak = max(r.curve.periods, key=lambda p: p.arrival_rate_per_s)
    ps = period_scenario(s, peak)
    try:
        solved, files = solve_choosing(ps, catalog, resolution, time_limit_s)
    except InfeasibleError as exc:
        return f"{NO_STRUCTURE}: the busiest ({peak.arrival_rate_per_s:g} req/s) alone: {exc}"
    if solved["status"] != "infeasible":
        return f"{NO_STRUCTURE} (the busiest period alone has a plan; no one structure serves all)"
    why = answer(ps, None, solved, files.solved_each, catalog, resolution, time_limit_s)
    return f"{NO_STRUCTURE}: the busiest ({peak.arrival_rate_per_s:g} req/s) alone: {why['reason']}"
