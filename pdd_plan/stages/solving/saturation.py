"""Where a plan saturates at the offered rate, and each role's load there (#14 item 11).

`evaluate` leaves the percentiles and utilisations undefined at a saturated rate; a reader
still needs to know which role gives out first and by how much every role is over. The
first saturated queue comes from the model's own SaturatedError at the offered rate; each
role's load is its utilisation at a rate the plan carries, scaled by offered / that rate
(exact for prefill and the line, whose load is linear in the rate; close for decode slots,
whose per-request hold grows with the batch, so an underestimate there).
"""

from __future__ import annotations

from pdd_plan.errors import SaturatedError
from pdd_plan.model.evaluate import snapshot

HALVINGS_MAX = 40  # rate / 2**40: every plan that holds a request carries that


def saturation_of(setup, rate_per_s: float, goodput_rps: float) -> dict | None:
    """None when `setup` is not saturated at `rate_per_s`; else {"first": the model's
    message for the first saturated queue, "reference_rps": the rate the loads are scaled
    from, "role_load_frac": role -> load / capacity at `rate_per_s`}."""
    try:
        snapshot(setup, rate_per_s)
        return None
    except SaturatedError as exc:
        first = str(exc)
    reference = goodput_rps if 0 < goodput_rps < rate_per_s else rate_per_s / 2
    for _ in range(HALVINGS_MAX):
        try:
            util = snapshot(setup, reference).utilization_frac
            break
        except SaturatedError:
            reference /= 2
    else:
        return {"first": first, "reference_rps": None, "role_load_frac": {}}
    scale = rate_per_s / reference
    loads = {role: float(u) * scale for role, u in util.items()}
    return {"first": first, "reference_rps": reference, "role_load_frac": loads}


def saturation_of_files(scenario, plan, goodput_rps: float, catalog=None, resolution=None):
    """`saturation_of` for a scenario and plan file (as `pdd-plan evaluate` reads them)."""
    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.loaders.plan_file import load_plan
    from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
    from pdd_plan.model.evaluate import prepare
    from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION

    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    deployment = load_plan(plan, s, catalog)
    setup = prepare(s, deployment, catalog.model_for(s), catalog.gpus, catalog.lines,
                    resolution or DEFAULT_RESOLUTION)  # fmt: skip
    return saturation_of(setup, s.workload.arrival_rate_per_s, goodput_rps)
